"""compress resumable: a run killed or interrupted resumes to the same gallery from the
parts it committed; parts of other options or of another store are named and trained
again, never silently (the between-0 hint where it helps); a fresh run says what it
discards. The rest of compress at scale: tests/test_scale.py."""

import os
import subprocess
import sys
from dataclasses import replace

import pytest
from helpers import RecordProgress, assert_same_gallery

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll


@pytest.fixture
def store(scale_store):
    return scale_store


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
