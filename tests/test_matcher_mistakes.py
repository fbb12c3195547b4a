"""A vendor's matcher program named or built the way a new user gets it wrong, through
the command line with real programs (tiny scripts in tmp_path): each mistake is one
line naming the program and the problem, exit 2, no traceback and no store or gallery
written (docs/external-matcher.md, "What ssgallery guarantees around the program")."""

import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.cli import main

MAD = Path(__file__).resolve().parent / "matchers" / "example_mad.py"
MAD_TEXT = MAD.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    return make_faces(str(tmp_path_factory.mktemp("mistakes") / "faces"), n_clients=2,
                      n_images=3, shape=(16, 12))


def _script(path, text, executable=True):
    """A matcher program at ``path``: ``text`` (its first line is the #! line, if any)."""
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _enroll_fails(faces, store, command, *needles):
    """``enroll --matcher-cmd command`` ends in one line with ``needles``, exit 2, no store."""
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", command])
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
    _script(tmp_path / "mad.py", f"#!{sys.executable}\n" + MAD_TEXT)
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
    prog = _script(tmp_path / "m.py", MAD_TEXT.split("\n", 1)[1])
    _enroll_fails(faces, tmp_path / "e.h5", str(prog),
                  f"cannot start matcher {prog}: Exec format error (not a program this "
                  "system runs: a script needs a first line '#!/usr/bin/env INTERPRETER', "
                  "or the command names its interpreter first, e.g. 'python3 SCRIPT')")


def test_a_program_that_is_not_executable_or_missing(faces, tmp_path):
    prog = _script(tmp_path / "m.py", MAD_TEXT, executable=False)
    _enroll_fails(faces, tmp_path / "e.h5", str(prog),
                  f"matcher program '{prog}' is not executable")
    _enroll_fails(faces, tmp_path / "e.h5", str(tmp_path / "nope.py"),
                  f"matcher program '{tmp_path / 'nope.py'}' not found")
