"""compress at scale: bounded impostor sets, parallel jobs identical to serial (resumable
runs: tests/test_resume.py; incremental ones, --update: tests/test_update.py)."""

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from helpers import assert_same_gallery, gallery_arrays

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.app.training_sets import (
    DEFAULT_MAX_IMPOSTORS,
    cohort_distances,
    subject_means,
    training_rows,
)
from ssgallery.errors import InputError


@pytest.fixture
def store(scale_store):
    return scale_store


# ----------------------------------------------------------------- training sets
def test_uncapped_rows_are_every_row_in_store_order():
    codes = np.repeat(np.arange(5), 4)
    rows, capped = training_rows(codes, 2, max_impostors=16)
    assert not capped and rows.tolist() == list(range(20))
    rows, capped = training_rows(codes, 2, max_impostors=0)
    assert not capped and len(rows) == 20


def test_sample_is_stratified_seeded_and_per_client():
    codes = np.repeat(np.arange(30), [3 + (s % 4) for s in range(30)])
    rows, capped = training_rows(codes, 7, max_impostors=40, seed=1, client_id="c07")
    assert capped and np.all(np.diff(rows) > 0)
    own = np.flatnonzero(codes == 7)
    assert set(own) <= set(rows) and len(rows) == len(own) + 40
    per_subject = np.bincount(codes[rows][codes[rows] != 7], minlength=30)
    per_subject = np.delete(per_subject, 7)
    assert per_subject.min() >= 1 and per_subject.max() - per_subject.min() <= 1  # 29 subjects
    again, _ = training_rows(codes, 7, max_impostors=40, seed=1, client_id="c07")
    np.testing.assert_array_equal(rows, again)
    other, _ = training_rows(codes, 7, max_impostors=40, seed=2, client_id="c07")
    assert not np.array_equal(rows, other)
    few, _ = training_rows(codes, 7, max_impostors=10, seed=1, client_id="c07")
    assert len(np.unique(codes[few])) == 11  # 10 impostor subjects, one image each


def test_cohort_takes_the_nearest_subjects():
    codes = np.repeat(np.arange(6), 3)
    centres = np.array([0.0, 10.0, 1.0, 5.0, 2.0, 20.0])
    F = (centres[codes] + np.tile([-0.1, 0.0, 0.1], 6))[:, None]
    means = subject_means(codes, [(0, F[:7]), (7, F[7:])])
    np.testing.assert_allclose(means[:, 0], centres)
    rows, capped = training_rows(codes, 0, max_impostors=6, impostors="cohort",
                                 subject_distance=cohort_distances(means))
    assert capped and sorted(set(codes[rows])) == [0, 2, 4]  # the two nearest subjects


# ----------------------------------------------------------------- compress
def test_cap_recorded_in_provenance_and_uncapped_default(store, tmp_path):
    from ssgallery.formats.gallery import read_gallery

    s = compress(store, tmp_path / "cap.h5", CompressOptions(m=1, max_impostors=12, cv_folds=2),
                 CompressRun(clients="c01,c02"))
    prov = read_gallery(tmp_path / "cap.h5").clients["c01"].provenance
    assert prov["n_impostor"] == 12 and prov["impostors_capped"]
    assert prov["max_impostors"] == 12 and prov["impostors"] == "sample"
    assert [r["n_impostor"] for r in s.clients] == [12, 12]
    compress(store, tmp_path / "all.h5", CompressOptions(m=1, cv_folds=2),
             CompressRun(clients="c01"))
    prov = read_gallery(tmp_path / "all.h5").clients["c01"].provenance
    assert prov["n_impostor"] == 45 and not prov["impostors_capped"]
    assert prov["max_impostors"] == DEFAULT_MAX_IMPOSTORS
    with pytest.raises(InputError, match="impostors must be one of"):
        compress(store, tmp_path / "x.h5", CompressOptions(impostors="nearest"))


@pytest.mark.parametrize("max_impostors", [0, 20])
def test_threshold_cv_leaves_the_trained_models_unchanged(store, tmp_path, max_impostors):
    # benchmarks/_scale_accuracy.py skips the threshold CV when it measures EERs
    opts = {"m": 2, "max_impostors": max_impostors, "seed": 1}
    run = CompressRun(clients="c00,c03")
    compress(store, tmp_path / "cv.h5", CompressOptions(cv_folds=3, **opts), run)
    compress(store, tmp_path / "no.h5", CompressOptions(cv_folds=0, **opts), run)
    A, B = gallery_arrays(tmp_path / "cv.h5"), gallery_arrays(tmp_path / "no.h5")
    for cid in ("c00", "c03"):
        for key in ("prototypes", "beta", "intercept"):
            np.testing.assert_array_equal(A[cid][key], B[cid][key], err_msg=f"{cid}/{key}")
        assert A[cid]["threshold"] != B[cid]["threshold"]


def test_jobs_2_gives_the_same_gallery_as_jobs_1(store, tmp_path):
    opts = CompressOptions(m=2, max_impostors=20, cv_folds=3)
    clients = "c00,c01,c02,c03,c04"
    one = compress(store, tmp_path / "one.h5", opts, CompressRun(clients=clients, jobs=1))
    two = compress(store, tmp_path / "two.h5", opts, CompressRun(clients=clients, jobs=2))
    assert_same_gallery(tmp_path / "one.h5", tmp_path / "two.h5")
    assert [r["client"] for r in one.clients] == [r["client"] for r in two.clients]
    cohort = compress(store, tmp_path / "cohort.h5", replace(opts, impostors="cohort"),
                      CompressRun(clients=clients, jobs=2))
    assert all(r["n_impostor"] == 20 for r in cohort.clients)
    # uncapped, with the fold refits: the features, S(X, X) and the shared refits go to
    # the workers once (memory-mapped), each client's own fold is refitted there
    opts = replace(opts, max_impostors=0)
    compress(store, tmp_path / "one.h5", opts, CompressRun(clients=clients, jobs=1))
    compress(store, tmp_path / "two.h5", opts, CompressRun(clients=clients, jobs=2))
    assert_same_gallery(tmp_path / "one.h5", tmp_path / "two.h5", rounding=True)


def test_dask_local_cluster_gives_the_serial_gallery(store, tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="the 'distributed' extra is not installed")
    from distributed import LocalCluster

    opts, clients = CompressOptions(m=2, max_impostors=20, cv_folds=3), "c00,c01,c02,c03"
    # capped; and uncapped with the fold refits, whose shared blocks are scattered once
    uncapped = replace(opts, max_impostors=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        s = compress(store, tmp_path / "dask.h5", opts,
                     CompressRun(clients=clients, scheduler=cluster.scheduler_address))
        compress(store, tmp_path / "dask-all.h5", uncapped,
                 CompressRun(clients=clients, scheduler=cluster.scheduler_address))
    assert s.scheduler == cluster.scheduler_address
    compress(store, tmp_path / "serial.h5", opts, CompressRun(clients=clients))
    assert_same_gallery(tmp_path / "dask.h5", tmp_path / "serial.h5", rounding=True)
    compress(store, tmp_path / "serial-all.h5", uncapped, CompressRun(clients=clients))
    assert_same_gallery(tmp_path / "dask-all.h5", tmp_path / "serial-all.h5", rounding=True)
    from ssgallery.app import parallel

    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", "2s")
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        compress(store, tmp_path / "x.h5", opts,
                 CompressRun(clients=clients, scheduler="tcp://127.0.0.1:9"))


# ----------------------------------------------------------------- black-box matchers
def test_served_external_matcher_same_gallery_far_fewer_program_runs(tmp_path):
    import sys
    from pathlib import Path

    from helpers import make_faces

    serve_mad = [sys.executable, str(Path(__file__).parent / "matchers" / "serve_mad.py")]
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, seed=2,
                       shape=(16, 12))
    runs = {}
    for serve in (True, False):
        store = tmp_path / f"e{serve}.h5"
        enroll(faces, store, matcher="external",
               matcher_options={"command": serve_mad, "serve": serve})
        s = compress(store, tmp_path / f"g{serve}.h5",
                     CompressOptions(m=1, cv_folds=0, max_iter=2),
                     CompressRun(matcher_cmd=serve_mad))
        runs[serve] = s.program_runs
    assert_same_gallery(tmp_path / "gTrue.h5", tmp_path / "gFalse.h5", same_store=False)
    # enroll's matcher may have started the shared program already: at most one start
    assert runs[True]["starts"] <= 1 and runs[False]["starts"] == runs[False]["calls"]
    assert runs[False]["starts"] >= 10 and runs[True]["calls"] == runs[False]["calls"]



def _faults_under_dasks_settings(code):
    """The integers ``code`` prints, run in a Python started as Dask's nanny starts a
    worker (``MALLOC_TRIM_THRESHOLD_`` set)."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=True)
    return [int(v) for v in r.stdout.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_large_arrays_on_heap_stops_page_faults_under_dasks_allocator_settings():
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_ set, which freezes glibc's
    # mmap threshold: every 1 MiB array is a new mmap, 256 page faults each
    code = ("import contextlib, resource, threading\n"
            "import numpy as np\n"
            "from ssgallery.learn.threads import large_arrays_on_heap\n"
            "def faults(context):\n"
            "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    with context:\n"
            "        for _ in range(200):\n"
            "            np.ones(1 << 17).sum()\n"
            "    out.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
            "out = []\n"
            "for context in (contextlib.nullcontext(), large_arrays_on_heap(),\n"
            "                contextlib.nullcontext()):\n"
            "    t = threading.Thread(target=faults, args=(context,))\n"
            "    t.start(); t.join()\n"
            "print(*out)\n")
    plain, heap, after = _faults_under_dasks_settings(code)
    assert plain >= 200 * 200  # about 256 per array
    assert heap < plain / 10
    assert after >= 200 * 200  # the process's own settings are back on leaving


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_large_arrays_on_heap_holds_while_any_thread_of_a_worker_is_inside():
    # a Dask worker with several threads runs jobs side by side: one job ending must not
    # hand the others back to a fresh mmap per array
    code = ("import resource, threading\n"
            "import numpy as np\n"
            "from ssgallery.learn.threads import large_arrays_on_heap\n"
            "inside, other_done, out = threading.Event(), threading.Event(), []\n"
            "def long_job():\n"
            "    with large_arrays_on_heap():\n"
            "        inside.set(); other_done.wait()\n"
            "        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt\n"
            "        for _ in range(200):\n"
            "            np.ones(1 << 17).sum()\n"
            "        out.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)\n"
            "def short_job():\n"
            "    inside.wait()\n"
            "    with large_arrays_on_heap():\n"
            "        np.ones(1 << 17).sum()\n"
            "    other_done.set()\n"
            "threads = [threading.Thread(target=f) for f in (long_job, short_job)]\n"
            "for t in threads: t.start()\n"
            "for t in threads: t.join()\n"
            "print(*out)\n")
    (faults,) = _faults_under_dasks_settings(code)
    assert faults < 200 * 200 / 10  # about 256 page faults per array without the heap
