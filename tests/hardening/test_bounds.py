"""Issue 20 family 7: sizes checked before reads, batches bounded in memory, workers
bounded by cores and clients. (The ``--serve`` bounds: test_matcher_answers.py.)"""

import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import psutil
import pytest
from conftest import ENV, clean_error, report
from helpers import make_faces, reseal

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions

SPARSE = 840_000_000  # float64 elements: 6.7 GB that the file never stores
RSS = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
       "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
       "sys.exit(r.returncode)")


def _run(args, env=None, timeout=600):
    """The CLI in a real process: {"code", "stdout", "stderr", "rss_mib", "seconds"}."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", RSS, sys.executable, "-m", "ssgallery",
                        *map(str, args)], env=dict(ENV, **(env or {})), capture_output=True,
                       text=True, timeout=timeout, check=False)
    lines = r.stderr.splitlines()
    return {"code": r.returncode, "stdout": r.stdout, "stderr": "\n".join(lines[:-1]) + "\n",
            "rss_mib": int(lines[-1]) >> 10, "seconds": time.monotonic() - t0}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5, shape=(128, 96))
    enroll(faces, root / "e.h5")
    (root / "key").write_bytes(b"s" * 32)
    compress(root / "e.h5", root / "g.h5", CompressOptions(m=2, cv_folds=0, max_iter=5),
             _signed(root / "key"))
    return {"root": root, "faces": faces, "key": {"SSGALLERY_KEY_FILE": str(root / "key")}}


def _signed(key):
    from ssgallery.app.options import CompressRun

    return CompressRun(key_file=str(key))


def _sparse(f, where):
    f[where].create_dataset("sparse", shape=(SPARSE,), dtype="f8", chunks=(1 << 16,))


def test_sparse_datasets_are_refused_before_reading(site, tmp_path):
    """A 6.7 GB sparse dataset added (and the file re-sealed; the signature still holds:
    a client group's digest is checked only after the group is read) to a client group,
    the matcher state, the search index or a store: refused from its metadata."""
    root, probe = site["root"], os.path.join(site["faces"], "c01", "0.png")
    cases = {
        "client group (verify, signed)": ("g.h5", "clients/c01",
                                          ["verify", probe, "--claim", "c01", "--gallery"]),
        "matcher state (verify)": ("g.h5", "matcher",
                                   ["verify", probe, "--claim", "c01", "--gallery"]),
        "search index (identify)": ("g.h5", "index", ["identify", probe, "--gallery"]),
        "client group (info --svm)": ("g.h5", "clients/c02", ["info", "--svm", "--gallery"]),
        "store (compress)": ("e.h5", "/", ["compress", "-o", tmp_path / "out.h5", "--store"]),
    }
    counts = {"cases": 0, "clean errors": 0, "failures": 0, "peak MiB": 0, "slowest s": 0.0}
    failures = []
    for name, (source, where, args) in cases.items():
        bad = tmp_path / f"{len(failures)}-{counts['cases']}-{source}"
        shutil.copy(root / source, bad)
        with h5py.File(bad, "a") as f:
            _sparse(f, where)
        reseal(bad)
        r = _run([*args, bad, "-q"] if args[0] != "info" else [*args, bad], site["key"])
        counts["cases"] += 1
        counts["peak MiB"] = max(counts["peak MiB"], r["rss_mib"])
        counts["slowest s"] = round(max(counts["slowest s"], r["seconds"]), 1)
        ok = clean_error(r) and "sparse or inflated dataset" in r["stderr"]
        counts["clean errors" if ok else "failures"] += 1
        if not ok:
            failures.append((name, r))
    line = report("family 7, sparse datasets", counts)
    assert not failures, (line, failures)
    assert counts["peak MiB"] < 400, line


def test_verify_list_memory_does_not_grow(site, tmp_path):
    """verify --list of 2,048 probes holds about what 256 hold (batches of 256)."""
    probe = os.path.join(site["faces"], "c01", "0.png")
    peaks = {}
    for n in (256, 2048):
        listing = tmp_path / f"{n}.txt"
        listing.write_text("".join(f"{probe}\n" for _ in range(n)))
        for command in ("verify", "identify"):
            args = [command, "--list", listing, "--gallery", site["root"] / "g.h5", "-q"]
            r = _run(args + (["--claim", "c01"] if command == "verify" else []), site["key"])
            assert r["code"] == 0, r
            assert len(r["stdout"].splitlines()) >= n
            peaks[(command, n)] = r["rss_mib"]
    report("family 7, probe batches (peak MiB)",
           {f"{c} {n}": mib for (c, n), mib in peaks.items()})
    for command in ("verify", "identify"):
        assert peaks[(command, 2048)] < peaks[(command, 256)] + 40, peaks


def _loky_workers(parent):
    """The worker processes (not the resource trackers) below ``parent`` now."""
    count = 0
    try:
        kids = parent.children(recursive=True)
    except psutil.Error:
        return 0
    for kid in kids:
        try:
            count += "LokyProcess" in " ".join(kid.cmdline())
        except psutil.Error:  # gone meanwhile
            pass
    return count


def test_jobs_are_capped_by_cores_and_clients(site, tmp_path):
    """--jobs 1000 asks for at most min(cores, clients) workers; a real compress --jobs 8
    on 4 clients starts that many. (Never a real --jobs 1000 here: without the cap it
    starts about a thousand processes, which took the shared test machine down once.)"""
    from ssgallery.learn.threads import worker_count

    cores = len(os.sched_getaffinity(0))
    assert worker_count(1000, 4) == min(cores, 4)
    assert worker_count(1000) == worker_count(-1) == cores
    assert worker_count(3, 1) == 1 and worker_count(-1, 0) == 1
    proc = subprocess.Popen([sys.executable, "-m", "ssgallery", "compress", "--store",
                             site["root"] / "e.h5", "-o", tmp_path / "g.h5", "--m", "1",
                             "--cv-folds", "0", "--max-iter", "3", "--jobs", "8", "-q"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    parent, most = psutil.Process(proc.pid), 0
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            most = max(most, _loky_workers(parent))
            time.sleep(0.05)
        err = proc.communicate(timeout=1 if proc.poll() is None else 30)[1]
    finally:  # whatever happens, nothing of this run outlives the test
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    cap = min(cores, 4)
    report("family 7, --jobs 8", {"cores": cores, "clients": 4, "workers seen at once": most})
    assert proc.returncode == 0, err
    assert 1 <= most <= cap, most
