#!/usr/bin/env python3
"""The README's example matcher: mean absolute pixel difference (L1), a distance, and an
optional quality score: mirror symmetry in L1 terms (1 - mean |x - mirror(x)| / mean
|x - mean(x)|; 0 for a uniform image), higher for a frontal face than for noise."""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ap = argparse.ArgumentParser()
for opt in ("--probe-list", "--gallery-list", "--quality-list", "--out"):
    ap.add_argument(opt)
ap.add_argument("--describe", action="store_true")
a = ap.parse_args()
if a.describe:
    sys.exit(print(json.dumps({"kind": "distance", "symmetric": True, "range": [0, 255],
                               "quality": True})))


def load(path):  # prototypes arrive as float .npy, images as .pgm/.png
    return np.load(path) if path.endswith(".npy") else np.asarray(Image.open(path), float)


def quality(x):
    contrast = np.abs(x - x.mean()).mean()
    return 1 - np.abs(x - x[:, ::-1]).mean() / contrast if contrast > 1e-6 else 0.0


def read(f):
    return [load(s) for s in Path(f).read_text("utf-8").splitlines() if s.strip()]


if a.quality_list:
    sys.exit(np.savetxt(a.out or sys.stdout, [quality(x) for x in read(a.quality_list)]))
P, G = read(a.probe_list), read(a.gallery_list)
np.savetxt(a.out or sys.stdout, [[np.abs(p - g).mean() for g in G] for p in P])
