#!/usr/bin/env python3
"""A matcher whose answers can be made to leave its declared range, for issue 20's
families 6 and 7: ``ranged.py KIND [contract args]``.

KIND similarity: s = 255 - mean absolute pixel difference, declared range [0, 255];
KIND distance: d = mean absolute pixel difference, declared range [0, 255]. Both offer
``--serve``. ``--describe`` is the same whatever $RANGED_MODE says, so a gallery made
in the normal mode is the program's gallery in every mode:

- (unset) normal answers;
- ``below`` / ``above``: every answer -50 / 300 (outside [0, 255]);
- ``negative``: every answer -1e4 (a negative distance: exp(-d / scale) overflows);
- ``spew_stdout``: (serve) 200 MB on stdout without a newline instead of a reply;
- ``spew_stderr``: (serve) 200 MB on stderr, then a normal reply.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

KIND = sys.argv[1]
MODE = os.environ.get("RANGED_MODE", "")


def load(path):
    return np.load(path) if path.endswith(".npy") else np.asarray(Image.open(path), float)


def matrix(probe_list, gallery_list):
    P = [load(s) for s in Path(probe_list).read_text("utf-8").splitlines() if s.strip()]
    G = [load(s) for s in Path(gallery_list).read_text("utf-8").splitlines() if s.strip()]
    D = np.array([[np.abs(p - g).mean() for g in G] for p in P])
    if MODE in ("below", "above", "negative"):
        return np.full(D.shape, {"below": -50.0, "above": 300.0, "negative": -1e4}[MODE])
    return 255 - D if KIND == "similarity" else D


def answer(probe_list, gallery_list, out):
    np.savetxt(out, matrix(probe_list, gallery_list))


def spew(stream, total=200 << 20):
    block = b"x" * (1 << 20)
    for _ in range(total >> 20):
        stream.write(block)
    stream.flush()


def main():
    args = sys.argv[2:]
    if "--describe" in args:
        print(json.dumps({"kind": KIND, "symmetric": True, "range": [0, 255],
                          "serve": True}))
        return 0
    if "--serve" not in args:
        opts = dict(zip(args[::2], args[1::2]))
        answer(opts["--probe-list"], opts["--gallery-list"], opts["--out"])
        return 0
    for line in sys.stdin:
        request = json.loads(line)
        if MODE == "spew_stdout":
            spew(sys.stdout.buffer)
            continue
        if MODE == "spew_stderr":
            spew(sys.stderr.buffer)
        answer(request["probe_list"], request["gallery_list"], request["out"])
        print(json.dumps({"ok": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
