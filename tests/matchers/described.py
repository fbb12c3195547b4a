#!/usr/bin/env python3
"""A matcher whose answers the test chooses: ``described.py [contract args]`` prints
``{"kind": "distance", "symmetric": true, "range": [0, 255]}`` updated with the JSON
object in $DESCRIBED_JSON for ``--describe``, and scores the mean absolute pixel
difference (a distance in [0, 255]). With ``--serve`` (offered when $DESCRIBED_JSON says
``"serve": true``) it writes each request's matrix and replies with the JSON line in
$DESCRIBED_REPLY (default ``{"ok": true}``)."""
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def load(path):  # prototypes arrive as float .npy, images as .pgm/.png
    return np.load(path) if path.endswith(".npy") else np.asarray(Image.open(path), float)


def read(f):
    return [load(s) for s in Path(f).read_text("utf-8").splitlines() if s.strip()]


def score(probe_list, gallery_list, out):
    P, G = read(probe_list), read(gallery_list)
    np.savetxt(out, [[np.abs(p - g).mean() for g in G] for p in P])


def main():
    args = sys.argv[1:]
    if "--describe" in args:
        print(json.dumps({"kind": "distance", "symmetric": True, "range": [0, 255]}
                         | json.loads(os.environ.get("DESCRIBED_JSON", "{}"))))
        return 0
    if "--serve" in args:
        for line in sys.stdin:
            score(**json.loads(line))
            print(os.environ.get("DESCRIBED_REPLY", '{"ok": true}'), flush=True)
        return 0
    opts = dict(zip(args[::2], args[1::2]))
    score(opts["--probe-list"], opts["--gallery-list"], opts["--out"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
