#!/usr/bin/env python3
"""Misbehaving matchers for ssgallery's error tests: ``hostile.py MODE [contract args]``.

MODE: hang (sleeps forever with a sleeping child; writes its process group id to
$HOSTILE_PIDFILE), crash (exit 3 with a message), garbage, wrong_shape, nan,
no_output (exit 0 writing nothing), bad_describe. ``--describe`` answers correctly
except in bad_describe mode.
"""
import json
import os
import subprocess
import sys
import time


def count(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if "--describe" in args:
        if mode == "bad_describe":
            print("I am a matcher")
        else:
            print(json.dumps({"kind": "similarity", "symmetric": False, "range": [0, 1]}))
        return 0
    opts = dict(zip(args[::2], args[1::2]))
    n, m = count(opts["--probe-list"]), count(opts["--gallery-list"])
    rows = [["0.5"] * m for _ in range(n)]
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(os.environ["HOSTILE_PIDFILE"], "w") as f:
            f.write(f"{os.getpgid(0)} {os.getpid()} {child.pid}\n")
        time.sleep(3600)
    elif mode == "crash":
        print("starting up", file=sys.stderr)
        print("hostile: segmentation fault in the graph matcher", file=sys.stderr)
        return 3
    elif mode == "garbage":
        rows = [["hello", "world"]] * n
    elif mode == "wrong_shape":
        rows = [r + ["0.5"] for r in rows][:-1] or [["0.5"]]
    elif mode == "nan":
        rows[0][0] = "nan"
    elif mode == "no_output":
        return 0
    with open(opts["--out"], "w") as f:
        f.write("".join(" ".join(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
