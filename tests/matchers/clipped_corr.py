#!/usr/bin/env python3
"""A deliberately foreign matcher for ssgallery's contract tests (stdlib + numpy only).

Distance d(p, g) = 1 - clip(c, 0, 1), where c is the correlation of the probe with the
gallery image weighted by the gallery's own contrast |g - mean(g)|: not symmetric, not
smooth (clipped), and reported as a *distance*. Reads binary PGM (P5) and float .npy.
"""
import argparse
import json
import sys

import numpy as np


def read(path):
    if path.endswith(".npy"):
        return np.load(path).astype(float)
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval (no comments in our files)
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5":
        sys.exit(f"clipped_corr: {path}: not a binary PGM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos + 1:pos + 1 + w * h], np.uint8).reshape(h, w).astype(float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe-list")
    ap.add_argument("--gallery-list")
    ap.add_argument("--out")
    ap.add_argument("--describe", action="store_true")
    a = ap.parse_args()
    if a.describe:
        print(json.dumps({"kind": "distance", "symmetric": False, "range": [0, 1]}))
        return
    lists = []
    for name in (a.probe_list, a.gallery_list):
        with open(name, encoding="utf-8") as f:
            lists.append([read(line.rstrip("\n")) for line in f if line.strip()])
    out = []
    for p in lists[0]:
        row = []
        for g in lists[1]:
            w = np.abs(g - g.mean())
            pc, gc = p - (w * p).sum() / w.sum(), g - (w * g).sum() / w.sum()
            c = (w * pc * gc).sum() / np.sqrt((w * pc * pc).sum() * (w * gc * gc).sum() + 1e-12)
            row.append(1.0 - min(max(c, 0.0), 1.0))
        out.append(" ".join(f"{v:.10f}" for v in row))
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
