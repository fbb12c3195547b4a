"""Issue 20 family 3: Dask workers are data sources, not trusted code. On a real
LocalCluster on loopback whose worker runs a preload module that tampers with the jobs
(tamper_preload.py): a forged result is refused like a part, a result whose unpickling
would run a program is never unpickled by compress (which holds the keys), an
exception that cannot be pickled and a worker that dies are one line within a bounded
time. The honest cluster still gives the gallery."""

import os
import time
from pathlib import Path

import pytest
from conftest import Workers, clean_error, report
from helpers import make_faces

from ssgallery.app.enroll import enroll

distributed = pytest.importorskip("distributed", reason="the 'distributed' extra")

MODES = ["threshold", "nan", "client", "heldout", "provenance", "calibrated",
         "evil_result", "evil_exception", "raw_erred", "serialized_erred", "nested_pickled",
         "unpicklable", "die"]
SUCCEEDING = ["warn_event", "print_event"]  # nothing the worker sends is acted on
BOUND = 120  # seconds: every failure is one line within this


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5)
    enroll(faces, root / "e.h5")
    mode, pwned = root / "mode", root / "pwned"
    mode.write_text("honest")
    os.environ["TAMPER_MODE_FILE"], os.environ["TAMPER_PWNED_FILE"] = str(mode), str(pwned)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  preload=[str(Path(__file__).with_name("tamper_preload.py"))],
                                  ) as local:
        yield {"root": root, "faces": faces, "mode": mode, "pwned": pwned,
               "address": local.scheduler_address}


def test_tampering_workers(cluster, tmp_path):
    root = cluster["root"]
    args = ["compress", "--store", root / "e.h5", "--m", "1", "--cv-folds", "0",
            "--max-iter", "5", "--scheduler", cluster["address"], "-q"]
    pool = Workers(timeout=BOUND + 60)
    counts = {"cases": 0, "clean errors": 0, "succeeded, nothing shown": 0,
              "programs run in compress": 0,
              "galleries written": 0, "hangs": 0, "exit 4": 0, "slowest s": 0.0,
              "failures": 0}
    failures = []
    try:
        cluster["mode"].write_text("honest")
        honest = pool.run([*args, "-o", tmp_path / "honest.h5"])
        assert honest["code"] == 0 and (tmp_path / "honest.h5").exists(), honest
        for mode in MODES + SUCCEEDING:
            cluster["mode"].write_text(mode)
            out = tmp_path / f"{mode}.h5"
            if pool.proc is None or pool.proc.poll() is not None:
                pool._start()
            host = str(pool.proc.pid)  # the process compress runs in
            cluster["pwned"].unlink(missing_ok=True)
            t0 = time.monotonic()
            r = pool.run([*args, "-o", out])
            took = time.monotonic() - t0
            pids = cluster["pwned"].read_text().split() if cluster["pwned"].exists() else []
            counts["cases"] += 1
            counts["hangs"] += bool(r.get("hang"))
            counts["exit 4"] += r.get("code") == 4
            counts["programs run in compress"] += host in pids
            if mode in SUCCEEDING:  # the honest gallery, nothing of the worker's shown
                shown = r.get("stdout", "") + r.get("stderr", "")
                ok = r.get("code") == 0 and out.exists() and "INJECTED" not in shown \
                    and "\x1b" not in shown and host not in pids
                counts["succeeded, nothing shown" if ok else "failures"] += 1
                if not ok:
                    failures.append((mode, round(took), r))
                continue
            counts["galleries written"] += out.exists()
            counts["slowest s"] = round(max(counts["slowest s"], took), 1)
            ok = clean_error(r) and took < BOUND and not out.exists() and host not in pids
            counts["clean errors" if ok else "failures"] += 1
            if not ok:
                failures.append((mode, round(took), r))
            if mode == "die":  # let the nanny bring a worker back for the next case
                time.sleep(5)
    finally:
        pool.close()
        cluster["mode"].write_text("honest")
    line = report("family 3, tampering Dask workers", counts)
    assert not failures, (line, [f[:2] for f in failures], failures)


@pytest.mark.parametrize("capped", [False, True])
def test_a_cluster_without_workers_is_one_line_in_bounded_time(cluster, tmp_path,
                                                               monkeypatch, capped):
    """A scheduler that never gets a worker: compress ends with one line naming the
    cluster, never waits forever, nothing written: when the run shares its blocks
    (Dask's scatter gives up; before: its TimeoutError, not naming the cluster) and when
    the jobs carry their own (capped impostors: after NO_WORKER_SECONDS, 3 s here)."""
    from ssgallery.app import parallel
    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressOptions, CompressRun
    from ssgallery.errors import SsgalleryError

    monkeypatch.setattr(parallel, "NO_WORKER_SECONDS", 3.0)
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as empty:
        t0 = time.monotonic()
        with pytest.raises(SsgalleryError, match=f"{empty.scheduler_address} has (had )?no worker"):
            compress(cluster["root"] / "e.h5", tmp_path / "g.h5",
                     CompressOptions(m=1, cv_folds=0, max_iter=5,
                                     max_impostors=3 if capped else None),
                     CompressRun(scheduler=empty.scheduler_address))
        took = time.monotonic() - t0
    assert took < 30 and not (tmp_path / "g.h5").exists(), took
