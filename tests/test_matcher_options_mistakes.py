"""The options and the configuration file of an external matcher given the way a new
user gets them wrong, through the command line with real programs (tiny scripts in
tmp_path): ``-O command``, ``-O cache_dir`` and the [external] table of
$SSGALLERY_CONFIG. Each mistake is one line naming the option and the problem, exit 2,
no traceback and no store or gallery written, or (an option with no effect:
--matcher-cmd for a file whose matcher runs no program, -O command over the host's
program) one warning (docs/external-matcher.md). The program itself named or built wrong:
tests/test_matcher_mistakes.py."""

import sys

import pytest
from click.testing import CliRunner
from helpers import EXAMPLE_MAD as MAD
from helpers import invoked, make_faces, write_program

from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path

MAD_TEXT = MAD.read_text(encoding="utf-8")
PROBE = sample_faces_path().parent / "probes" / "c01_genuine_1.png"


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    return make_faces(str(tmp_path_factory.mktemp("mistakes") / "faces"), n_clients=2,
                      n_images=3, shape=(16, 12))


UNUSED_CACHE_WARNING = (
    "ssgallery: warning: the external matcher option cache_dir is not stored and enroll "
    "keeps no answers in it: the commands that score read cache_dir from the [external] "
    "table of $SSGALLERY_CONFIG (default ~/.config/ssgallery/config.toml)\n")


def test_a_cache_folder_given_to_enroll_says_where_it_belongs(faces, tmp_path):
    """'enroll -O cache_dir=DIR' is not stored and enroll scores nothing through it (main
    said nothing: the folder was never made and no later command used it); one warning
    says where the commands that score read it."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    cache = tmp_path / "cache"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5"), "-q",
                                  "--matcher-cmd", str(prog), "-O", f"cache_dir={cache}"])
    assert r.exit_code == 0, r.output
    assert r.stderr == UNUSED_CACHE_WARNING, r.stderr
    assert not cache.exists()


def _external_store_and_more_faces(faces, tmp_path):
    """An external store of ``faces`` enrolled through the MAD program, its bytes, and a
    folder of one more client to ``--add``."""
    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    store = tmp_path / "e.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", str(prog)])
    assert r.exit_code == 0, r.output
    more = make_faces(str(tmp_path / "more"), n_clients=1, n_images=3, shape=(16, 12),
                      prefix="d", seed=1)
    return store, store.read_bytes(), more


def test_a_cache_folder_given_to_enroll_add_says_where_it_belongs(faces, tmp_path):
    """'enroll DIR --add -O cache_dir=DIR' on an external store did nothing without a word
    (kept_matcher dropped it; a fresh enroll warns): the same one warning now, and the
    clients are added."""
    store, _, more = _external_store_and_more_faces(faces, tmp_path)
    cache = tmp_path / "cache"
    r = CliRunner().invoke(main, ["enroll", more, "--store", str(store), "--add",
                                  "-O", f"cache_dir={cache}"],
                           env={"SSGALLERY_PROGRESS_INTERVAL": "3600"})  # its summary: no -q
    assert r.exit_code == 0, r.output
    assert "added 1 client(s) (d00)" in r.stdout, r.stdout
    assert r.stderr == UNUSED_CACHE_WARNING, r.stderr
    assert not cache.exists()


@pytest.mark.parametrize("command, needle", [
    ("", "the matcher command from --matcher-option command is empty"),
    ('"/opt/m.py', ("cannot parse the matcher command from --matcher-option command (No "
                    "closing quotation): '\"/opt/m.py'")),
], ids=["empty", "unquoted"])
def test_enroll_add_names_the_program_option_as_given(faces, tmp_path, command, needle):
    """'enroll DIR --add -O command=' on an external store said 'the matcher command from
    --matcher-cmd is empty', a flag nobody typed (a fresh enroll names -O command)."""
    store, before, more = _external_store_and_more_faces(faces, tmp_path)
    r = CliRunner().invoke(main, ["enroll", more, "--store", str(store), "-q", "--add",
                                  "-O", f"command={command}"])
    assert r.exit_code == 2, r.output
    assert r.stderr == f"ssgallery: error: {needle}\n", r.stderr
    assert store.read_bytes() == before


def test_a_configuration_file_is_read_only_for_a_matcher_that_runs_a_program(faces, tmp_path):
    """The external matcher's configuration file is not the eigenface matcher's: compress
    of an eigenface store with a misspelt one ('[external] cmd = ...') was refused with
    'config.toml: unknown key 'cmd' in [external] ...' (compress read it for any store;
    verify and roc read it only for a matcher that runs a program)."""
    config = tmp_path / "config.toml"
    config.write_text('[external]\ncmd = "m.py"\n', encoding="utf-8")
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    env = {"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": str(config)}
    for args in (["enroll", faces, "--store", str(store)],
                 ["compress", "--store", str(store), "-o", str(gallery), "--m", "2",
                  "--cv-folds", "0"]):
        r = CliRunner().invoke(main, args + ["-q"], env=env)
        assert r.exit_code == 0 and "config.toml" not in r.stderr, r.output
    assert gallery.exists()


@pytest.mark.parametrize("value, got", [("[1, 2]", "[1, 2]"),
                                        ('["mad.py", 1]', '["mad.py", 1]'),
                                        ("1", "1"), ("true", "true"), ("null", "null")],
                         ids=["numbers", "a-number-in-a-list", "number", "bool", "null"])
def test_a_command_option_that_is_no_string_is_refused_as_such(faces, tmp_path, value, got):
    """'-O command=[1,2]' (VALUE is read as JSON) was made the words '1' and '2': 'matcher
    program '1' not found'; a number or true said 'must be a string or a list', a list of
    what was not said. Now one line: the command must be a string or a list of strings,
    what it got, exit 2, no store. The configuration file's command is split alike."""
    store = tmp_path / "e.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q", "--matcher",
                                  "external", "-O", f"command={value}"],
                           env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": None})
    want = ("ssgallery: error: the matcher command from -O command must be a string or a "
            f"list of strings, got {got}\n")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", want), r.output
    config = tmp_path / "config.toml"
    config.write_text(f"[external]\ncommand = {value if value != 'null' else '[[]]'}\n",
                      encoding="utf-8")
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q", "--matcher",
                                  "external"],
                           env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": str(config)})
    assert r.exit_code == 2 and r.stderr.startswith(
        f"ssgallery: error: the matcher command from {config} must be a string or a list of "
        "strings, got "), r.output
    assert not store.exists()


def test_a_cache_folder_that_is_no_folder_name_is_refused_everywhere(faces, tmp_path):
    """'-O cache_dir=1' (VALUE read as JSON) is no folder: a fresh enroll and 'enroll
    --add' warned that it was unused (exit 0), and the library's ExternalMatcher took it
    and failed at its first scoring with Python's TypeError (os.makedirs(1)). Now one
    line, exit 2, as the configuration file's cache_dir is refused (its message names
    what it got too)."""
    from ssgallery.errors import InputError
    from ssgallery.matchers.external import ExternalMatcher

    line = "external matcher option cache_dir must be a folder name (a string), got 1"
    with pytest.raises(InputError, match=r"^external matcher option cache_dir must be a "
                       r"folder name \(a string\), got 1$"):
        ExternalMatcher(command=[sys.executable, str(MAD)], cache_dir=1)
    store, before, more = _external_store_and_more_faces(faces, tmp_path)
    r = CliRunner().invoke(main, ["enroll", more, "--store", str(store), "-q", "--add",
                                  "-O", "cache_dir=1"])
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"ssgallery: error: {line}\n"), \
        r.output
    assert store.read_bytes() == before
    config = tmp_path / "config.toml"
    config.write_text("[external]\ncache_dir = 1\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["compress", "--store", str(store), "-o",
                                  str(tmp_path / "g.h5"), "-q"],
                           env={"SSGALLERY_CONFIG": str(config),
                                "SSGALLERY_MATCHER_CMD": str(tmp_path / "m.py")})
    want = (f"ssgallery: error: {config}: [external] cache_dir must be a folder name (a "
            "string), got 1\n")
    assert (r.exit_code, r.stderr) == (2, want), r.output
    assert not (tmp_path / "g.h5").exists()


def test_an_empty_cache_folder_is_refused_everywhere(faces, tmp_path):
    """An empty cache_dir is nearly always an unset shell variable ('-O
    cache_dir=$CACHE'): the configuration file's 'cache_dir = ""' quietly meant no
    persistent cache (compress and verify ran, exit 0), 'enroll -O cache_dir=' warned
    only that the option is not stored, and the library's ExternalMatcher took it. Now
    one line naming the option, exit 2, as for a cache_dir that is no folder name."""
    from ssgallery.errors import InputError
    from ssgallery.matchers.external import ExternalMatcher

    said = ("cache_dir is empty (an unset shell variable?): name a folder, or leave "
            "cache_dir out to keep answers for this run only")
    with pytest.raises(InputError) as info:
        ExternalMatcher(command=[sys.executable, str(MAD)], cache_dir="")
    assert str(info.value) == f"external matcher option {said}"
    store, before, more = _external_store_and_more_faces(faces, tmp_path)
    for add in ([], ["--add"]):
        out = store if add else tmp_path / "fresh.h5"
        r = CliRunner().invoke(main, ["enroll", more, "--store", str(out), "-q", *add,
                                      "--matcher-cmd", f"{sys.executable} {MAD}",
                                      "-O", "cache_dir="])
        assert (r.exit_code, r.stdout, r.stderr) == (
            2, "", f"ssgallery: error: external matcher option {said}\n"), r.output
    assert store.read_bytes() == before and not (tmp_path / "fresh.h5").exists()
    config = tmp_path / "config.toml"
    config.write_text('[external]\ncache_dir = ""\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["compress", "--store", str(store), "-o",
                                  str(tmp_path / "g.h5"), "-q"],
                           env={"SSGALLERY_CONFIG": str(config),
                                "SSGALLERY_MATCHER_CMD": f"{sys.executable} {MAD}"})
    want = f"ssgallery: error: {config}: [external] {said}\n"
    assert (r.exit_code, r.stderr) == (2, want), r.output
    assert not (tmp_path / "g.h5").exists()


def test_a_nul_character_in_the_command_or_the_cache_folder_is_refused(faces, tmp_path):
    """A NUL character can come in through -O (VALUE read as JSON: "\\u0000") or the
    configuration file (TOML has the escape too), and no program, argument or folder name
    can hold one: '-O command=["mad.py", "x\\u0000"]' and a configuration file's cache_dir
    "a\\u0000b" ended in Python's 'ValueError: embedded null byte' (internal error, exit
    4), '-O command="a\\u0000b"' in 'matcher program 'a\\x00b' not found'. Now one line
    saying so, exit 2, nothing written; the library's ExternalMatcher alike."""
    from ssgallery.errors import InputError
    from ssgallery.matchers.external import ExternalMatcher

    prog = write_program(tmp_path / "m.py", f"#!{sys.executable}\n" + MAD_TEXT)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    env = {"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": None}
    for value, shown in ((f'["{prog}", "x\\u0000"]', "'x\\x00'"),
                         ('"a\\u0000b"', "'a\\x00b'")):
        r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                      "--matcher", "external", "-O", f"command={value}"],
                               env=env)
        want = ("ssgallery: error: the matcher command from -O command holds a NUL "
                f"character, which no program name or argument can: {shown}\n")
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", want), r.output
        assert not store.exists()
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", str(prog)], env=env)
    assert r.exit_code == 0, r.output
    config = tmp_path / "config.toml"
    config.write_text(f'[external]\ncommand = "{prog}"\ncache_dir = "a\\u0000b"\n',
                      encoding="utf-8")
    r = CliRunner().invoke(main, ["compress", "--store", str(store), "-o", str(gallery), "-q"],
                           env={**env, "SSGALLERY_CONFIG": str(config)})
    want = (f"ssgallery: error: {config}: [external] cache_dir holds a NUL character, which "
            "no folder name can: 'a\\x00b'\n")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", want), r.output
    assert not gallery.exists() and not (tmp_path / "g.h5.parts").exists()
    with pytest.raises(InputError, match=r"^external matcher option cache_dir holds a NUL "):
        ExternalMatcher(command=[str(prog)], cache_dir="a\0b")


IGNORED = ("ssgallery: warning: --matcher-cmd is ignored: {path} uses the eigenface "
           "matcher, which runs no program (--matcher-cmd names an external matcher's)")

FOLDER_IGNORED = ("ssgallery: warning: --matcher-cmd is ignored: roc on a faces folder ({path}) "
                  "runs the eigenface matcher, which runs no program; to measure the external "
                  "matcher, enroll {path} with --matcher-cmd and run roc on the store")


def _warned(out, path, expected=IGNORED):
    """``out`` ended as it would without --matcher-cmd, with one warning that names it
    (and the command's own warnings, if any)."""
    assert out["exit_code"] in (0, 1), out["output"]
    named = [line for line in out["stderr"].splitlines() if "--matcher-cmd" in line]
    assert named == [expected.format(path=path)], out["stderr"]


@pytest.mark.parametrize("args", [
    ["verify", PROBE, "--claim", "c01"],
    ["identify", PROBE],
    ["roc", "--probes", sample_faces_path(), "--no-plot", "-q"]])
def test_matcher_cmd_on_a_gallery_that_runs_no_program_is_named(sample_gallery_3, tmp_path,
                                                                 args):
    """verify, identify and roc --gallery read an eigenface gallery with
    ``--matcher-cmd PROG`` as without it, without a word: the option was dropped."""
    gallery = sample_gallery_3["gallery"]
    if args[0] == "roc":
        args = args + ["--gallery", gallery, "-o", tmp_path / "report"]
    else:
        args = args + ["--gallery", gallery, "-q"]
    _warned(invoked(args + ["--matcher-cmd", "no-such-matcher --model x"]), gallery)


def test_matcher_cmd_with_verify_claims_is_named_once(sample_gallery_3, tmp_path):
    claims = tmp_path / "claims.txt"
    claims.write_text(f"{PROBE} c01\n{PROBE} c02\n")
    gallery = sample_gallery_3["gallery"]
    _warned(invoked(["verify", "--claims", claims, "--gallery", gallery, "-q",
                     "--matcher-cmd", "no-such-matcher"]), gallery)


def test_matcher_cmd_on_a_store_that_runs_no_program_is_named(tmp_path):
    """compress and roc on an eigenface store: the same warning, naming the store; roc
    on a faces folder (eigenface) says how an external matcher is measured (main said
    'FACES uses the eigenface matcher', as if a folder chose one, and not how)."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    store = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    _warned(invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "--m", "1",
                     "--clients", "c00", "--target-far", "0.2", "-q",
                     "--matcher-cmd", "no-such-matcher"]), store)
    _warned(invoked(["roc", "--store", store, "--repetitions", "1", "--methods", "ssvm",
                     "--m", "1", "--enrolled", "2", "--train-images", "3", "--no-plot",
                     "--no-identification", "-q", "-o", tmp_path / "report",
                     "--matcher-cmd", "no-such-matcher"]), store)
    _warned(invoked(["roc", faces, "--repetitions", "1", "--methods", "ssvm", "--m", "1",
                     "--enrolled", "2", "--train-images", "3", "--no-plot",
                     "--no-identification", "-q", "-o", tmp_path / "report2",
                     "--matcher-cmd", "no-such-matcher"]), faces, FOLDER_IGNORED)


def test_the_hosts_matcher_program_from_the_environment_is_not_named(sample_gallery_3,
                                                                      monkeypatch):
    """$SSGALLERY_MATCHER_CMD names the host's program for every external gallery: a
    gallery of another matcher says nothing about it."""
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", "no-such-matcher")
    out = invoked(["verify", PROBE, "--claim", "c01", "--gallery", sample_gallery_3["gallery"],
                   "-q"])
    assert out["exit_code"] in (0, 1) and out["stderr"] == "", out["output"]


def test_o_command_over_a_different_hosts_program_is_named(tmp_path, monkeypatch):
    """'enroll --matcher external -O command=PROG' with $SSGALLERY_MATCHER_CMD naming
    another program ran PROG without a word (-O command is --matcher-cmd's other spelling
    at enroll, and wins over the variable): one warning names the program used and the
    one left out; none when both name the same program."""
    import json
    import os
    import shlex
    import sys

    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=2, shape=(16, 12))
    program = [sys.executable, os.path.join(os.path.dirname(__file__), "matchers",
                                            "clipped_corr.py")]
    args = ["enroll", faces, "--matcher", "external", "-O", f"command={json.dumps(program)}"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", "no-such-matcher --model x")
    out = invoked(args + ["--store", tmp_path / "e.h5"])
    assert out["exit_code"] == 0, out["output"]
    warning = (f"ssgallery: warning: the external matcher program is -O command's "
               f"({shlex.join(program)}), not the one $SSGALLERY_MATCHER_CMD names "
               "(no-such-matcher --model x)")
    assert out["stderr"].splitlines() == [warning], out["stderr"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(program))
    out = invoked(args + ["--store", tmp_path / "e2.h5"])
    assert out["exit_code"] == 0 and out["stderr"] == "", out["output"]
    monkeypatch.delenv("SSGALLERY_MATCHER_CMD")
    config = tmp_path / "config.toml"
    config.write_text('[external]\ncommand = "other-matcher"\n')
    monkeypatch.setenv("SSGALLERY_CONFIG", str(config))
    out = invoked(args + ["--store", tmp_path / "e3.h5"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"].endswith(f", not the one {config} names (other-matcher)\n"), \
        out["stderr"]


def test_o_command_naming_the_hosts_program_by_another_path_is_not_warned(
        tmp_path, monkeypatch):
    """91cef5a warned whenever -O command's words differed from $SSGALLERY_MATCHER_CMD's:
    the same program and script named by a relative path, or by its name on $PATH, was
    'not the one $SSGALLERY_MATCHER_CMD names'. Words naming the same file agree; another
    argument is still named."""
    import json
    import os
    import shlex
    import shutil
    import sys

    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=2, shape=(16, 12))
    shutil.copy(os.path.join(os.path.dirname(__file__), "matchers", "clipped_corr.py"),
                tmp_path / "m.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    given = [sys.executable, "m.py"]  # relative script, the interpreter's full path
    args = ["enroll", faces, "--matcher", "external", "-O", f"command={json.dumps(given)}"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(
        [os.path.basename(sys.executable), str(tmp_path / "m.py")]))
    out = invoked(args + ["--store", tmp_path / "e.h5"])
    assert out["exit_code"] == 0 and out["stderr"] == "", out["output"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(
        [sys.executable, str(tmp_path / "m.py"), "--model", "x"]))
    out = invoked(args + ["--store", tmp_path / "e2.h5"])
    assert out["exit_code"] == 0, out["output"]
    assert "not the one $SSGALLERY_MATCHER_CMD names" in out["stderr"], out["stderr"]
