"""Latency and throughput of ``ssgallery verify``, measured side by side in one run.

1. Start-up latency: wall time of a real ``ssgallery verify PROBE --claim ID`` process
   (one probe, a 20-client gallery) divided by the wall time of
   ``python -c "import numpy, h5py, PIL.Image"`` (the floor any Python verifier pays),
   medians of N alternated runs. Target: <= 1.5x.
2. Throughput: one ``ssgallery verify --list FILE`` process scoring 1,000 probes,
   in probes per second (start-up included), and the per-probe cost after start-up.

The gallery is built from sample_data/ (20 clients, m = 2) in a temporary folder,
unless --gallery is given.

    python benchmarks/verify_latency.py [--runs 15] [--probes 1000] [--gallery G --claim ID]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _wall(cmd, cwd=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    if out.returncode not in (0, 1):
        sys.exit(f"benchmark: {' '.join(map(str, cmd))} failed:\n{out.stderr}")
    return elapsed


def _ssgallery():
    exe = Path(sys.executable).with_name("ssgallery")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ssgallery"]


def _build_gallery(work):
    faces = REPO / "sample_data" / "faces"
    cli = _ssgallery()
    for args in (["enroll", str(faces)], ["compress", "--m", "2"]):
        subprocess.run(cli + args, cwd=work, check=True, capture_output=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    return Path(work) / "gallery.h5"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--probes", type=int, default=1000)
    ap.add_argument("--gallery", default=None)
    ap.add_argument("--claim", default="c03")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        t = time.perf_counter()
        gallery = Path(args.gallery) if args.gallery else _build_gallery(work)
        if not args.gallery:
            print(f"built a 20-client gallery from sample_data/ in {time.perf_counter() - t:.1f} s")
        probes = sorted((REPO / "sample_data" / "probes").glob("*.png"))
        probes += sorted((REPO / "sample_data" / "faces").glob("*/*.png"))
        probe = str(probes[0])
        verify = _ssgallery() + ["verify", "--claim", args.claim, "--gallery", str(gallery)]
        floor = [sys.executable, "-c", "import numpy, h5py, PIL.Image"]
        _wall(verify + [probe])  # warm the file cache once
        base, ver = [], []
        for _ in range(args.runs):  # alternate, so load changes hit both alike
            base.append(_wall(floor))
            ver.append(_wall(verify + [probe]))
        b, v = statistics.median(base), statistics.median(ver)
        print(f"start-up, median of {args.runs} runs:")
        print(f"  python -c 'import numpy, h5py, PIL.Image'   {b * 1000:7.0f} ms")
        print(f"  ssgallery verify (1 probe, 20-client gallery) {v * 1000:7.0f} ms")
        print(f"  ratio                                        {v / b:7.2f}x  (target <= 1.5x)")

        listing = Path(work) / "probes.txt"
        paths = [str(probes[i % len(probes)]) for i in range(args.probes)]
        listing.write_text("\n".join(paths) + "\n")
        batch = statistics.median(_wall(verify + ["--list", str(listing)]) for _ in range(3))
        print(f"batch of {args.probes} probes in one process (median of 3): {batch:.2f} s = "
              f"{args.probes / batch:.0f} probes/s; "
              f"{(batch - v) / (args.probes - 1) * 1000:.2f} ms per extra probe")


if __name__ == "__main__":
    main()
