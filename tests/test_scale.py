"""compress at scale: bounded impostor sets, parallel jobs identical to serial, resumable
runs (incremental ones, --update: tests/test_update.py)."""

import os
import subprocess
import sys
from dataclasses import replace

import h5py
import numpy as np
import pytest
from helpers import RecordProgress, assert_rounding_equal, gallery_arrays

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.app.training_sets import (
    DEFAULT_MAX_IMPOSTORS,
    cohort_distances,
    subject_means,
    training_rows,
)
from ssgallery.errors import InputError


def assert_same_gallery(a, b, rounding=False):
    """Same clients, calibration and arrays: identical, or with ``rounding`` equal but for
    floating-point rounding (`helpers.assert_rounding_equal`)."""
    A, B = gallery_arrays(a), gallery_arrays(b)
    assert sorted(A) == sorted(B)
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:  # one calibration over all clients
        for key in ("threshold_mode", "calibration"):
            assert fa.attrs[key] == fb.attrs[key], key
    for cid in A:
        for key in A[cid]:
            if rounding:
                assert_rounding_equal(A[cid][key], B[cid][key], tol=1e-4, err_msg=f"{cid}/{key}")
            else:
                np.testing.assert_array_equal(A[cid][key], B[cid][key], err_msg=f"{cid}/{key}")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from helpers import make_faces

    root = tmp_path_factory.mktemp("scale")
    faces = make_faces(str(root / "faces"), n_clients=10, n_images=5, seed=3)
    enroll(faces, root / "e.h5")
    return root / "e.h5"


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


# ----------------------------------------------------------------- resumable, incremental
def test_sigkilled_run_resumes_to_the_same_gallery(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import make_faces

    faces = make_faces(str(tmp_path / "faces"), n_clients=14, n_images=5, seed=5)
    enroll(faces, tmp_path / "e.h5")
    args = ["--store", str(tmp_path / "e.h5"), "--m", "2", "--cv-folds", "5"]
    gallery, parts = tmp_path / "g.h5", tmp_path / "g.h5.parts"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "ssgallery", "compress", *args,
                             "-o", str(gallery)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    def committed():
        return len([n for n in os.listdir(parts) if n.endswith(".npz")]) if parts.is_dir() else 0

    try:
        deadline = time.monotonic() + 120
        while committed() < 2:
            assert proc.poll() is None, "compress finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not gallery.exists()  # killed: no gallery, only committed parts
    n = committed()
    assert 2 <= n < 14
    resumed = compress(tmp_path / "e.h5", gallery, CompressOptions(m=2, cv_folds=5),
                       CompressRun(resume=True))
    assert len(resumed.resumed) == n and len(resumed.trained) == 14 - n
    assert not parts.exists()  # removed after the gallery was written
    compress(tmp_path / "e.h5", tmp_path / "whole.h5", CompressOptions(m=2, cv_folds=5))
    assert_same_gallery(gallery, tmp_path / "whole.h5")


def test_resume_ignores_parts_of_other_options(store, tmp_path):
    from ssgallery.app.parts import PartsFolder

    out = tmp_path / "g.h5"

    stop = RecordProgress(stop_at=("training clients", 2))
    with pytest.raises(KeyboardInterrupt):
        compress(store, out, CompressOptions(m=1, cv_folds=2),
                 CompressRun(clients="c00,c01,c02", progress=stop))
    assert PartsFolder(out).count() == 2
    said = []
    s = compress(store, out, CompressOptions(m=2, cv_folds=2),
                 CompressRun(clients="c00,c01,c02", resume=True, warn=said.append))
    assert s.resumed == [] and len(s.trained) == 3  # other options: nothing reused
    parts = f"{out}.parts"
    assert said == [(f"{parts}: committed parts of c00, c01: trained with other options than "
                    "this run's: trained again (to resume them, give the options they were "
                    "compressed with; those trained with `m` 1 are resumed with `m` 1)")]


def test_resume_without_parts_says_so_and_names_the_parts_beside_it(store, tmp_path,
                                                                   monkeypatch):
    """``compress --resume`` that finds no committed part (the interrupted run wrote to
    another -o, or finished) warns before training every client, and names the parts
    folders of other galleries beside it; with the parts of its own gallery it is
    silent about it."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    monkeypatch.chdir(tmp_path)
    _interrupt_after_two(store, tmp_path / "g2.h5", CompressOptions(m=1, cv_folds=0))
    args = ["compress", "--store", str(store), "--m", "1", "--cv-folds", "0", "--clients",
            "c00,c01,c02", "--resume", "-q"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert ("ssgallery: warning: gallery.h5.parts: no committed parts to resume: every client "
            "is trained; g2.h5.parts holds another gallery's: to resume it, give --output "
            "g2.h5") in r.stderr.splitlines()
    r = CliRunner().invoke(main, args + ["-o", "g2.h5"])
    assert r.exit_code == 0 and "to resume" not in r.stderr, r.output
    assert not os.path.exists("g2.h5.parts")


def test_an_interrupted_runs_note_is_one_printable_line(store, tmp_path, monkeypatch):
    """Ctrl-C of 'compress -o $'g\\n2.h5'' (a real process, SIGINT after the first
    committed part): the note naming the parts folder and the command that resumes it
    was echoed raw, on two lines ('kept in g', then '2.h5.parts; ...'); it is one line,
    the break escaped as every message's, and the command it names resumes the run."""
    import signal
    import time

    from click.testing import CliRunner

    from ssgallery.cli import main

    name, parts = "g\n2.h5", tmp_path / "g\n2.h5.parts"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "ssgallery", "compress", "--store",
                             str(store), "-o", name, "--m", "1", "--cv-folds", "0", "-q"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (parts.is_dir() and any(n.endswith(".npz") for n in os.listdir(parts))):
            assert proc.poll() is None, "compress finished before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    n = len([p for p in os.listdir(parts) if p.endswith(".npz")])
    assert proc.returncode == 130 and 1 <= n < 10, err
    note = (f"ssgallery: interrupted; {n} finished client(s) kept in g\\n2.h5.parts; "
            f"'ssgallery compress --store {store} -o 'g\\n2.h5' --resume' with the same "
            "other options continues")
    assert err.splitlines() == [note]
    monkeypatch.chdir(tmp_path)  # the command it names resumes the run
    r = CliRunner().invoke(main, ["compress", "--resume", "--store", str(store), "--output",
                                  name, "--m", "1", "--cv-folds", "0"])
    assert r.exit_code == 0 and "no committed parts" not in r.stderr, r.output
    assert (tmp_path / name).is_file() and not parts.exists()


def test_a_fresh_run_says_it_discards_the_parts_of_an_interrupted_one(store, tmp_path):
    """compress without --resume after Ctrl-C removed the committed parts and trained
    every client again without a word (hours of a large gallery): it still does, but
    says so first, naming --resume."""
    from ssgallery.app.parts import PartsFolder

    out = tmp_path / "g.h5"
    _interrupt_after_two(store, out, CompressOptions(m=1, cv_folds=0))
    said = []
    s = compress(store, out, CompressOptions(m=1, cv_folds=0),
                 CompressRun(clients="c00,c01,c02", warn=said.append))
    assert s.trained == ["c00", "c01", "c02"] and PartsFolder(out).count() == 0
    assert said == [(f"{out}.parts: 2 committed part(s) of an interrupted run are "
                     "discarded: this run trains every client (`resume` reuses them)")]


def test_a_fresh_run_names_resume_only_for_the_parts_it_would_reuse(store, tmp_path):
    """After Ctrl-C of a run at m 1, a fresh run at m 2 said the discarded parts are what
    "`resume` reuses" ('compress --m 1 -o g5.h5', Ctrl-C, then 'compress --m 2 -o g5.h5
    --clients c01,c02'): --resume would train them again (other options). It says how
    many of them --resume would reuse: all, some, or none."""
    out = tmp_path / "g.h5"
    none = "of other clients, another store or other options: `resume` would not reuse " \
        "them either"
    some = "`resume` reuses 1 of them, of this run's clients, store and options"
    for options, clients, said in ((CompressOptions(m=2, cv_folds=0), "c00,c01,c02", none),
                                   (CompressOptions(m=1, cv_folds=0), "c00,c02", some)):
        _interrupt_after_two(store, out, CompressOptions(m=1, cv_folds=0))  # c00, c01
        warned = []
        compress(store, out, options, CompressRun(clients=clients, warn=warned.append))
        assert warned[0] == (f"{out}.parts: 2 committed part(s) of an interrupted run are "
                             f"discarded: this run trains every client ({said})")


def _interrupt_after_two(store, out, options):
    """A run over c00-c02 stopped by Ctrl-C after two clients are committed."""
    with pytest.raises(KeyboardInterrupt):
        compress(store, out, options, CompressRun(
            clients="c00,c01,c02", progress=RecordProgress(stop_at=("training clients", 2))))


def test_resume_names_parts_of_another_store_and_the_between_0_hint(tmp_path):
    """Parts left by a run at ``between`` 0 (every run before its default of 0.5) are
    named with the hint that resumes them; parts of the same options made from another
    store are named as such. Both are trained again, none silently."""
    from helpers import growing_faces

    from ssgallery.app.parts import PartsFolder

    add = growing_faces(str(tmp_path))
    store, out = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(tmp_path / "faces", store)
    at_0 = CompressOptions(m=1, cv_folds=2, max_iter=3, between=0.0)
    _interrupt_after_two(store, out, at_0)
    assert PartsFolder(out).count() == 2
    said = []
    s = compress(store, out, replace(at_0, between=0.5),
                 CompressRun(clients="c00,c01,c02", resume=True, warn=said.append))
    assert s.resumed == [] and s.trained == ["c00", "c01", "c02"]
    assert said == [(f"{out}.parts: committed parts of c00, c01: trained with other options "
                    "than this run's: trained again (to resume them, give the options they "
                    "were compressed with; those trained with `between` 0 are resumed with "
                    "`between` 0)")]
    _interrupt_after_two(store, out, at_0)
    add()
    enroll(tmp_path / "faces", store, add=True)  # the store's content changes
    said = []
    s = compress(store, out, at_0, CompressRun(clients="c00,c01,c02", resume=True,
                                               warn=said.append))
    assert s.resumed == [] and len(s.trained) == 3
    assert said == [(f"{out}.parts: committed parts of c00, c01: made from another store: "
                    "trained again")]


def test_resume_names_parts_of_another_store_as_such_whatever_their_options(tmp_path):
    """A part made from another store is never resumed, whatever the options: named as
    made from another store, without the hint that ``between`` 0 would resume it (was
    named as trained with other options, with that hint, when its options differed too)."""
    from helpers import growing_faces

    add = growing_faces(str(tmp_path))
    store, out = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(tmp_path / "faces", store)
    at_0 = CompressOptions(m=1, cv_folds=2, max_iter=3, between=0.0)
    _interrupt_after_two(store, out, at_0)
    add()
    enroll(tmp_path / "faces", store, add=True)  # the store's content changes
    said = []
    s = compress(store, out, replace(at_0, between=0.5),
                 CompressRun(clients="c00,c01,c02", resume=True, warn=said.append))
    assert s.resumed == [] and s.trained == ["c00", "c01", "c02"]
    assert said == [(f"{out}.parts: committed parts of c00, c01: made from another store: "
                    "trained again")]


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
    assert_same_gallery(tmp_path / "gTrue.h5", tmp_path / "gFalse.h5")
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
