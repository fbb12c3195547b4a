#!/usr/bin/env python3
"""example_mad.py (mean absolute pixel difference, a distance, and its mirror-symmetry
quality) with the persistent mode of the contract: ``--serve`` answers JSON-line
requests on stdin until end of input.

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


def quality(x):
    contrast = np.abs(x - x.mean()).mean()
    return 1 - np.abs(x - x[:, ::-1]).mean() / contrast if contrast > 1e-6 else 0.0


def read(f):
    return [load(s) for s in Path(f).read_text("utf-8").splitlines() if s.strip()]


def score(probe_list=None, gallery_list=None, out=None, quality_list=None):
    if quality_list:
        return np.savetxt(out or sys.stdout, [quality(x) for x in read(quality_list)])
    P, G = read(probe_list), read(gallery_list)
    np.savetxt(out or sys.stdout, [[np.abs(p - g).mean() for g in G] for p in P])


ap = argparse.ArgumentParser()
for opt in ("--probe-list", "--gallery-list", "--quality-list", "--out"):
    ap.add_argument(opt)
ap.add_argument("--describe", action="store_true")
ap.add_argument("--serve", action="store_true")
a = ap.parse_args()
if a.describe:
    sys.exit(print(json.dumps({"kind": "distance", "symmetric": True, "range": [0, 255],
                               "serve": True, "quality": True})))
log("start")
if not a.serve:
    log("request")
    sys.exit(score(a.probe_list, a.gallery_list, a.out, a.quality_list))
for line in sys.stdin:
    req = json.loads(line)
    log("request")
    try:
        score(**req)
        print(json.dumps({"ok": True}), flush=True)
    except Exception as exc:  # noqa: BLE001 - one line back to ssgallery
        print(json.dumps({"error": str(exc)}), flush=True)
