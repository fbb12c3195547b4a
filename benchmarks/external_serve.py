"""Black-box matchers at scale: program starts and wall time per client, one-shot calls vs
the persistent mode (``PROGRAM --serve``), side by side in one run.

Synthetic faces (``--identities`` x 5 images, 46x56), ``compress --m 2 --cv-folds 0
--max-iter 4`` (the settings the README gives for slow external matchers). The L1
example matcher (tests/matchers/serve_mad.py, the example_mad.py matcher with --serve)
compresses every client; ssgallery-ebgm compresses ``--ebgm-clients`` of them (every
image still an impostor). Each pair of runs must give array-equal galleries.

    OMP_NUM_THREADS=1 python benchmarks/external_serve.py     # writes docs/benchmarks/external_serve.md
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _results import markdown_table, write_page

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.formats.gallery import read_gallery
from ssgallery.images.synth import write_sample_data

HERE = Path(__file__).resolve().parent
MAD = [sys.executable, str(HERE.parent / "tests" / "matchers" / "serve_mad.py")]
EBGM = [str(Path(sys.executable).parent / "ssgallery-ebgm")]


def run(faces, tmp, name, command, clients, max_iter):
    out = {}
    for serve in (False, True):
        store = Path(tmp) / f"{name}-{serve}.h5"
        enroll(faces, store, matcher="external", size=(46, 56), warn=lambda message: None,
               matcher_options={"command": command, "serve": serve})
        t0 = time.perf_counter()
        s = compress(store, Path(tmp) / f"g-{name}-{serve}.h5", m=2, cv_folds=0, max_iter=max_iter,
                     clients=clients, matcher_cmd=command)  # the host names the program
        wall = time.perf_counter() - t0
        n = len(s.clients)
        out[serve] = {"wall": wall / n, "starts": s.program_runs["starts"] / n,
                      "calls": s.program_runs["calls"] / n, "n": n}
        print(f"{name} serve={serve}: {n} clients, {wall / n:.2f} s/client, "
              f"{out[serve]['starts']:.2f} program starts/client, "
              f"{out[serve]['calls']:.1f} scoring calls/client", flush=True)
    a = read_gallery(Path(tmp) / f"g-{name}-False.h5", arrays=True)
    b = read_gallery(Path(tmp) / f"g-{name}-True.h5", arrays=True)
    same = all(np.array_equal(a.clients[c].prototypes, b.clients[c].prototypes)
               and a.clients[c].threshold == b.clients[c].threshold for c in a.clients)
    return out, same


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--identities", type=int, default=50)
    ap.add_argument("--ebgm-clients", type=int, default=5)
    ap.add_argument("--clients", type=int, default=None,
                    help="clients the L1 example compresses [all]")
    ap.add_argument("--max-iter", type=int, default=4)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_sample_data(Path(tmp) / "s", identities=args.identities, images=5, probes=0)
        faces = Path(tmp) / "s" / "faces"
        names = sorted(p.name for p in faces.iterdir())
        for name, command, clients in (("L1 example", MAD, args.clients and names[:args.clients]),
                                       ("ssgallery-ebgm", EBGM, names[:args.ebgm_clients])):
            res, same = run(faces, tmp, name, command, clients, args.max_iter)
            one, srv = res[False], res[True]
            rows.append([name, str(one["n"]), f"{one['starts']:.2f}", f"{srv['starts']:.2f}",
                         f"{one['starts'] / srv['starts']:.0f}x" if srv["starts"] else "inf",
                         f"{one['wall']:.2f}", f"{srv['wall']:.2f}",
                         f"{one['wall'] / srv['wall']:.2f}x", str(same)])
    head = ["matcher", "clients", "starts/client one-shot", "starts/client serve",
            "fewer starts", "s/client one-shot", "s/client serve", "speed-up", "same gallery"]
    table = markdown_table(head, rows)
    print(table)
    write_page("external_serve", "External matchers: one-shot calls vs the persistent mode",
               table, notes=(f"{args.identities} synthetic identities x 5 images at 46x56, "
                             f"compress --m 2 --cv-folds 0 --max-iter {args.max_iter}, one "
                             "process. Program "
                             "starts exclude the --describe runs of enrollment. Scoring calls "
                             "per client are the same in both modes (the same requests, "
                             "answered by one running program)."))


if __name__ == "__main__":
    main()
