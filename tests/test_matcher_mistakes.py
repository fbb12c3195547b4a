"""A vendor's matcher program named or built the way a new user gets it wrong, through
the command line with real programs (tiny scripts in tmp_path): each mistake is one
line naming the program and the problem, exit 2, no traceback and no store or gallery
written (docs/external-matcher.md, "What ssgallery guarantees around the program").
Its options and the configuration file given wrong: tests/test_matcher_options_mistakes.py."""

import os
import sys

import pytest
from click.testing import CliRunner
from helpers import EXAMPLE_MAD as MAD
from helpers import make_faces, write_program

from ssgallery.cli import main

MAD_TEXT = MAD.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    return make_faces(str(tmp_path_factory.mktemp("mistakes") / "faces"), n_clients=2,
                      n_images=3, shape=(16, 12))


def _enroll_fails(faces, store, command, *needles, env=None, args=()):
    """``enroll --matcher-cmd command`` ends in one line with ``needles``, exit 2, no store."""
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", command, *args], env=env)
    assert r.exit_code == 2, (r.exit_code, r.output)
    err = r.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("ssgallery: error: "), err
    for needle in needles:
        assert needle in err, err
    assert not store.exists()
    return err


def test_a_program_of_the_current_folder_named_bare_is_named_with_its_path(
        faces, tmp_path, monkeypatch):
    """A program in the current folder named without ./ is looked up on $PATH only, as a
    shell does: main said "matcher program 'mad.py' not found" of a file that is there."""
    monkeypatch.chdir(tmp_path)
    write_program(tmp_path / "mad.py", f"#!{sys.executable}\n" + MAD_TEXT)
    _enroll_fails(faces, tmp_path / "e.h5", "mad.py",
                  "matcher program 'mad.py' not found on $PATH (a bare name is looked up "
                  "there only, as a shell does): name the current folder's mad.py as "
                  "./mad.py or by its full path")
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5"), "-q",
                                  "--matcher-cmd", "./mad.py"])
    assert r.exit_code == 0, r.output


def test_a_script_without_its_interpreter_line_says_how_to_name_it(faces, tmp_path):
    """An executable script with no #! line cannot be started (ENOEXEC): main said only
    'cannot start matcher ./m.py: Exec format error'."""
    prog = write_program(tmp_path / "m.py", MAD_TEXT.split("\n", 1)[1])
    _enroll_fails(faces, tmp_path / "e.h5", str(prog),
                  f"cannot start matcher {prog} --describe: Exec format error (not a program this "
                  "system runs: a script needs a first line '#!/usr/bin/env INTERPRETER', "
                  "or the command names its interpreter first, e.g. 'python3 SCRIPT')")


def test_a_program_that_is_not_executable_or_missing(faces, tmp_path):
    prog = write_program(tmp_path / "m.py", MAD_TEXT, executable=False)
    _enroll_fails(faces, tmp_path / "e.h5", str(prog),
                  f"matcher program '{prog}' is not executable")
    _enroll_fails(faces, tmp_path / "e.h5", str(tmp_path / "nope.py"),
                  f"matcher program '{tmp_path / 'nope.py'}' not found")


VENDOR = '''
import json, os, sys
import numpy as np
from PIL import Image

a = sys.argv[1:]
if "--describe" in a:
    print(json.dumps({"kind": "distance", "symmetric": True, "range": [0, 255],
                      "quality": True}))
    sys.exit()
opts = dict(zip(a[::2], a[1::2]))
read = lambda f: [np.asarray(Image.open(p), float) if not p.endswith(".npy") else np.load(p)
                  for p in open(f, encoding="utf-8").read().split()]
mode = os.environ.get("VENDOR_MODE", "")
if mode == "hang":
    import time
    time.sleep(600)
if "--quality-list" in opts:
    n = len(read(opts["--quality-list"])) - (mode == "short-quality")
    with open(opts["--out"], "w") as out:
        out.write("1.0\\n" * n)
    sys.exit()
P, G = read(opts["--probe-list"]), read(opts["--gallery-list"])
if mode == "empty":
    sys.exit()
if mode == "empty-file":
    open(opts["--out"], "w").close()
    sys.exit()
with open(opts["--out"], "w") as out:
    if mode == "banner":
        out.write("VendorMatch 3.1 (c) 2019\\n")
    if mode in ("transposed", "csv", "decimal-comma"):
        P, G = (G, P) if mode == "transposed" else (P, G)
        sep = "," if mode == "csv" else " "
        one, two = ("1,5", "2,5") if mode == "decimal-comma" else ("1.5", "2.5")
        out.write("".join(sep.join([one] + [two] * (len(G) - 1)) + "\\n" for p in P))
        sys.exit()
    out.write("".join(" ".join(str(np.abs(p - g).mean()) for g in G) + "\\n" for p in P))
'''


@pytest.fixture(scope="module")
def vendor(faces, tmp_path_factory):
    """A gallery of a vendor's program (mean absolute difference with a quality score)
    whose answers $VENDOR_MODE spoils: (program, gallery)."""
    root = tmp_path_factory.mktemp("vendor")
    prog = write_program(root / "vendor-match", f"#!{sys.executable}\n" + VENDOR)
    store, gallery = root / "e.h5", root / "g.h5"
    for args in (["enroll", faces, "--store", str(store)],
                 ["compress", "--store", str(store), "-o", str(gallery), "--m", "2"]):
        r = CliRunner().invoke(main, args + ["-q", "--matcher-cmd", str(prog)])
        assert r.exit_code == 0, r.output
    return prog, gallery


@pytest.mark.parametrize("mode, needle", [
    ("banner", ("returned a non-number 'VendorMatch' (line 1 of its answer), expected a 2 x 2 "
               "matrix")),
    ("empty", ("returned nothing (no answer file written and nothing on stdout), expected a "
              "2 x 2 matrix")),
    ("empty-file", "returned nothing (an empty answer file), expected a 2 x 2 matrix"),
    ("short-quality", "--quality-list returned 1 row, expected 2 qualities, one per line"),
], ids=["banner", "empty", "empty-file", "short-quality"])
def test_a_spoilt_answer_says_what_was_wrong_with_it(faces, vendor, mode, needle):
    """verify with a program whose answer is spoilt: a banner line before the matrix
    said 'returned 3 rows, expected a 2 x 2 matrix', an empty answer 'returned 0 rows'
    (then 'an empty answer file and nothing on stdout' of a program that wrote no answer
    file: which one did it?),
    a quality answer short of a line 'returned 1 rows, expected a 2 x 1 matrix' (which
    request?). One line naming the program, exit 2."""
    prog, gallery = vendor
    folder = os.path.join(faces, "c00")
    probes = [os.path.join(folder, f) for f in sorted(os.listdir(folder))[:2]]
    r = CliRunner().invoke(main, ["verify", *probes, "--claim", "c00", "--gallery", str(gallery),
                                  "--matcher-cmd", str(prog)], env={"VENDOR_MODE": mode})
    assert r.exit_code == 2, (r.exit_code, r.output)
    err = r.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"ssgallery: error: matcher {prog} "), err
    assert needle in err, err


def test_a_failing_program_at_enroll_is_not_blamed_on_the_faces(faces, tmp_path):
    """A program that fails while enroll fits it (here: the distance scale's scoring run)
    is named alone: main said 'ssgallery: error: FACES: matcher PROG failed ...', which
    reads as a fault of the face folder."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + VENDOR)
    err = _enroll_fails(faces, tmp_path / "e.h5", str(prog), f"matcher {prog} returned nothing",
                        env={"VENDOR_MODE": "empty"})
    assert err.startswith(f"ssgallery: error: matcher {prog} "), err


HANG = '''
import json, sys, time
if sys.argv[1:] == ["--describe"]:  # "hang.py describe --describe" hangs
    print(json.dumps({"kind": "similarity", "symmetric": True, "range": [0, 1]}))
    sys.exit()
time.sleep(600)
'''


def test_a_program_that_hangs_says_how_its_timeout_is_raised(faces, tmp_path):
    """A program that hangs is killed at its timeout, one line saying how the timeout
    was made and what raises it: main said 'timed out after 1 s on 0 pairs' of
    --describe, and '(raise timeout_base / timeout_per_pair)' at compress, where no
    option sets them (they are the store's, from its enrollment)."""
    prog = write_program(tmp_path / "hang.py", f"#!{sys.executable}\n" + HANG)
    store = tmp_path / "e.h5"
    _enroll_fails(faces, store, f"{prog} describe", f"matcher {prog} describe --describe timed "
                  "out after 1 s and was killed (timeout_base 1 s: a slower program needs "
                  "larger external matcher options timeout_base and timeout_per_pair)",
                  args=["-O", "timeout_base=1"])
    # main: 'timed out after 1 s on 0 pairs and was killed (raise timeout_base / ...)'
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q", "--matcher-cmd",
                                  str(prog), "-O", "timeout_base=1", "-O", "timeout_per_pair=0"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["compress", "--store", str(store), "-o",
                                  str(tmp_path / "g.h5"), "-q", "--matcher-cmd", str(prog)])
    assert r.exit_code == 2, r.output
    assert r.stderr == (f"ssgallery: error: matcher {prog} timed out after 1 s and was killed "
                        f"(timeout_base 1 s + timeout_per_pair 0 s x 36 pairs, the options "
                        f"{store} records from its enrollment: a slower program needs a store "
                        "enrolled again with larger ones, and its galleries compressed "
                        "again)\n"), r.stderr
    assert not (tmp_path / "g.h5").exists()


def test_a_program_that_hangs_at_verify_says_the_gallery_is_compressed_again(faces, tmp_path):
    """verify runs with the timeouts its gallery records (copied from the store when it
    was compressed): main's advice, 'a store enrolled again with larger ones', left the
    gallery as slow as before; the line now says to compress its galleries again too."""
    prog = write_program(tmp_path / "vendor-match", f"#!{sys.executable}\n" + VENDOR)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    for args in (["enroll", faces, "--store", str(store), "-O", "timeout_base=5", "-O",
                  "timeout_per_pair=0"],
                 ["compress", "--store", str(store), "-o", str(gallery), "--m", "2",
                  "--cv-folds", "0"]):
        r = CliRunner().invoke(main, args + ["-q", "--matcher-cmd", str(prog)])
        assert r.exit_code == 0, r.output
    probe = os.path.join(faces, "c00", min(os.listdir(os.path.join(faces, "c00"))))
    r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", str(gallery),
                                  "--matcher-cmd", str(prog)], env={"VENDOR_MODE": "hang"})
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stderr.startswith(f"ssgallery: error: matcher {prog} "), r.stderr
    assert r.stderr.endswith(f"timed out after 5 s and was killed (timeout_base 5 s + "
                             f"timeout_per_pair 0 s x 1 images, the options {gallery} records "
                             "from its enrollment: a slower program needs a store enrolled "
                             "again with larger ones, and its galleries compressed again)\n"), \
        r.stderr


@pytest.mark.parametrize("printed, needle", [
    ("", "it printed nothing on stdout"),
    ('VendorMatch 3.1\n{"kind": "similarity"}', "it printed 'VendorMatch 3.1' and 1 more line"),
    ('{"type": "similarity"}', "it printed '{\"type\": \"similarity\"}'"),
], ids=["nothing", "banner", "no-kind"])
def test_a_describe_answer_without_a_kind_shows_what_was_printed(faces, tmp_path, printed,
                                                                   needle):
    """main said only '--describe did not print a JSON object with a 'kind'', whether the
    program printed nothing, a banner line before its JSON, or JSON without a kind."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\nprint({printed!r}, end='')\n")
    _enroll_fails(faces, tmp_path / "e.h5", str(prog), f"matcher {prog} --describe did not "
                  f"print a JSON object with a 'kind': {needle}")


@pytest.mark.parametrize("word", ["~/bin/vendor-match", "$HOME/bin/vendor-match"])
def test_a_program_named_with_a_shells_expansion_says_none_is_made(faces, tmp_path, word):
    """'--matcher-cmd "~/bin/vendor-match"' (quoted: the shell left ~ alone) said only
    "matcher program '~/bin/vendor-match' not found"."""
    _enroll_fails(faces, tmp_path / "e.h5", word, f"matcher program '{word}' not found (no "
                  "shell runs the command, so ~ and $VARIABLES in it are not expanded: give "
                  "the full path)")


def test_a_file_whose_program_the_host_does_not_name_is_named(faces, vendor, tmp_path):
    """verify on an external gallery with no program named (no --matcher-cmd, no
    $SSGALLERY_MATCHER_CMD, no configuration file) said 'the external matcher's program
    is not named on this host ...' without the gallery that needs it."""
    _, gallery = vendor
    probe = os.path.join(faces, "c00", min(os.listdir(os.path.join(faces, "c00"))))
    r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", str(gallery)],
                           env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": None,
                                "XDG_CONFIG_HOME": str(tmp_path)})
    assert r.exit_code == 2, r.output
    assert r.stderr == (f"ssgallery: error: {gallery}: the external matcher's program is not "
                        "named on this host (a file never names it): set "
                        "$SSGALLERY_MATCHER_CMD or give --matcher-cmd\n"), r.stderr


def test_roc_on_a_store_whose_program_the_host_does_not_name_names_it(tmp_path):
    """roc on an external store with no program named said 'the external matcher's
    program is not named on this host ...' without the store (30477f7 named the file for
    verify, compress and identify; roc's matcher of each split was not built from it)."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, shape=(16, 12))
    store = tmp_path / "e.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", str(prog)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["roc", "--store", str(store), "-o", str(tmp_path / "roc")],
                           env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": None,
                                "XDG_CONFIG_HOME": str(tmp_path)})
    assert r.exit_code == 2, r.output
    assert r.stderr.endswith(f"ssgallery: error: {store}: the external matcher's program is "
                             "not named on this host (a file never names it): set "
                             "$SSGALLERY_MATCHER_CMD or give --matcher-cmd\n"), r.stderr


def test_a_path_with_spaces_left_unquoted_says_to_quote_it(faces, tmp_path):
    """'--matcher-cmd "/opt/my dir/m.py"' is split like a shell splits it: main said
    "matcher program '/opt/my' not found", and with an interpreter first only the
    interpreter's "can't open file '/opt/my'"."""
    folder = tmp_path / "my dir"
    folder.mkdir()
    prog = write_program(folder / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    hint = f"(the command is split at spaces as a shell splits it: quote the path '{prog}')"
    _enroll_fails(faces, tmp_path / "e.h5", str(prog),
                  f"matcher program '{tmp_path / 'my'}' not found {hint}")
    err = _enroll_fails(faces, tmp_path / "e.h5", f"{sys.executable} {prog}",
                        "--describe failed with exit status 2: ")
    assert err.endswith(f"{hint}\n"), err


@pytest.mark.parametrize("mode, needle", [
    ("transposed", ("returned 2 rows, expected a 3 x 2 matrix (it returned the 2 x 3 transpose: "
                   "the contract's rows are the --probe-list images, its columns the "
                   "--gallery-list images)")),
    ("csv", ("returned a non-number '1.5,2.5' (line 1 of its answer), expected a 3 x 2 matrix "
            "(numbers separated by white space, not commas)")),
    ("decimal-comma", ("returned a non-number '1,5' (line 1 of its answer), expected a 3 x 2 "
                      "matrix (a decimal comma: the numbers are written with a decimal point, "
                      "0.5, whatever the program's locale)")),
], ids=["transposed", "csv", "decimal-comma"])
def test_a_matrix_in_another_layout_says_which(faces, vendor, mode, needle):
    """Layouts a vendor's program may print: the gallery x probe matrix (main: only
    'returned 2 rows, expected a 3 x 2 matrix'), comma-separated values (main: only
    "returned a non-number '1.5,2.5'") and numbers with a decimal comma, as a program
    run in a German or French locale prints them (main said to separate them by white
    space, not commas, which they were)."""
    prog, gallery = vendor
    folder = os.path.join(faces, "c00")
    probes = [os.path.join(folder, f) for f in sorted(os.listdir(folder))[:3]]
    r = CliRunner().invoke(main, ["verify", *probes, "--claim", "c00", "--gallery",
                                  str(gallery), "--matcher-cmd", str(prog)],
                           env={"VENDOR_MODE": mode})
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"matcher {prog} {needle}" in r.stderr, r.stderr


@pytest.mark.parametrize("text, needle", [
    ('[external]\ncmd = "m.py"\n', "unknown key 'cmd' in [external]"),
    ('[externals]\ncommand = "m.py"\n', "unknown table 'externals'"),
    ('command = "m.py"\n', "key 'command' outside the [external] table"),
], ids=["key", "table", "no-table"])
def test_a_misspelt_configuration_file_is_refused(faces, vendor, tmp_path, text, needle):
    """A configuration file whose program is misspelt (cmd = ..., [externals]) was read
    as naming no program: main said 'the external matcher's program is not named on this
    host', of a host whose file names it. A key above any [external] line (the line
    forgotten) was called a table ('unknown table 'command'')."""
    _, gallery = vendor
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    probe = os.path.join(faces, "c00", min(os.listdir(os.path.join(faces, "c00"))))
    r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", str(gallery)],
                           env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": str(config)})
    assert r.exit_code == 2, r.output
    assert r.stderr == (f"ssgallery: error: {config}: {needle} (the configuration file holds "
                        "[external] with command and cache_dir)\n"), r.stderr


def test_a_relative_path_not_found_names_the_folder_it_was_taken_from(faces, tmp_path,
                                                                      monkeypatch):
    """A store enrolled with './m.py' in one folder and used from another (a relative
    path in $SSGALLERY_MATCHER_CMD): main said "matcher program './m.py' not found" of a
    program that exists, without the folder it looked in."""
    write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    _enroll_fails(faces, tmp_path / "e.h5", "./m.py",
                  f"matcher program './m.py' not found in {os.getcwd()} (a relative path is "
                  "taken from the folder the command runs in: give the full path)")


def test_a_program_that_fails_saying_why_on_stdout_is_quoted(faces, tmp_path):
    """A program that reports its failure on stdout, not stderr: main said only 'failed
    with exit status 1 (no message on stderr)'."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n"
                   "print('VendorMatch 3.1')\nprint('ERROR: license expired')\nraise SystemExit(1)\n")
    _enroll_fails(faces, tmp_path / "e.h5", str(prog), f"matcher {prog} --describe failed with "
                  "exit status 1 (no message on stderr; its stdout ends 'ERROR: license expired')")


def test_a_worker_s_copy_of_a_matcher_checks_the_program_it_finds(faces, tmp_path):
    """A local or Dask worker gets the matcher pickled, with the command's path: it runs
    the program found there, on its own host. The copy of a matcher whose contract was
    checked in this process was marked checked, so a worker whose program at that path
    had another contract scored with it (compress --jobs 2 --solver paper: 12 runs in the
    workers, 1 --describe, in this process). Now the copy asks --describe before its
    first run and refuses another contract with the line every command gives; the
    same program still scores as here."""
    import pickle
    import re

    import numpy as np

    from ssgallery.errors import MatcherError
    from ssgallery.formats.store import load_store
    from ssgallery.matchers.host import HostMatcher

    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    store_path = tmp_path / "e.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store_path), "-q",
                                  "--matcher-cmd", str(prog)])
    assert r.exit_code == 0, r.output
    store = load_store(store_path)
    matcher = store.matcher(host=HostMatcher([str(prog)]))
    X = store.matcher_features(matcher)
    matcher.similarity()(X[:2], X[2:4])  # its contract checked in this process
    sent = pickle.dumps(matcher)  # what joblib's loky and Dask send a worker
    other = (MAD.parent / "described.py").read_text(encoding="utf-8")
    write_program(prog, f"#!{sys.executable}\n" + other)  # another program at the path
    with pytest.raises(MatcherError, match=rf"^{re.escape(str(store_path))}: matcher "
                       rf"{re.escape(str(prog))} is not the "
                       r"file's matcher: its contract digest is \w+\.\.\., the file was "
                       r"made with \w+\.\.\."):
        pickle.loads(sent).similarity()(X[:2], X[4:6])
    write_program(prog, f"#!{sys.executable}\n" + MAD_TEXT)
    assert np.array_equal(pickle.loads(sent).similarity()(X[:2], X[4:6]),
                          matcher.similarity()(X[:2], X[4:6]))
