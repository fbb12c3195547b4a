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
         "evil_result", "unpicklable", "die"]
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
    counts = {"cases": 0, "clean errors": 0, "programs run in compress": 0,
              "galleries written": 0, "hangs": 0, "exit 4": 0, "slowest s": 0.0,
              "failures": 0}
    failures = []
    try:
        cluster["mode"].write_text("honest")
        honest = pool.run([*args, "-o", tmp_path / "honest.h5"])
        assert honest["code"] == 0 and (tmp_path / "honest.h5").exists(), honest
        for mode in MODES:
            cluster["mode"].write_text(mode)
            out = tmp_path / f"{mode}.h5"
            t0 = time.monotonic()
            r = pool.run([*args, "-o", out])
            took = time.monotonic() - t0
            pids = cluster["pwned"].read_text().split() if cluster["pwned"].exists() else []
            host = str(pool.proc.pid) if pool.proc is not None else None
            counts["cases"] += 1
            counts["hangs"] += bool(r.get("hang"))
            counts["exit 4"] += r.get("code") == 4
            counts["programs run in compress"] += host in pids
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
    assert not failures, (line, failures)
