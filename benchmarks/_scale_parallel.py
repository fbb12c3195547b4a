"""The stages ``parallel`` and ``startup`` of scale.py (its docstring says what they
measure): compress serial vs ``--jobs 2`` vs a Dask LocalCluster on the same clients,
their galleries compared (`parallel_ratios`), and the start-up of ``verify`` on a big
gallery of random valid models vs a 20-client one, and ``info`` on it (`startup`).
``say`` prints a line and keeps it for the page (scale.py's)."""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from identify import fake_models

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.formats.gallery import read_gallery, write_gallery
from ssgallery.images.synth import face_image

BIN = Path(sys.executable).parent
# OpenBLAS sums in an order that depends on memory alignment, which differs between
# processes, and the learner carries the last-bit differences up to its convergence
# tolerance: galleries are compared to this tolerance relative to each array's scale
SAME_TOL = 1e-4


def parallel_ratios(store, clients, tmp, say=print):
    opts = CompressOptions(m=2)
    t0 = time.perf_counter()
    compress(store, Path(tmp) / "j1.h5", opts, CompressRun(clients=clients, jobs=1))
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    compress(store, Path(tmp) / "j2.h5", opts, CompressRun(clients=clients, jobs=2))
    jobs2 = time.perf_counter() - t0
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        t0 = time.perf_counter()
        compress(store, Path(tmp) / "dask.h5", opts,
                 CompressRun(clients=clients, scheduler=cluster.scheduler_address))
        dask = time.perf_counter() - t0
    same = all(_same(Path(tmp) / "j1.h5", Path(tmp) / f) for f in ("j2.h5", "dask.h5"))
    say(f"{len(clients)} clients: serial {serial:.1f} s, --jobs 2 {jobs2:.1f} s "
        f"({serial / jobs2:.2f}x), Dask 2 workers {dask:.1f} s ({serial / dask:.2f}x); "
        f"galleries equal to {SAME_TOL:g} of scale: {same}")
    return serial, jobs2, dask, same


def _same(a, b):
    ga, gb = read_gallery(a, arrays=True), read_gallery(b, arrays=True)
    def close(a, b):
        return np.allclose(a, b, rtol=0, atol=SAME_TOL * max(np.max(np.abs(b)), 1e-300))

    return sorted(ga.clients) == sorted(gb.clients) and all(
        close(ga.clients[c].prototypes, gb.clients[c].prototypes)
        and close(ga.clients[c].beta, gb.clients[c].beta)
        and close(ga.clients[c].threshold, gb.clients[c].threshold) for c in ga.clients)


def startup(tmp, n_big, runs=5, say=print):
    """verify start-up (20 vs n_big clients) and info on n_big: median wall seconds."""
    from PIL import Image

    from ssgallery.matchers.eigenface import EigenfaceMatcher

    images = np.stack([face_image(0, i, k) for i in range(40) for k in range(5)]).astype(float)
    matcher = EigenfaceMatcher().fit(images)
    probe = Path(tmp) / "probe.png"
    Image.fromarray(face_image(0, 3, 7)).save(probe)
    rng = np.random.default_rng(0)
    walls, t_write = {}, 0.0
    for n in (20, n_big):
        path = Path(tmp) / f"g{n}.h5"
        t0 = time.perf_counter()
        write_gallery(path, matcher_name="eigenface", matcher_config=matcher.get_config(),
                      matcher_state=matcher.get_state(), image_shape=images.shape[1:],
                      clients=fake_models(n, 2, matcher, rng))
        t_write = time.perf_counter() - t0
        walls[n] = _median_wall([str(BIN / "ssgallery"), "verify", str(probe), "--gallery",
                                 str(path), "--claim", "id00007"], runs, ok=(0, 1))
    info = _median_wall([str(BIN / "ssgallery"), "info", "--gallery",
                         str(Path(tmp) / f"g{n_big}.h5")], 3)
    say(f"verify start-up: {walls[n_big]:.3f} s with {n_big:,} clients vs {walls[20]:.3f} s "
        f"with 20 ({walls[n_big] / walls[20]:.2f}x); info on {n_big:,} clients {info:.2f} s "
        f"(gallery of random valid models written in {t_write:.0f} s)")
    return walls[20], walls[n_big], info


def _median_wall(argv, runs, ok=(0,)):
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(argv, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t0)
        if r.returncode not in ok:
            raise SystemExit(f"{argv[1]} failed: {r.stderr.strip()[-300:]}")
    return float(np.median(walls))
