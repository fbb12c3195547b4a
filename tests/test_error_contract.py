"""One error contract (issue 8, part A): exit statuses, internal errors, hostile images and
special files, names that are not UTF-8 or hold control characters, ulimit -f.
Real files, real special files, real processes."""

import os
import resource
import shutil
import subprocess
import sys

import click
import numpy as np
import pytest
from click.testing import CliRunner
from helpers import make_faces
from PIL import Image

from ssgallery.cli import main
from ssgallery.errors import EXIT_INPUT, EXIT_INTERNAL
from ssgallery.images.ingest import MAX_IMAGE_PIXELS


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("contract")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=4)
    for args in (["enroll", faces, "--store", str(root / "e.h5")],
                 ["compress", "--store", str(root / "e.h5"), "-o", str(root / "g.h5"),
                  "--cv-folds", "0"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
    return root, faces


def _one_line(result, status, *needles):
    assert result.exit_code == status, result.output
    err = result.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def _verify(built, *probes, claim="c01"):
    root, _ = built
    return CliRunner().invoke(main, ["verify", *map(str, probes), "--claim", claim,
                                     "--gallery", str(root / "g.h5")])


def test_internal_error_is_one_line_exit_4_and_debug_shows_the_traceback(monkeypatch):
    @click.command("crash-for-test")
    def crash():
        return 1 / 0

    main.add_command(crash)
    try:
        r = CliRunner().invoke(main, ["crash-for-test"])
        _one_line(r, EXIT_INTERNAL, "ssgallery: internal error: ZeroDivisionError: division "
                  "by zero (please report it; 'ssgallery --debug crash-for-test ...' or "
                  "SSGALLERY_DEBUG=1 shows the traceback)")  # --debug after the command is
        # no option of it: the line said '--debug shows the traceback', and the command
        # typed again with --debug at its end was 'No such option'
        assert CliRunner().invoke(main, ["crash-for-test", "--debug"]).exit_code == 2
        for args, env in ((["--debug", "crash-for-test"], {}),
                          (["crash-for-test"], {"SSGALLERY_DEBUG": "1"})):
            r = CliRunner().invoke(main, args, env=env)
            assert r.exit_code == EXIT_INTERNAL
            assert "Traceback" in r.stderr and "1 / 0" in r.stderr
            assert r.stderr.rstrip().splitlines()[-1].startswith("ssgallery: internal error")
    finally:
        main.commands.pop("crash-for-test")


def test_lab_tiff_probe_and_skip_bad(built, tmp_path):
    lab = tmp_path / "lab.tif"
    Image.new("LAB", (24, 32), (50, 10, 10)).save(lab)
    _one_line(_verify(built, lab), EXIT_INPUT, "lab.tif", "image mode LAB")
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3)
    Image.new("LAB", (24, 32)).save(os.path.join(faces, "c00", "9.tif"))
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5")])
    _one_line(r, EXIT_INPUT, "9.tif", "image mode LAB", "--skip-bad")
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5"),
                                  "--skip-bad", "--json"])
    assert r.exit_code == 0 and "9.tif" in r.stderr and "skipped" in r.stderr, r.output


def test_special_files_are_refused_at_once(built, tmp_path):
    fifo = tmp_path / "probe.png"
    os.mkfifo(fifo)
    listing = tmp_path / "list.txt"
    listing.write_text("/dev/zero\n")
    root, _ = built
    cli = [sys.executable, "-m", "ssgallery", "verify", "--claim", "c01", "--gallery",
           str(root / "g.h5")]
    for extra, needle in (([str(fifo)], "a FIFO"), (["/dev/zero"], "a character device"),
                          (["--list", "/dev/zero"], "a character device"),
                          (["--list", str(fifo)], "a FIFO"), ([str(tmp_path)], "a folder")):
        run = subprocess.run(cli + extra, capture_output=True, text=True, timeout=60,
                             check=False)
        assert run.returncode == EXIT_INPUT, run.stderr
        assert needle in run.stderr and run.stderr.count("\n") == 1, run.stderr
    run = subprocess.run(cli + ["--list", str(listing)], capture_output=True, text=True,
                         timeout=60, check=False)  # a list naming /dev/zero
    assert run.returncode == EXIT_INPUT and "/dev/zero: image is a character device" \
        in run.stderr, run.stderr


def test_image_size_limits(built, tmp_path):
    for side in (int(np.sqrt(MAX_IMAGE_PIXELS)) + 100, 12000):  # just over; the issue's
        bomb = tmp_path / f"blank{side}.png"
        Image.new("L", (side, side)).save(bomb, optimize=True)
        assert bomb.stat().st_size < 1 << 20  # small file, huge image
        _one_line(_verify(built, bomb), EXIT_INPUT, f"blank{side}.png: image too large",
                  f"at most {MAX_IMAGE_PIXELS} pixels")
    big = tmp_path / "big.png"
    with open(big, "wb") as handle:
        handle.truncate((64 << 20) + 1)  # sparse: nothing is written, nothing is read
    _one_line(_verify(built, big), EXIT_INPUT, "big.png: image is too large (67108865 bytes")


def test_names_cannot_fake_output_lines(built, tmp_path):
    _, faces = built
    evil = tmp_path / "x.png\nc01  score +9.0000  threshold +0.0000  ACCEPT"
    shutil.copy(os.path.join(faces, "c02", "0.png"), evil)
    r = _verify(built, evil)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and lines[0].endswith("REJECT") and "\\n" in lines[0]
    r = _verify(built, evil, claim="no\x1b[2Jbody")
    _one_line(r, EXIT_INPUT, "unknown client 'no\\x1b[2Jbody'")


@pytest.mark.parametrize("name, problem", [
    (b"caf\xe9", "not valid UTF-8"), (b"a\x1bb", "control character"),
    (b"a\\b", "slash"), (b" s1", "white space")])
def test_client_folder_names_are_checked_before_any_work(tmp_path, name, problem):
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3)
    os.rename(os.path.join(faces, "c01"), os.path.join(os.fsencode(faces), name))
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5")])
    err = _one_line(r, EXIT_INPUT, problem)
    assert "\x1b" not in err and "\udce9" not in err
    assert not (tmp_path / "e.h5").exists()


def test_file_names_that_are_not_utf8(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3)
    os.rename(os.path.join(faces, "c01", "0.png"),
              os.path.join(os.fsencode(faces), b"c01", b"\xff.png"))
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5")])
    _one_line(r, EXIT_INPUT, "\\xff.png", "not valid UTF-8")


@pytest.mark.parametrize("args, needle", [
    (["-O", "variance=abc"], "eigenface: variance must be a number in (0, 1], got 'abc'"),
    (["-O", "n_components=2.5"], "n_components must be an integer"),
    (["--matcher-cmd", "x 'unclosed"], "cannot parse the matcher command"),
    (["--matcher-cmd", "true", "-O", "timeout_base=abc"],
     "external matcher option timeout_base must be a finite number > 0 (seconds), got 'abc'"),
    (["-O", "variance=true"], "eigenface: variance must be a number in (0, 1], got True"),
    (["-O", 'variance="0.5"'], "eigenface: variance must be a number in (0, 1], got '0.5'"),
    (["-O", 'n_components="3"'], "eigenface: n_components must be an integer >= 1, got '3'"),
    (["-O", "gamma=true"],
     "eigenface: gamma must be 'paper', 'median' or a positive number, got True"),
    (["-O", 'gamma="-1"'], "eigenface: gamma must be positive, got -1"),
    (["-O", 'gamma="nan"'], "eigenface: gamma must be positive, got nan"),
    (["--matcher", "dlib", "-O", "detect=no"], "dlib: detect must be true or false, got 'no'"),
    (["--matcher", "dlib", "-O", "gamma=false"],
     "dlib: gamma must be 'paper', 'median' or a positive number, got False"),
])
def test_bad_matcher_options(tmp_path, args, needle):
    """A matcher option of the wrong JSON type is refused at enroll, one line, exit 2,
    no store: main read -O variance=true as 1, variance='"0.5"' as 0.5, gamma=true as 1,
    gamma='"-1"' and '"nan"' as -1 and NaN (enrolled; compress then failed on the
    store), dlib's detect=no as true (bool('no'))."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3)
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5"), *args])
    _one_line(r, EXIT_INPUT, needle)
    assert not (tmp_path / "e.h5").exists()


MAD = f"{sys.executable} {os.path.join(os.path.dirname(__file__), 'matchers', 'example_mad.py')}"


@pytest.mark.parametrize("item, needle", [
    ("timeout_base=0", "timeout_base must be a finite number > 0 (seconds), got 0"),
    ("timeout_base=-1", "timeout_base must be a finite number > 0 (seconds), got -1"),
    ("timeout_base=false", "timeout_base must be a finite number > 0 (seconds), got false"),
    ("timeout_per_pair=true", "timeout_per_pair must be a finite number >= 0 (seconds), got true"),
    ('timeout_per_pair="0.5"',
     "timeout_per_pair must be a finite number >= 0 (seconds), got '0.5'"),
    ("distance_scale=true", "distance_scale must be a finite number > 0, got true"),
    ("serve=no", "serve must be true or false, got 'no'"),
    ("serve=1", "serve must be true or false, got 1"),
    ("cache_dir=1", "cache_dir must be a folder name (a string), got 1"),
    ("cache_dir=[\"/tmp\"]", 'cache_dir must be a folder name (a string), got ["/tmp"]'),
])
def test_external_matcher_options_are_checked_where_they_come_in(tmp_path, item, needle):
    """An external matcher's timeouts are numbers of seconds and ``serve`` a boolean,
    checked where they come in (enroll -O, before the program runs): 0 or less for
    timeout_base said 'timed out after 0 s on 0 pairs' (the program's --describe killed
    at once), a JSON boolean or string was read as a number (true: 1 s per pair, exit 0)
    and serve=no as true (served). One line, exit 2, no store written."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5"),
                                  "--matcher-cmd", MAD, "-O", item])
    _one_line(r, EXIT_INPUT, f"ssgallery: error: external matcher option {needle}\n")
    assert not (tmp_path / "e.h5").exists()


def _stored_option_refused(tmp_path, key, value, message, matcher_args=(), env=None):
    """Enroll and compress a small store (``matcher_args``: e.g. an external matcher),
    set ``key`` of the matcher_config both files record to ``value`` (re-hashed, as an
    attacker with the files would), then info, compress, info --gallery and verify each
    end in one line naming the file and ``message``, exit 2, nothing written."""
    import json

    import h5py
    from helpers import rehash_gallery, rehash_store

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12))
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    for args in (["enroll", faces, "--store", store, *matcher_args, "-q"],
                 ["compress", "--store", store, "-o", gallery, "--cv-folds", "0",
                  *matcher_args, "-q"]):
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code == 0, r.output
    for path, rehash in ((store, rehash_store), (gallery, rehash_gallery)):
        with h5py.File(path, "a") as f:
            config = json.loads(f.attrs["matcher_config"])
            config[key] = value
            f.attrs["matcher_config"] = json.dumps(config, sort_keys=True)
        rehash(path)
    probe = os.path.join(faces, "c01", "0.png")
    for args in (["info", "--store", store],
                 ["compress", "--store", store, "-o", tmp_path / "g2.h5", "--cv-folds", "0"],
                 ["info", "--gallery", gallery],
                 ["verify", probe, "--claim", "c01", "--gallery", gallery]):
        r = CliRunner().invoke(main, [str(a) for a in args], env=env)
        path = store if "--store" in args else gallery
        _one_line(r, EXIT_INPUT, f"ssgallery: error: {path}: ", message)
    assert not (tmp_path / "g2.h5").exists()


def test_a_stored_external_timeout_that_is_not_a_number_is_refused(tmp_path):
    """The timeouts a store or gallery records (its ``matcher_config`` JSON) are checked
    as the command line's: ``timeout_per_pair: true`` in a re-hashed store or gallery is
    refused by every reader, one line naming the file (main read it as 1 s a pair)."""
    _stored_option_refused(tmp_path, "timeout_per_pair", True,
                           "external matcher option timeout_per_pair must be a finite "
                           "number >= 0 (seconds), got true\n",
                           matcher_args=("--matcher-cmd", MAD),
                           env={"SSGALLERY_MATCHER_CMD": MAD})


@pytest.mark.parametrize("key, value, message", [
    ("variance", True, "eigenface: variance must be a number in (0, 1], got True"),
    ("gamma", "-1", "eigenface: gamma must be positive, got -1"),
], ids=["variance-true", "gamma-negative"])
def test_a_stored_eigenface_option_of_another_type_is_refused_naming_the_file(
        tmp_path, key, value, message):
    """An eigenface option a store or gallery records is checked as enroll checks it
    (acac136 checked it where the config is written, so a re-hashed store's
    ``"variance": true`` said 'ssgallery: error: eigenface: variance must be ...'
    without the file, from info and compress); one line naming the file, as an external
    matcher's timeouts."""
    _stored_option_refused(tmp_path, key, value, message)


def test_full_disk_under_ulimit_f(tmp_path):
    """Writing past `ulimit -f` (a full disk) is one line, exit 2: no SIGXFSZ, no segfault,
    no store and no temporary file left."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4)
    out = tmp_path / "out"
    out.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    run = subprocess.run([sys.executable, "-m", "ssgallery", "enroll", faces, "--store",
                          str(out / "e.h5")], capture_output=True, text=True, timeout=120,
                         preexec_fn=limit, env=dict(os.environ, OMP_NUM_THREADS="1"),
                         check=False)
    assert run.returncode == EXIT_INPUT, (run.returncode, run.stderr)
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert [p.name for p in out.iterdir() if not p.name.endswith(".lock")] == []


def test_interrupts_deferred_holds_an_interrupt_to_the_end_of_the_block():
    """The CLI's SIGINT/SIGTERM handler calls errors.interrupt: inside
    interrupts_deferred (starting a matcher program and recording it) the
    KeyboardInterrupt comes when the block ends, so the caller's finally kills it."""
    from ssgallery.errors import interrupt, interrupts_deferred

    steps = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        interrupt()
        steps.append("after the signal")
        with interrupts_deferred():
            steps.append("nested")
        steps.append("still held")
    assert steps == ["after the signal", "nested", "still held"]
    with pytest.raises(KeyboardInterrupt):
        interrupt()
    with pytest.raises(ValueError), interrupts_deferred():  # the block's own error wins
        interrupt()
        raise ValueError
    with interrupts_deferred():  # and the held interrupt is gone with it
        pass
