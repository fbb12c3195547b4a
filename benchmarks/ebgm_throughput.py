"""Throughput of ``ssgallery-ebgm`` in batch mode on 92x112 AT&T faces, single-threaded.

Runs the real program (one process per batch, OMP_NUM_THREADS=1) on probe x gallery
batches of several shapes and prints pairs per second of wall time and per CPU-second
of the program (user + system, from the child's rusage: the honest per-core figure on
a shared machine). The figure includes process start-up, image reading and every
image's Gabor transform; the last line also uses a warm ``--cache-dir`` (the Gabor
responses of the probe images are read back instead of recomputed, as during training).

    OMP_NUM_THREADS=1 python benchmarks/ebgm_throughput.py
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from _results import docstring, printed, write_page

from ssgallery.datasets import att_faces_path


def run(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-batch", type=int, default=None,
                    help="cap every batch side at N images (a quick check; not the figures)")
    args = ap.parse_args(argv)
    cap = (lambda n: min(n, args.max_batch)) if args.max_batch else (lambda n: n)
    root = att_faces_path()
    if not root.is_dir():
        sys.exit(f"AT&T faces not found at {root} (set SSGALLERY_ATT_FACES)")
    exe = shutil.which("ssgallery-ebgm") or os.path.join(os.path.dirname(sys.executable),
                                                         "ssgallery-ebgm")
    paths = [str(root / f"s{s}" / f"{k}.pgm") for s in range(1, 41) for k in range(1, 11)]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    tmp = tempfile.mkdtemp(prefix="ebgm-bench-")
    try:
        print(f"{'batch':>22s} {'pairs':>7s} {'wall s':>7s} {'cpu s':>7s} "
              f"{'pairs/s wall':>13s} {'pairs/cpu-s':>12s}")
        cases = [(" (training)", 100, 5, False), (" (verify)", 1, 5, False),
                 ("", 100, 100, False), ("", 200, 200, False), (" warm cache", 100, 5, True)]
        cases = [(f"{cap(n)} x {cap(m)}{what}", cap(n), cap(m), warm)
                 for what, n, m, warm in cases]
        cache = os.path.join(tmp, "jets")
        run([exe, "--probe-list", _write(tmp, "warm", paths[:cap(100)]), "--gallery-list",
             _write(tmp, "warmg", paths[100:100 + cap(5)]), "--out", os.path.join(tmp, "w.txt"),
             "--cache-dir", cache], env)
        for name, n, m, warm in cases:
            probes, gallery = paths[:n], paths[200:200 + m] if m <= 200 else paths[:m]
            cmd = [exe, "--probe-list", _write(tmp, "p", probes), "--gallery-list",
                   _write(tmp, "g", gallery), "--out", os.path.join(tmp, "S.txt")]
            if warm:
                cmd += ["--cache-dir", cache]
            wall, cpu = run(cmd, env)
            print(f"{name:>22s} {n * m:7d} {wall:7.2f} {cpu:7.2f} {n * m / wall:13.0f} "
                  f"{n * m / cpu:12.0f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write(folder, name, paths):
    path = os.path.join(folder, name + ".txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(p + "\n" for p in paths)
    return path


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("ebgm_throughput", "Throughput of ssgallery-ebgm",
               notes=docstring(__doc__), output=out.getvalue())
