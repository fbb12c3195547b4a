#!/usr/bin/env python3
"""Contract-transparent wrapper: ``log_calls.py PROGRAM [ARGS]`` appends one line per
run to $MATCHER_LOG ("describe", "quality |A|", or "|A| |B|" list sizes), then becomes
PROGRAM. It
offers the one-shot contract only (it removes "serve" from the description), so that
every scoring call is one logged run."""
import itertools
import json
import os
import subprocess
import sys


def count(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


args = sys.argv[1:]
opts = dict(itertools.pairwise(args))
with open(os.environ["MATCHER_LOG"], "a", encoding="utf-8") as log:
    if "--describe" in args:
        log.write("describe\n")
        desc = json.loads(subprocess.run(args, capture_output=True, check=True).stdout)
        desc.pop("serve", None)
        sys.exit(print(json.dumps(desc)))
    elif "--quality-list" in opts:
        log.write(f"quality {count(opts['--quality-list'])}\n")
    else:
        log.write(f"{count(opts['--probe-list'])} {count(opts['--gallery-list'])}\n")
os.execvp(args[0], args)
