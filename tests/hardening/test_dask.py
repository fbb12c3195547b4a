"""Issue 20 family 3: Dask workers are data sources, not trusted code. On a real
LocalCluster on loopback whose worker runs a preload module that tampers with the jobs
(tamper_preload.py): a forged result is refused like a part, a result whose unpickling
would run a program is never unpickled by compress (which holds the keys), an
exception that cannot be pickled and a worker that dies are one line within a bounded
time, a result larger than any result of the run is refused before it is read (also
sent compressed), a job that never finishes stops the run at its time limit, and a
cluster whose only worker leaves names the jobs in flight and the kept clients. The
honest cluster still gives the gallery."""

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
         "unpicklable", "die", "huge", "bomb"]
SUCCEEDING = ["warn_event", "print_event"]  # nothing the worker sends is acted on
BOUND = 120  # seconds: every failure is one line within this
HUGE = 64 << 20  # bytes: tamper_preload's "huge" and "bomb" results


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    faces = make_faces(str(root / "faces"), n_clients=6, n_images=5)
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
    # 6 clients at target FAR 0.1, where honest clients of 5 impostor people accept: at
    # 1 %, or with 3 impostor people, the pooled T, leaving one person out, sits above
    # every score the clients give, c01's forged ones included: no client accepts
    # anyone, and "calibrated" has nothing to refuse
    args = ["compress", "--store", root / "e.h5", "--m", "1", "--cv-folds", "0",
            "--max-iter", "5", "--scheduler", cluster["address"], "-q",
            "--target-far", "0.1"]
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


def _peak_mib(pid):
    """The peak resident memory (VmHWM) of process ``pid`` in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln for ln in status.splitlines() if ln.startswith("VmHWM")).split()[1]) / 1024


def _children(pid):
    return [c for t in Path(f"/proc/{pid}/task").iterdir()
            for c in (t / "children").read_text().split()]


def _run_measured(pool, args):
    """``pool.run(args)`` and the peak memory the run added to the process (VmHWM
    reset just before: /proc/PID/clear_refs)."""
    if pool.proc is None or pool.proc.poll() is not None:
        pool._start()
    Path(f"/proc/{pool.proc.pid}/clear_refs").write_text("5")
    before = _peak_mib(pool.proc.pid)
    result = pool.run(args)
    return result, _peak_mib(pool.proc.pid) - before


@pytest.mark.parametrize("mode", ["huge", "bomb"])
def test_a_result_larger_than_the_run_allows_is_refused_before_it_is_read(cluster, tmp_path,
                                                                         mode):
    """A worker returns 64 MiB (plain, or zlib-compressed to about 64 KiB on the wire)
    where a client's result of this run is at most about 2 MiB (`max_result_bytes`):
    one line naming the client and the sizes, exit 2, the gallery already at the
    output path unchanged, no child process left, and compress's peak memory grows by
    less than the payload (it is never allocated; an honest run beside it as the
    reference)."""
    out = tmp_path / "g.h5"
    args = ["compress", "--store", cluster["root"] / "e.h5", "--m", "1", "--cv-folds", "0",
            "--max-iter", "5", "--scheduler", cluster["address"], "-q", "-o", out]
    pool = Workers(timeout=BOUND)
    try:
        cluster["mode"].write_text("honest")
        assert pool.run(args)["code"] == 0  # imports: not part of the comparison
        honest, honest_mib = _run_measured(pool, args)
        assert honest["code"] == 0 and out.exists(), honest
        written = out.read_bytes()
        cluster["mode"].write_text(mode)
        t0 = time.monotonic()
        r, hostile_mib = _run_measured(pool, args)
        took = time.monotonic() - t0
        left = _children(pool.proc.pid)
    finally:
        pool.close()
        cluster["mode"].write_text("honest")
    line = r.get("stderr", "").strip().splitlines()[-1:]
    assert clean_error(r), r
    assert "client 'c" in line[0] and "more than the" in line[0] \
        and "a result of this run can be" in line[0], line
    limit = int(line[0].split("more than the ")[1].split()[0])
    sent = int(line[0].split("a message of at least ")[1].split()[0])
    # plain: refused at the length it announces; compressed: as it inflates past the limit
    assert limit < 4 << 20 and (HUGE < sent < HUGE + 4096 if mode == "huge"
                                else sent == limit + 1), sent
    assert out.read_bytes() == written and not left and took < 20, (took, left)
    assert hostile_mib < honest_mib + HUGE / 2**20 / 2, (honest_mib, hostile_mib)


def _timed_compress(cluster, out, seconds):
    """compress's arguments for one small run on the cluster with --job-timeout."""
    return ["compress", "--store", cluster["root"] / "e.h5", "--m", "1", "--cv-folds", "0",
            "--max-iter", "5", "--scheduler", cluster["address"], "-q", "-o", out,
            "--job-timeout", seconds]


def test_a_job_that_never_finishes_stops_the_run_at_its_time_limit(cluster, tmp_path):
    """A worker whose job never ends: with --job-timeout 2, compress stops after about
    2 s with one line naming the client and the option, exit 2, the gallery already at
    the output path unchanged, no child process left; the cluster, once the worker lets
    the job go, gives the gallery again. Without the limit (before), compress waited
    forever."""
    out = tmp_path / "g.h5"
    args = _timed_compress(cluster, out, "2")
    pool = Workers(timeout=BOUND)
    try:
        cluster["mode"].write_text("honest")
        assert pool.run(args)["code"] == 0 and out.exists()
        written = out.read_bytes()
        cluster["mode"].write_text("hang")
        t0 = time.monotonic()
        r = pool.run(args)
        took = time.monotonic() - t0
        left = _children(pool.proc.pid)
        kept = out.read_bytes() == written
        cluster["mode"].write_text("honest")
        again = pool.run(args)
    finally:
        pool.close()
        cluster["mode"].write_text("honest")
    line = r.get("stderr", "").strip().splitlines()[-1:]
    assert clean_error(r), r
    assert line[0].startswith("ssgallery: error: client 'c") \
        and "no result from the Dask cluster" in line[0] and "within 2 s (--job-timeout)" \
        in line[0], line
    assert 2 <= took < 10 and not left and kept, (took, left)
    assert again["code"] == 0, again


def test_a_job_is_timed_from_when_a_thread_is_free_for_it(cluster, tmp_path):
    """Jobs of 2 s each on a cluster of one thread, --job-timeout 3.5: the gallery is
    written. Two jobs are in flight per thread, so a clock started at submission would
    charge the second job its wait behind the first (about 4 s) and stop an honest,
    slow run."""
    out = tmp_path / "g.h5"
    args = _timed_compress(cluster, out, "3.5")
    pool = Workers(timeout=BOUND)
    try:
        cluster["mode"].write_text("slow")
        t0 = time.monotonic()
        r = pool.run(args)
        took = time.monotonic() - t0
    finally:
        pool.close()
        cluster["mode"].write_text("honest")
    assert r.get("code") == 0 and out.exists(), r
    assert took > 4 * 2.0, took  # the 4 clients' jobs ran one after the other


def test_a_cluster_whose_only_worker_leaves_names_the_jobs_and_the_kept_clients(cluster,
                                                                                tmp_path):
    """Jobs of 2 s on a cluster of one worker that leaves once a client is finished
    (the run's scattered blocks go with it and Dask cancels every job): compress said "a
    job failed on the Dask cluster at ADDR (FutureCancelledError: _on_dask_worker-...
    cancelled for reason: already forgotten.)", naming no client and not the finished
    ones kept for --resume. Now one line: the cluster lost the run's jobs, the clients
    in flight, the finished ones kept in GALLERY.parts and the --resume command; exit 2,
    no gallery; that command on a live cluster writes it."""
    import subprocess
    import sys

    out, parts = tmp_path / "g.h5", tmp_path / "g.h5.parts"
    program = Path(sys.executable).with_name("ssgallery")
    args = [program, "compress", "--store", cluster["root"] / "e.h5", "-o", out, "-q",
            "--m", "1", "--cv-folds", "0", "--max-iter", "5"]
    try:
        cluster["mode"].write_text("slow")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      preload=[str(Path(__file__).with_name(
                                          "tamper_preload.py"))]) as local:
            run = subprocess.Popen([*args, "--scheduler", local.scheduler_address],
                                   stderr=subprocess.PIPE, text=True)
            t0 = time.monotonic()
            while not (parts.is_dir() and any(parts.iterdir())) and run.poll() is None \
                    and time.monotonic() - t0 < BOUND:
                time.sleep(0.1)
            local.scale(0)  # the only worker leaves
            stderr = run.communicate(timeout=BOUND)[1]
    finally:
        cluster["mode"].write_text("honest")
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert run.returncode == 2 and len(lines) == 1 and not out.exists(), stderr
    assert lines[0].startswith(f"ssgallery: error: the Dask cluster at "
                               f"{local.scheduler_address} lost the run's jobs (its workers "
                               "left, or the jobs were cancelled); in flight: client 'c"), lines
    kept = len(list(parts.iterdir()))
    resume = (f"ssgallery compress --store {cluster['root'] / 'e.h5'} -o {out} --resume")
    assert f"; {kept} finished client(s) kept in {parts}; '{resume}' with the same other " \
        "options continues" in lines[0], (kept, lines)
    again = subprocess.run([*args, "--scheduler", cluster["address"], "--resume"],
                           check=False, capture_output=True, text=True, timeout=BOUND)
    assert again.returncode == 0 and out.exists(), again.stderr
