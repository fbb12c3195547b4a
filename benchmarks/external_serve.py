"""Black-box matchers at scale: program starts and wall time per client, one-shot calls vs
the persistent mode (``PROGRAM --serve``), side by side in one run.

Synthetic faces (``--identities`` x 5 images, 46x56), ``compress --m 2 --cv-folds 0
--max-iter 4 --swap-rounds 0`` (prototypes moved by Eq. 7, the training that asks the
program most; a black box's default, swapped real images never moved, asks it only for
the Gram matrix). The L1
example matcher (tests/matchers/serve_mad.py, the example_mad.py matcher with --serve)
compresses every client; ssgallery-ebgm compresses ``--ebgm-clients`` of them (every
image still an impostor). Each pair of runs must give array-equal galleries.

With ``--att``, AT&T is also compressed with the L1 example matcher both ways (each
subject's last 5 images held out, the other 5 enrolled; the same compress settings) and
the mean client EER of the two galleries on the held-out images is compared (issue 11:
same gallery quality, EER within 0.3 pp).

    OMP_NUM_THREADS=1 python benchmarks/external_serve.py     # writes docs/benchmarks/external_serve.md
    OMP_NUM_THREADS=1 python benchmarks/external_serve.py --att
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
from _scale_accuracy import client_eers, split_folder

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.datasets import att_faces_path
from ssgallery.formats.gallery import read_gallery
from ssgallery.images.ingest import load_faces
from ssgallery.images.synth import write_sample_data

HERE = Path(__file__).resolve().parent
MAD = [sys.executable, str(HERE.parent / "tests" / "matchers" / "serve_mad.py")]
EBGM = [str(Path(sys.executable).parent / "ssgallery-ebgm")]


def run(faces, tmp, name, command, clients, max_iter, size=(46, 56), test=None):
    """One-shot then served compress of ``faces``: per-mode figures and whether the two
    galleries are equal. ``test``: held-out (images, labels) -> also the mean client EER."""
    out = {}
    for serve in (False, True):
        store = Path(tmp) / f"{name}-{serve}.h5"
        enroll(faces, store, matcher="external", size=size, warn=lambda message: None,
               matcher_options={"command": command, "serve": serve})
        t0 = time.perf_counter()
        s = compress(store, Path(tmp) / f"g-{name}-{serve}.h5",
                     CompressOptions(m=2, cv_folds=0, max_iter=max_iter, swap_rounds=0),
                     CompressRun(clients=clients, matcher_cmd=command))  # the host names it
        wall = time.perf_counter() - t0
        n = len(s.clients)
        out[serve] = {"wall": wall / n, "starts": s.program_runs["starts"] / n,
                      "calls": s.program_runs["calls"] / n, "n": n}
        if test is not None:
            out[serve]["eer"] = float(np.mean(client_eers(
                store, Path(tmp) / f"g-{name}-{serve}.h5", *test, matcher_cmd=command)))
            print(f"{name} serve={serve}: mean client EER {100 * out[serve]['eer']:.2f} % on "
                  f"{len(test[1])} held-out images", flush=True)
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
    ap.add_argument("--att", action="store_true",
                    help="also the mean client EER on AT&T with the L1 example matcher")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_sample_data(Path(tmp) / "s", identities=args.identities, images=5, probes=0)
        faces = Path(tmp) / "s" / "faces"
        names = sorted(p.name for p in faces.iterdir())
        for name, command, clients in (("L1 example", MAD, args.clients and names[:args.clients]),
                                       ("ssgallery-ebgm", EBGM, names[:args.ebgm_clients])):
            res, same = run(faces, tmp, name, command, clients, args.max_iter)
            rows.append(_row(name, res, same))
        if args.att:
            rows.append(_att_row(Path(tmp), args.max_iter))
    head = ["matcher", "clients", "starts/client one-shot", "starts/client serve",
            "fewer starts", "s/client one-shot", "s/client serve", "speed-up", "same gallery",
            "mean client EER one-shot / serve"]
    table = markdown_table(head, rows)
    print(table)
    write_page("external_serve", "External matchers: one-shot calls vs the persistent mode",
               table, notes=(f"{args.identities} synthetic identities x 5 images at 46x56, "
                             f"compress --m 2 --cv-folds 0 --max-iter {args.max_iter} "
                             "--swap-rounds 0, one "
                             "process. Program "
                             "starts exclude the --describe runs of enrollment. Scoring calls "
                             "per client are the same in both modes (the same requests, "
                             "answered by one running program)."
                             + (" AT&T: each subject's last 5 images (file names sorted) "
                                "held out, the other 5 enrolled at 92x112; mean client EER "
                                "of each gallery on the held-out images." if args.att
                                else "")))


def _row(name, res, same):
    one, srv = res[False], res[True]
    eers = (f"{100 * one['eer']:.2f} % / {100 * srv['eer']:.2f} %" if "eer" in one else "")
    return [name, str(one["n"]), f"{one['starts']:.2f}", f"{srv['starts']:.2f}",
            f"{one['starts'] / srv['starts']:.0f}x" if srv["starts"] else "inf",
            f"{one['wall']:.2f}", f"{srv['wall']:.2f}", f"{one['wall'] / srv['wall']:.2f}x",
            str(same), eers]


def _att_row(tmp, max_iter):
    """AT&T with the L1 example matcher: 5 images enrolled, 5 held out per subject."""
    split_folder(att_faces_path(), tmp / "att", 5)
    test = load_faces(tmp / "att" / "test", size=(92, 112))
    res, same = run(tmp / "att" / "train", tmp, "L1 example, AT&T", MAD, None, max_iter,
                    size=(92, 112), test=(test.images, np.asarray(test.labels)))
    return _row("L1 example, AT&T", res, same)


if __name__ == "__main__":
    main()
