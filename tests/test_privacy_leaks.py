"""Where decrypted data could slip out (issue 23): a plain file written over an encrypted
one (a silent downgrade), and the files local workers share."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions, CompressRun
from ssgallery.cli import main
from ssgallery.errors import FormatError, InputError
from ssgallery.formats import encryption
from ssgallery.learn.threads import memmap_options, ram_folder

ONE = CompressOptions(m=2, cv_folds=0)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """The same faces enrolled plain and encrypted, and an encrypted gallery."""
    root = tmp_path_factory.mktemp("keyed")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=4)
    key = root / "privacy.key"
    key.write_bytes(os.urandom(32))
    enroll(faces, root / "plain.h5")
    enroll(faces, root / "enc.h5", privacy_key_file=str(key))
    compress(root / "enc.h5", root / "g.h5", ONE, CompressRun(privacy_key_file=str(key)))
    return root, key


def _one_line(result, *needles):
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith("ssgallery: error: ") and "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_compress_without_the_key_never_writes_a_plain_gallery_over_an_encrypted_one(
        keyed, tmp_path):
    """Without the privacy key: an encrypted store is refused; a plain store compressed
    onto an encrypted gallery is refused before any training, even with --force, and the
    encrypted gallery is left as it was; the library writer refuses it too."""
    from ssgallery.formats.gallery.protected import rewrite_gallery

    root, key = keyed
    gallery = tmp_path / "g.h5"
    gallery.write_bytes((root / "g.h5").read_bytes())
    before = gallery.read_bytes()
    runner = CliRunner()
    base = ["compress", "--m", "2", "--cv-folds", "0", "-o", str(gallery)]
    _one_line(runner.invoke(main, [*base, "--store", str(root / "enc.h5")]),
              "enc.h5", "needs the privacy key")
    for extra in ([], ["--force"]):
        result = runner.invoke(main, [*base, "--store", str(root / "plain.h5"), *extra])
        _one_line(result, "g.h5", "is encrypted", "plaintext", "--privacy-key-file")
        assert gallery.read_bytes() == before
    assert not (tmp_path / "g.h5.parts").exists()  # refused before training anyone
    with pytest.raises(FormatError, match="is encrypted"):
        rewrite_gallery(root / "g.h5", gallery, privacy_key=None, force=True)
    assert gallery.read_bytes() == before
    # with the key, the same command replaces it (encrypted again)
    ok = runner.invoke(main, [*base, "--store", str(root / "plain.h5"),
                              "--privacy-key-file", str(key)])
    assert ok.exit_code == 0, ok.output
    assert gallery.read_bytes().startswith(encryption.MAGIC) and gallery.read_bytes() != before


def test_enroll_without_the_key_never_writes_a_plain_store_over_an_encrypted_one(
        keyed, tmp_path):
    root, _ = keyed
    store = tmp_path / "enc.h5"
    store.write_bytes((root / "enc.h5").read_bytes())
    before = store.read_bytes()
    runner = CliRunner()
    for extra in ([], ["--force"], ["--add"]):
        result = runner.invoke(main, ["enroll", str(root / "faces"), "--store", str(store),
                                      *extra])
        _one_line(result, "enc.h5", "privacy key")
        assert store.read_bytes() == before


def test_resume_without_the_key_over_encrypted_parts_is_refused(keyed, tmp_path):
    """The parts of an interrupted keyed run hold encrypted templates: a run without the
    key that resumes there would redo them in plaintext; it is refused before training,
    and the parts are kept."""
    root, _ = keyed
    parts = tmp_path / "g.h5.parts"
    parts.mkdir()
    part = parts / ("0" * 32 + ".npz")
    part.write_bytes(encryption.encrypt(b"a client's template", "ssgallery-part",
                                        os.urandom(32)))
    with pytest.raises(InputError, match="parts encrypted with a privacy key"):
        compress(root / "plain.h5", tmp_path / "g.h5", ONE, CompressRun(resume=True))
    assert part.exists() and not (tmp_path / "g.h5").exists()
    compress(root / "plain.h5", tmp_path / "g.h5", ONE)  # not resuming: starts afresh
    assert not parts.exists()


_WHERE = """if True:
    import json, sys
    import numpy as np
    from ssgallery.app.parallel import run_jobs

    def where(job, shared):
        return getattr(shared, "filename", None)

    shared = np.arange(400_000, dtype=np.float64)  # 3.2 MB: joblib memory-maps it
    found = run_jobs(where, range(4), n_jobs=2, shared=shared, n_tasks=4,
                     private=sys.argv[1] == "private")
    print(json.dumps(sorted({str(f) for f in found})))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="local workers need 2 cores")
def test_private_runs_never_share_arrays_through_the_disk(tmp_path):
    """joblib memory-maps a large shared array to a file every local worker maps: in
    $JOBLIB_TEMP_FOLDER (here a folder on disk) for a plain run; for a run with the
    privacy key, only in a RAM file system (/dev/shm when it is tmpfs), else nowhere
    (pickled to the workers). Real loky workers, in a child process (its workers end
    with it)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    env = dict(os.environ, JOBLIB_TEMP_FOLDER=str(disk), OMP_NUM_THREADS="1")
    runs = {}
    for mode in ("plain", "private"):
        out = subprocess.run([sys.executable, "-c", _WHERE, mode], env=env, timeout=120,
                             capture_output=True, text=True, check=True)
        runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    (plain,) = runs["plain"]
    assert plain.startswith(str(disk)), runs  # the control: joblib does map it to disk
    (private,) = runs["private"]
    ram = ram_folder()
    if ram is None:
        assert private == "None", runs
    else:
        assert private.startswith(ram + os.sep), runs
    assert not any(disk.iterdir())


def test_ram_folder_is_a_ram_file_system_mount_point_only(tmp_path):
    folder = tmp_path / "shm"
    folder.mkdir()
    mounts = tmp_path / "mounts"
    for kind, expected in (("tmpfs", str(folder)), ("ramfs", str(folder)), ("ext4", None)):
        mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\n{kind} {folder} {kind} rw 0 0\n")
        assert ram_folder(str(folder), str(mounts)) == expected
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n")  # a folder on the root disk
    assert ram_folder(str(folder), str(mounts)) is None
    assert ram_folder(str(folder), str(tmp_path / "absent")) is None
    assert memmap_options(False) == {}
    assert memmap_options(True) in ({"temp_folder": ram_folder()}, {"max_nbytes": None})


_PROTOCOL = """if True:
    import json, os, sys, threading, time
    import numpy as np
    from ssgallery.biometrics.protocol import run_protocol
    from ssgallery.biometrics.protocol_options import ProtocolOptions

    seen, done = set(), threading.Event()

    def watch():  # every entry that appears in $JOBLIB_TEMP_FOLDER during the run
        while not done.is_set():
            for root, dirs, files in os.walk(os.environ["JOBLIB_TEMP_FOLDER"]):
                seen.update(os.path.join(root, f) for f in files + dirs)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rng = np.random.default_rng(0)
    faces = rng.uniform(0, 255, size=(42, 1, 24, 20)) + rng.normal(0, 20, (42, 11, 24, 20))
    labels = np.repeat([f"s{i:02d}" for i in range(42)], 11)
    options = ProtocolOptions(methods=("svm",), n_enrolled=40, n_train=10, repetitions=1,
                              n_jobs=2, identification=False)
    # 400 training images: S(X, X) is 1.3 MB, above joblib's 1 MB memory-map floor
    run_protocol(np.clip(faces, 0, 255).reshape(-1, 24, 20), labels, options,
                 private=sys.argv[1] == "private")
    done.set()
    watcher.join()
    print(json.dumps(sorted(seen)))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="local workers need 2 cores")
def test_roc_on_private_images_never_shares_them_through_the_disk(tmp_path):
    """The roc protocol's client fits (roc --jobs on a store read with the privacy key):
    a plain run memory-maps S(X, X) into $JOBLIB_TEMP_FOLDER on disk (the control), a
    private one never writes there."""
    seen = {}
    for mode in ("plain", "private"):
        disk = tmp_path / mode
        disk.mkdir()
        env = dict(os.environ, JOBLIB_TEMP_FOLDER=str(disk), OMP_NUM_THREADS="1")
        out = subprocess.run([sys.executable, "-c", _PROTOCOL, mode], env=env, timeout=300,
                             capture_output=True, text=True, check=True)
        seen[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    assert any(name.endswith(".pkl") for name in seen["plain"]), seen
    assert seen["private"] == [], seen
