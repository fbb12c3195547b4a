#!/usr/bin/env python3
"""example_mad.py (mean absolute pixel difference, a distance) with the persistent mode of
the contract: ``--serve`` answers JSON-line requests on stdin until end of input.

MAD_SERVE_LOG (optional): a file that gets one line per process start ("start") and per
request ("request"), so tests can count both."""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def load(path):  # prototypes arrive as float .npy, images as .pgm/.png
    return np.load(path) if path.endswith(".npy") else np.asarray(Image.open(path), float)


def log(event):
    if os.environ.get("MAD_SERVE_LOG"):
        with open(os.environ["MAD_SERVE_LOG"], "a") as handle:
            handle.write(event + "\n")


def score(probe_list, gallery_list, out):
    P, G = ([load(s) for s in Path(f).read_text("utf-8").splitlines() if s.strip()]
            for f in (probe_list, gallery_list))
    np.savetxt(out or sys.stdout, [[np.abs(p - g).mean() for g in G] for p in P])


ap = argparse.ArgumentParser()
for opt in ("--probe-list", "--gallery-list", "--out"):
    ap.add_argument(opt)
ap.add_argument("--describe", action="store_true")
ap.add_argument("--serve", action="store_true")
a = ap.parse_args()
if a.describe:
    sys.exit(print(json.dumps({"kind": "distance", "symmetric": True, "range": [0, 255],
                               "serve": True})))
log("start")
if not a.serve:
    log("request")
    sys.exit(score(a.probe_list, a.gallery_list, a.out))
for line in sys.stdin:
    req = json.loads(line)
    log("request")
    try:
        score(req["probe_list"], req["gallery_list"], req["out"])
        print(json.dumps({"ok": True}), flush=True)
    except Exception as exc:  # noqa: BLE001 - one line back to ssgallery
        print(json.dumps({"error": str(exc)}), flush=True)
