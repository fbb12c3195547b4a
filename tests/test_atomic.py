"""The one writer (formats/atomic.py): all or nothing, same kind only, locks, symlinks,
permission bits, stale temporaries, truthful interrupts. Real files and processes."""

import os
import stat
import subprocess
import sys
import textwrap
import time

import filelock
import pytest
from helpers import make_faces, run_at_rename

from ssgallery.errors import SsgalleryError
from ssgallery.formats.atomic import (
    TMP_MARK,
    atomic_path,
    check_writable,
    forget_written,
    lock_path,
    write_text_atomic,
    written_paths,
)


def _cli(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "ssgallery", *map(str, args)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, **(env or {})), **kwargs)


def _run(*args):
    """The CLI in this process: (exit code, output)."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def _listing(folder):
    return sorted(os.listdir(folder))


@pytest.fixture
def enrolled(tmp_path):
    """A store (3 clients) and its gallery, written by the CLI."""
    make_faces(tmp_path / "faces", n_clients=3, n_images=5)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    assert _run("enroll", tmp_path / "faces", "--store", store)[0] == 0
    assert _run("compress", "--store", store, "-o", gallery, "--m", 1, "--cv-folds", 0)[0] == 0
    return store, gallery


def test_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    write_text_atomic(target, "first")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        with open(tmp, "w") as handle:
            handle.write("half")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "first"
    assert _listing(tmp_path) == ["out.txt"]  # no temporary file left


def test_interrupt_leaves_no_file(tmp_path):
    target = tmp_path / "g.h5"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        open(tmp, "wb").close()
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_missing_folder_is_one_line_error(tmp_path):
    target = tmp_path / "nope" / "g.h5"
    for call in (lambda: check_writable(target), lambda: write_text_atomic(target, "x")):
        with pytest.raises(SsgalleryError, match="nope: folder does not exist"):
            call()


def test_output_that_is_a_folder(tmp_path):
    with pytest.raises(SsgalleryError, match="is a folder"):
        check_writable(tmp_path)


def test_special_files_are_never_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "null.h5"
    link.symlink_to("/dev/null")
    for path, what in ((fifo, r"a FIFO \(named pipe\)"), (link, "a character device"),
                       ("/dev/null", "a character device")):
        for force in (False, True):
            with pytest.raises(SsgalleryError, match=f"is {what}; refusing to replace it"):
                write_text_atomic(path, "x", force=force)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.path.islink(link)


def test_kinds_store_gallery_foreign(enrolled, tmp_path):
    """A store is never replaced by a gallery (nor the reverse), even with --force; a
    foreign file only with --force; a device never."""
    store, gallery = enrolled
    store_bytes, gallery_bytes = store.read_bytes(), gallery.read_bytes()
    for args in (["--store", store, "-o", store], ["--store", store, "-o", store, "--force"]):
        code, out = _run("compress", *args, "--m", 1, "--cv-folds", 0)
        assert code == 2 and "not an ssgallery gallery but an ssgallery enrollment store" \
            in out and len(out.splitlines()) == 1, out
    code, out = _run("enroll", tmp_path / "faces", "--store", gallery, "--force")
    assert code == 2 and "ssgallery gallery" in out, out
    assert store.read_bytes() == store_bytes and gallery.read_bytes() == gallery_bytes

    notes = tmp_path / "notes.h5"
    notes.write_text("my notes\n")
    code, out = _run("compress", "--store", store, "-o", notes, "--m", 1, "--cv-folds", 0)
    assert code == 2 and "refusing to replace it unless forced" in out
    assert notes.read_text() == "my notes\n"
    assert _run("compress", "--store", store, "-o", notes, "--m", 1, "--cv-folds", 0,
                "--force")[0] == 0
    assert notes.read_bytes()[:14] == b"SSGALLERY-SEAL"
    code, out = _run("compress", "--store", store, "-o", "/dev/null", "--force")
    assert code == 2 and "/dev/null: is a character device" in out


def test_an_existing_output_is_looked_at_through_one_open(enrolled, tmp_path):
    """check_writable decides whether an existing output may be replaced from one open
    of it: it opened a store or gallery three times to tell its kind (its encryption
    header, its seal, then HDF5 by the path again: HDF5 parsed whatever the path held
    after the seal was checked), a forced foreign file twice (its signature, then its
    format), so each look could be at another file. Now one read-only open (never
    waiting on a FIFO), and every look reads that descriptor; the answers are
    unchanged."""
    from helpers import opens_of

    from ssgallery.formats.atomic import has_prefix
    from ssgallery.formats.gallery import FORMAT as GALLERY
    from ssgallery.formats.store import FORMAT as STORE

    store, gallery = enrolled
    foreign = tmp_path / "plot.png"
    foreign.write_bytes(b"my notes\n")
    for path, kind, force, found in ((store, STORE, False, STORE),
                                     (gallery, GALLERY, False, GALLERY),
                                     (store, GALLERY, False, None),
                                     (foreign, has_prefix(b"\x89PNG"), True, None)):
        with opens_of(path) as seen:
            try:
                answer = check_writable(path, kind, force=force, encrypted=False)
            except SsgalleryError as exc:
                answer = str(exc)
        assert seen["opens"] == 1, (path, kind, seen)
        if found is None and kind == GALLERY:
            assert answer == (f"{store}: not an ssgallery gallery but an ssgallery "
                              "enrollment store; refusing to replace it, even forced "
                              "(choose another name)")
        else:
            assert answer == found


def test_report_files_of_another_kind_are_kept(tmp_path, enrolled):
    store, _ = enrolled
    out_dir = tmp_path / "report"
    out_dir.mkdir()
    (out_dir / "summary.json").write_text('{"mine": 1}\n')
    args = ["roc", "--store", store, "--methods", "svm", "--repetitions", 1, "--train-images",
            2, "--enrolled", 2, "--no-plot", "-o", out_dir]
    code, out = _run(*args)
    assert code == 2 and "summary.json: exists and is not an output of this kind" in out, out
    assert (out_dir / "summary.json").read_text() == '{"mine": 1}\n'
    assert _run(*args, "--force")[0] == 0
    assert _run(*args)[0] == 0  # now it is roc's own summary: replaced freely


def test_symlinked_output_updates_its_target(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "g.txt").write_text("old")
    link = tmp_path / "g.txt"
    link.symlink_to(real / "g.txt")
    write_text_atomic(link, "new")
    assert os.path.islink(link) and (real / "g.txt").read_text() == "new"
    assert _listing(real) == ["g.txt"] and _listing(tmp_path) == ["g.txt", "real"]


def test_permission_bits_kept_new_files_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        new = tmp_path / "new.txt"
        write_text_atomic(new, "x")
        assert stat.S_IMODE(os.stat(new).st_mode) == 0o644
        os.chmod(new, 0o640)
        write_text_atomic(new, "y")
        assert stat.S_IMODE(os.stat(new).st_mode) == 0o640 and new.read_text() == "y"
    finally:
        os.umask(old)


def test_stale_temporary_of_a_killed_run_is_removed(tmp_path):
    """SIGKILL a real writer in the middle of a write; the next writer removes its
    temporary file and keeps a live process's one."""
    target = tmp_path / "out.txt"
    code = textwrap.dedent(f"""
        import time
        from ssgallery.formats.atomic import atomic_path
        with atomic_path({str(target)!r}) as tmp:
            open(tmp, "wb").write(b"half")
            print(tmp, flush=True)
            time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tmp = child.stdout.readline().strip()
    child.kill()
    child.wait(timeout=10)
    assert os.path.basename(tmp).startswith("out.txt" + TMP_MARK) and os.path.exists(tmp)
    live = tmp_path / f"out.txt{TMP_MARK}{os.getppid()}-feed"  # a live process's
    live.write_bytes(b"")
    write_text_atomic(target, "done")
    assert not os.path.exists(tmp) and live.exists() and target.read_text() == "done"


def _wait_for(path, text, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return True
        time.sleep(0.1)
    return False


def test_concurrent_enroll_add_both_land(tmp_path):
    """Two real `enroll --add` processes on one store: the second waits for the lock,
    re-reads the store and appends; both clients are in the store at the end."""
    from ssgallery.formats.store import load_store

    make_faces(tmp_path / "faces", n_clients=3, n_images=4)
    make_faces(tmp_path / "a", n_clients=1, n_images=4, seed=1, prefix="a")
    make_faces(tmp_path / "b", n_clients=1, n_images=4, seed=2, prefix="b")
    store = tmp_path / "e.h5"
    assert _cli("enroll", tmp_path / "faces", "--store", store).returncode == 0
    held = filelock.FileLock(lock_path(store))
    held.acquire()  # both runs must wait for it: they truly overlap
    procs = []
    try:
        for name in ("a", "b"):
            with open(tmp_path / f"{name}.err", "w") as err:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "ssgallery", "enroll", str(tmp_path / name),
                     "--add", "--store", str(store)], stdout=subprocess.DEVNULL, stderr=err))
        for name in ("a", "b"):
            assert _wait_for(tmp_path / f"{name}.err", "another ssgallery run is writing it")
        assert all(p.poll() is None for p in procs)
    finally:
        held.release()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert sorted(load_store(store).clients) == ["a00", "b00", "c00", "c01", "c02"]


def test_lock_timeout_fails_clearly(tmp_path):
    make_faces(tmp_path / "faces", n_clients=3, n_images=4)
    store = tmp_path / "e.h5"
    with filelock.FileLock(lock_path(store)):
        r = _cli("enroll", tmp_path / "faces", "--store", store,
                 env={"SSGALLERY_LOCK_TIMEOUT": "0.5"})
    assert r.returncode == 2 and not store.exists()
    assert r.stderr.strip().splitlines()[-1].startswith(f"ssgallery: error: {store}: another "
                                                        "ssgallery run has been writing it")


def test_lock_files_are_hidden_beside_their_outputs(tmp_path):
    """A store's and a gallery's lock file stay after the run (removing one is unsafe,
    filelock's rule), and 'e.h5.lock', 'g.h5.lock' sat beside the outputs, also after a
    failed run that wrote nothing: now '.e.h5.lock', '.g.h5.lock', which ls and globs do
    not show; a held one still makes another run wait and give up (its line names it)."""
    make_faces(tmp_path / "faces", n_clients=3, n_images=4)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"

    def shown():
        return [n for n in _listing(tmp_path) if not n.startswith(".")]

    bad = tmp_path / "bad"
    make_faces(bad, n_clients=3, n_images=4)
    (bad / "c01" / "notes.txt").write_text("not a face\n", encoding="utf-8")
    assert _run("enroll", bad, "--store", tmp_path / "x.h5")[0] == 2
    assert shown() == ["bad", "faces"]
    assert _run("enroll", tmp_path / "faces", "--store", store)[0] == 0
    assert _run("compress", "--store", store, "-o", gallery, "--m", 1, "--cv-folds", 0)[0] == 0
    assert shown() == ["bad", "e.h5", "faces", "g.h5"]
    assert _listing(tmp_path)[:3] == [".e.h5.lock", ".g.h5.lock", ".x.h5.lock"]
    assert lock_path(store) == str(tmp_path / ".e.h5.lock")
    with filelock.FileLock(lock_path(gallery)):
        r = _cli("compress", "--store", store, "-o", gallery, "--m", 1, "--cv-folds", 0,
                 env={"SSGALLERY_LOCK_TIMEOUT": "0.5"})
    assert r.returncode == 2, r.stderr
    assert f"(lock {tmp_path / '.g.h5.lock'})" in r.stderr.splitlines()[-1]


def test_a_lock_file_that_is_a_symbolic_link_is_named_as_one(tmp_path):
    """The hidden lock '.e.h5.lock' is easy to miss in a shared folder: one planted as a
    symbolic link (to a file of the user's) was refused as 'cannot take the lock ...
    (Too many levels of symbolic links)', filelock's O_NOFOLLOW error. Now the line says
    what it is and what to do; the link's target is untouched and no store is written."""
    make_faces(tmp_path / "faces", n_clients=3, n_images=4)
    store, mine = tmp_path / "e.h5", tmp_path / "notes.txt"
    mine.write_text("mine\n", encoding="utf-8")
    os.symlink(mine, lock_path(store))
    code, output = _run("enroll", tmp_path / "faces", "--store", store, "-q")
    want = (f"ssgallery: error: {store}: cannot take the lock {lock_path(store)} (it is a "
            "symbolic link, which a writer never follows: remove it)\n")
    assert (code, output) == (2, want)
    assert mine.read_text(encoding="utf-8") == "mine\n" and not store.exists()


SIGNAL_AT_RENAME = """
import os, signal, sys
real = os.replace
def replace(a, b):
    if b.endswith(".h5"):
        os.kill(os.getpid(), signal.SIG{when})
    real(a, b)
os.replace = replace
from ssgallery.cli import main
main(sys.argv[1:], prog_name="ssgallery")
"""


@pytest.mark.parametrize("sig", ["TERM", "INT"])
def test_signal_during_final_rename_is_truthful(tmp_path, sig):
    """The signal arrives while the store is being renamed into place: the rename
    completes (signals are held back around it), exit 130, and the message says the
    store was replaced."""
    from ssgallery.formats.store import load_store

    make_faces(tmp_path / "faces", n_clients=3, n_images=4)
    store = tmp_path / "e.h5"
    r = subprocess.run([sys.executable, "-c", SIGNAL_AT_RENAME.format(when=sig), "enroll",
                        str(tmp_path / "faces"), "--store", str(store)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == f"ssgallery: interrupted after writing {store} (complete, " \
        "replaced)"
    assert len(load_store(store).clients) == 3


def test_written_paths_records_replacements(tmp_path):
    forget_written()
    write_text_atomic(tmp_path / "a.txt", "a")
    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "b.txt"):
        raise KeyboardInterrupt
    assert written_paths() == [str(tmp_path / "a.txt")]
    forget_written()
    assert written_paths() == []


def test_a_gallery_of_a_newer_version_is_never_replaced(enrolled, tmp_path):
    """compress looked at an existing gallery's format tag only: one of a newer
    format_version, which this ssgallery refuses to read ('format version 99 is newer
    than this ssgallery supports'), was replaced without --force, exit 0 (main). Now it
    is kept, even forced, as enroll keeps a newer store (its reader refuses it): one
    line naming the file, exit 2, the file unchanged."""
    import h5py
    import numpy as np
    from helpers import rehash_gallery, rehash_store

    store, gallery = enrolled
    for path, rehash in ((store, rehash_store), (gallery, rehash_gallery)):
        with h5py.File(path, "a") as f:
            f.attrs["format_version"] = np.int64(99)
        rehash(path)
    store_bytes, gallery_bytes = store.read_bytes(), gallery.read_bytes()
    fresh = tmp_path / "e2.h5"
    assert _run("enroll", tmp_path / "faces", "--store", fresh)[0] == 0
    for args, path, kind, newest in (
            (["compress", "--store", fresh, "-o", gallery, "--m", 1, "--cv-folds", 0],
             gallery, "gallery", 3),
            (["enroll", tmp_path / "faces", "--store", store], store, "enrollment store", 2)):
        for force in ([], ["--force"]):
            line = (f"ssgallery: error: {path}: an ssgallery {kind} of format version 99, "
                    f"newer than this ssgallery reads ({newest}); refusing to replace it, "
                    "even forced (upgrade ssgallery, or choose another name)\n")
            assert _run(*args, *force) == (2, line)
    assert store.read_bytes() == store_bytes and gallery.read_bytes() == gallery_bytes


def test_a_report_file_never_replaces_a_store_written_after_its_check(tmp_path):
    """roc's report files were written without the output's lock: checked writable (no file
    there), then written to a temporary file and renamed. A second process, enroll writing
    a store at that path meanwhile (it takes the lock: nobody held it), wrote its store
    (exit 0), and the report's rename then replaced it: the store enroll had just reported
    written was gone, replaced by a file of another kind, which no writer may overwrite.
    roc's report files (summary.json, curves.csv, the plots) now hold the output's lock
    from their check to their rename, as stores and galleries do: the other writer waits
    for it (here: times out after 1 s, exit 2). The second process is real, started by an
    audit hook at the rename of roc's summary.json (no code of ssgallery replaced)."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    make_faces(tmp_path / "faces", n_clients=3, n_images=5)
    scores = tmp_path / "s.txt"
    scores.write_text("a a p1 0.9\na b p2 0.1\nb b p3 0.8\nb a p4 0.2\n")
    target = tmp_path / "out" / "summary.json"
    command = [sys.executable, "-m", "ssgallery", "enroll", str(tmp_path / "faces"),
               "--store", str(target), "-q"]
    with run_at_rename(target, command) as results:
        roc = CliRunner().invoke(main, ["roc", "--scores", str(scores), "-o",
                                        str(tmp_path / "out"), "--no-plot", "-q"])
    (enrolled,) = results
    assert roc.exit_code == 0, roc.output
    store_there = target.read_bytes()[:1] != b"{"
    assert enrolled.returncode != 0 or store_there, \
        "enroll said it wrote the store, and roc's summary.json replaced it"
    assert enrolled.returncode == 2 and "another ssgallery run" in enrolled.stderr, \
        enrolled.stderr
