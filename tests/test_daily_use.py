"""What a person reads in daily use: the lines of enroll, info, show, compress and roc say
what holds, with the same precision for the same kind of figure, and bad input is one
clear line. What enroll --add says of the store's matcher:
tests/test_enroll_add_matcher.py."""

import json
import re
import sys
from pathlib import Path

import pytest
from helpers import invoked, make_faces

from ssgallery.images.montage import beta_label

SIGNED = re.compile(r"[+-]\d+\.\d{4}$")


def test_show_prints_beta_b_and_threshold_alike(sample_gallery_3, tmp_path):
    out = invoked(["show", "--claim", "c01", "-o", tmp_path / "c01.png",
                   "--gallery", sample_gallery_3["gallery"]])
    assert out["exit_code"] == 0, out["output"]
    line = out["stdout"].strip()
    figures = re.findall(r"[+-]?\d+\.\d+", line)
    assert len(figures) == 4, line  # beta_1, beta_2, b, threshold (m = 2)
    assert all(SIGNED.match(f) for f in figures), line
    assert beta_label(0.834) == ("beta = +0.8340", "genuine-like")


def test_thresholds_print_as_verify_prints_them(sample_gallery_3):
    from ssgallery.tables import signed

    info = invoked(["info", "--gallery", sample_gallery_3["gallery"]])
    assert info["exit_code"] == 0, info["output"]
    rows = [line.split() for line in info["stdout"].splitlines() if line.startswith("c0")]
    assert len(rows) == 3 and all(SIGNED.match(r[-1]) for r in rows), info["stdout"]
    assert signed(0.2149) == "+0.2149" and signed(-1.76) == "-1.7600"


MATCHERS = Path(__file__).resolve().parent / "matchers"


@pytest.mark.parametrize("program, shown", [("example_mad.py", ""),
                                            ("serve_mad.py", "serve True, ")])
def test_the_matcher_line_says_serve_only_for_a_program_that_serves(tmp_path, program, shown):
    """``serve`` means "use the served mode when the program offers one": enroll's and
    info's matcher line shows it for a program that offers the mode, and leaves it out for
    one that has none (it said ``serve True`` there, which does not hold)."""
    cmd = f"{sys.executable} {MATCHERS / program}"
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12))
    store = tmp_path / "s.h5"
    enrolled = invoked(["enroll", faces, "--store", store, "--matcher-cmd", cmd])
    assert enrolled["exit_code"] == 0, enrolled["output"]
    want = f"matcher: external ({shown}timeout_base 60.0, timeout_per_pair 0.01), d = 192"
    assert want in enrolled["stdout"].splitlines()
    info = invoked(["info", "--store", store])
    assert want in info["stdout"].splitlines(), info["output"]
    gallery = tmp_path / "g.h5"
    compressed = invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                          "--clients", "c00", "--quiet", "--matcher-cmd", cmd])
    assert compressed["exit_code"] == 0, compressed["output"]
    line = next(s for s in invoked(["info", "--gallery", gallery])["stdout"].splitlines()
                if s.startswith("matcher:"))
    assert line.startswith(want + ", shared state"), line


def test_roc_says_why_a_rank_is_not_shown(tmp_path):
    """4 enrolled clients: the identification table's rank-5 and rank-10 show "—" with a
    note under the table saying why (there was none)."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=8, n_images=5, shape=(16, 12))
    out = invoked(["roc", faces, "--enrolled", "4", "--train-images", "3", "--repetitions",
                   "1", "--methods", "ssvm", "--m", "1", "--no-plot", "-o",
                   tmp_path / "report"])  # no -q: it checks the 'wrote to' line too
    assert out["exit_code"] == 0, out["output"]
    lines = out["stdout"].splitlines()
    row = lines[lines.index("identification (every probe against every client):") + 3]
    assert row.split()[4:6] == ["—", "—"], row
    assert "—: rank-5 and rank-10: a search among 4 clients has no rank above 4" in lines
    # one repetition, one method: "1 score file", not "1 score files"
    words = " ".join(out["stdout"].split())  # the last line wraps at 100 columns
    assert "1 score file in scores/, 1 full-search score file in identification/" in words


@pytest.mark.parametrize("program", ["example_mad.py", "serve_mad.py"])
@pytest.mark.parametrize("option", ["timeout_base=604800", "timeout_per_pair=604800"])
def test_a_long_finite_matcher_timeout_waits(tmp_path, program, option):
    """A finite timeout longer than select takes (about 25 days; before timeouts were
    bounded, -O timeout_base=1e10) made the one-shot program 'write more than 1048576
    bytes on stdout' (select's OverflowError, read as the output cap; exit 2) and the
    serving one end in 'internal error: OverflowError' (exit 4): the longest timeouts
    allowed (a week each; a request waits at most a week in all) wait in slices of at
    most an hour, and the matcher answers."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    out = invoked(["enroll", faces, "--store", tmp_path / "s.h5", "--matcher-cmd",
                   f"{sys.executable} {MATCHERS / program}", "-O", option, "-q"])
    assert out["exit_code"] == 0, out["output"]


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e999", "[1, NaN]"])
def test_a_matcher_option_that_is_not_finite_is_refused_in_one_line(tmp_path, value):
    """``-O KEY=Infinity`` was read as +inf (stored as null: a store's JSON holds no
    infinity; ``timeout_per_pair=Infinity`` ended in an internal error, exit 4): refused
    at the boundary, one line, exit 2, nothing written."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    store = tmp_path / "s.h5"
    out = invoked(["enroll", faces, "--store", store, "--matcher-cmd",
                   f"{sys.executable} {MATCHERS / 'example_mad.py'}", "-O",
                   f"timeout_per_pair={value}", "-q"])
    assert out["exit_code"] == 2, out["output"]
    bad = "NaN" if value.startswith("[") else value
    assert out["stderr"] == (f"ssgallery: error: --matcher-option timeout_per_pair={value}: {bad} "
                             "is not a finite number (matcher options take finite numbers)\n")
    assert not store.exists()


@pytest.mark.parametrize("args, message", [
    (["verify", "p.png"], ("missing option '--claim' (or --claims FILE) (see 'ssgallery "
                          "verify --help')")),
    (["enroll", "faces", "--size", "12"], ("Invalid value for '--size': expected WxH, e.g. "
                                          "92x112, got '12' (see 'ssgallery enroll --help')")),
    (["show"], "Missing option '--claim' / '--client' (see 'ssgallery show --help')"),
    (["verfy"], "No such command 'verfy'. Did you mean 'verify'? (see 'ssgallery --help')"),
    (["--bogus"], "No such option '--bogus' (see 'ssgallery --help')"),
    # click's parser raises these without a context: the command's help, not the group's
    (["info", "--gallery"], ("Option '--gallery' requires an argument (see 'ssgallery info "
                             "--help')")),
    (["roc", "--methods"], ("Option '--methods' requires an argument (see 'ssgallery roc "
                            "--help')"))])
def test_a_usage_error_is_one_line(args, message):
    """'Errors are one line on stderr' (ssgallery --help, docs/security.md) held for input
    errors only: a usage error printed click's usage, a hint and the error on 4 lines."""
    out = invoked(args)
    assert out["exit_code"] == 2 and out["stdout"] == ""
    assert out["stderr"] == f"ssgallery: error: {message}\n"


def test_synth_reports_progress_and_prints_json(tmp_path):
    """'synth huge --identities 10000' takes minutes: it showed nothing until the end
    (no progress, no -q), and had no --json, unlike every other command."""
    import json

    from click.testing import CliRunner

    from ssgallery.cli import main

    r = CliRunner().invoke(main, ["synth", str(tmp_path / "s"), "--identities", "3",
                                  "--images", "2", "--json"],
                           env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert r.exit_code == 0, r.output
    assert "ssgallery: synth: rendering faces 3/3 (100%)" in r.stderr
    out = json.loads(r.stdout)
    assert (out["files"], out["identities"], out["images"], out["check"]) == (18, 3, 2, None)
    assert len(out["probes"]) == 10 and all(p.endswith(".png") for p in out["probes"])
    quiet = invoked(["synth", tmp_path / "q", "--identities", "3", "--images", "2", "-q"])
    assert quiet["exit_code"] == 0 and quiet["stderr"] == ""


def test_synth_says_what_it_wrote_before_check_fails(tmp_path):
    """synth wrote the files, then --check failed (3 identities are too few for the
    protocol): since its progress (784fde6) it printed the check's error only, not
    'wrote 33 files to OUT' (and printed it before; not with -q, which prints no summary)."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    r = CliRunner().invoke(main, ["synth", str(tmp_path / "s"), "--identities", "3",
                                  "--images", "7", "--check"],
                           env={"SSGALLERY_PROGRESS_INTERVAL": "3600"})  # no progress line
    out = {"exit_code": r.exit_code, "output": r.output, "stdout": r.stdout,
           "stderr": r.stderr}
    assert out["exit_code"] == 2, out["output"]
    assert out["stdout"] == f"wrote 33 files to {tmp_path / 's'}\n"
    assert len(out["stderr"].splitlines()) == 1 and out["stderr"].startswith("ssgallery: error:")
    assert len(list((tmp_path / "s" / "faces").glob("*/*.png"))) == 21


def test_info_client_shows_b_and_the_normalisation(sample_gallery_3):
    """docs/guide.md: 'info --client ID shows one client: m, bytes and threshold against
    its full SVM's, its normalisation and its provenance': the normalisation (and b) were
    in --json only."""
    out = invoked(["info", "--gallery", sample_gallery_3["gallery"], "--client", "c01"])
    assert out["exit_code"] == 0, out["output"]
    first, norm, head = out["stdout"].splitlines()[:3]
    assert re.search(r": m = 2, \d+ bytes, b = [+-]\d+\.\d{4}, threshold [+-]\d", first), first
    assert re.fullmatch(r"normalisation: znorm \(mean [+-]?\d+\.\d{4}, n \d+, std \d+\.\d{4}\)",
                        norm), norm
    assert head == "provenance (how it was trained):"


def test_every_warning_starts_with_ssgallery_warning(tmp_path):
    """enroll --add's stale-basis warning (and compress's client warnings, info's stale
    one) began 'warning:' while the others began 'ssgallery: warning:': one prefix, so
    that a log can be searched for it."""
    first = make_faces(str(tmp_path / "a"), n_clients=3, n_images=4, shape=(16, 12))
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=4, shape=(16, 12),
                      prefix="d", seed=1)
    store = tmp_path / "s.h5"
    assert invoked(["enroll", first, "--store", store, "-q"])["exit_code"] == 0
    added = invoked(["enroll", more, "--store", store, "--add", "-q"])
    assert added["exit_code"] == 0, added["output"]
    compressed = invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "-q",
                          "--max-impostors", "1"])
    assert compressed["exit_code"] == 0, compressed["output"]
    info = invoked(["info", "--gallery", tmp_path / "g.h5"])
    lines = [line for out in (added, compressed, info) for line in out["stderr"].splitlines()]
    assert any("basis was fitted before d00, d01 were added" in line for line in lines)
    assert any("client(s) set their thresholds on training scores" in line for line in lines)
    assert any("compressed from a store whose matcher basis was stale" in line
               for line in lines)
    assert lines and all(line.startswith("ssgallery: warning: ") for line in lines), lines


def test_info_of_one_client_says_1_client(tmp_path):
    """info of a one-client gallery and store printed '1 clients' (the gallery line, the
    1:N line's 'for 1 clients' and 'held-out searches of 1 clients', the store line), as
    did enroll ('enrolled 1 clients') and compress ('1 clients, 1 prototypes per
    client'): a count of one takes the singular (ssgallery.tables.counted), and a count
    of two the plural."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=6, shape=(16, 12))
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    said = []
    for args in (["enroll", faces, "--store", store, "--clients", "c00",
                  "--background", "c01,c02,c03"],
                 ["compress", "--store", store, "-o", gallery, "--m", "1", "--cv-folds", "0",
                  "--target-far", "0.2"]):
        out = invoked(args)
        assert out["exit_code"] == 0, out["output"]
        said.append(" ".join(out["stdout"].split()))
    assert f"{store}: enrolled 1 client and 3 background subjects, 24 images" in said[0]
    assert f"{gallery}: 1 client, 1 prototype per client on average" in said[1], said[1]
    assert "for 1 client;" in said[1] and not re.search(r"\b1 (client|prototype)s\b", said[1])
    out = invoked(["info", "--gallery", gallery, "--store", store])
    assert out["exit_code"] == 0, out["output"]
    text = " ".join(out["output"].split())
    assert f"gallery {gallery}: 1 client, " in text, text
    assert "at target FPIR 1% for 1 client;" in text, text
    assert re.search(r"\d+ training searches of 1 client\)", text), text  # --cv-folds 0
    assert f"store {store}: 1 client + 3 background subjects, 24 images" in text, text
    assert not re.search(r"\b1 clients\b", text), text
    from ssgallery.tables import counted

    assert [counted(n, "client") for n in (0, 1, 2)] == ["0 clients", "1 client", "2 clients"]
    assert counted(1, "impostor person", "impostor people") == "1 impostor person"
    assert counted(3, "impostor person", "impostor people") == "3 impostor people"


def test_every_command_takes_quiet():
    """A script that passes -q to every command failed on info and show ('No such option
    '-q'', exit 2): every command takes the shared -q/--quiet."""
    from ssgallery.cli import main

    lacking = [name for name, cmd in main.commands.items()
               if not any({"-q", "--quiet"} <= set(p.opts) for p in cmd.params)]
    assert lacking == [], lacking


def test_quiet_means_the_same_for_every_command(sample_gallery_3, tmp_path):
    """-q meant different things: compress printed only warnings, enroll, synth and show
    still printed their summary of what they wrote (enroll -q: 's.h5: enrolled 4
    clients ...' and the matcher line), and the help texts differed. Now one meaning, one
    help text: no progress and no summary of what was written (enroll, synth, show print
    nothing on stdout, roc its table without 'wrote to'); answers (info, roc's table) and
    --json still print, warnings and errors too."""
    from ssgallery.cli import main
    from ssgallery.cli.progress import QUIET_HELP

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=4, shape=(16, 12))
    store, gallery = tmp_path / "s.h5", sample_gallery_3["gallery"]
    quiet = invoked(["enroll", faces, "--store", store, "-q"])
    assert quiet["exit_code"] == 0 and store.exists(), quiet["output"]
    assert (quiet["stdout"], quiet["stderr"]) == ("", "")
    assert json.loads(invoked(["enroll", faces, "--store", store, "-q", "--json"])["stdout"])[
        "changed"] is False
    assert invoked(["synth", tmp_path / "syn", "--identities", "3", "--images", "2",
                    "-q"])["stdout"] == ""
    shown = invoked(["show", "--claim", "c01", "-o", tmp_path / "c01.png", "--gallery",
                     gallery, "-q"])
    assert shown["exit_code"] == 0 and shown["stdout"] == "", shown["output"]
    assert (tmp_path / "c01.png").read_bytes().startswith(b"\x89PNG")
    roc = ["roc", faces, "--enrolled", "2", "--train-images", "2", "--repetitions", "1",
           "--methods", "svm", "--no-plot", "--no-identification", "-o", tmp_path / "rep"]
    loud, hushed = invoked(roc), invoked([*roc, "--force", "-q"])
    assert [loud["exit_code"], hushed["exit_code"]] == [0, 0], hushed["output"]
    assert "wrote to " in loud["stdout"] and "wrote to " not in hushed["stdout"]
    assert hushed["stdout"] == loud["stdout"][:loud["stdout"].index("wrote to ")]
    for args in (["info", "--gallery", gallery],
                 ["info", "--gallery", gallery, "--client", "c02", "--json"],
                 ["show", "--claim", "c01", "-o", tmp_path / "j.png", "--gallery", gallery,
                  "--json", "--force"]):
        loud, hushed = invoked(args), invoked([*args, "-q"])
        assert loud["exit_code"] == 0 and loud["stdout"].strip(), loud["output"]
        assert hushed == loud, (args, hushed["output"])
    assert invoked(["info", "--gallery", gallery, "-q"])["stderr"].startswith(
        "ssgallery: warning: expected FRR ")  # this gallery's warning, printed under -q
    helps = {name: next(p.help for p in cmd.params if "--quiet" in p.opts)
             for name, cmd in main.commands.items()}
    assert set(helps.values()) == {QUIET_HELP}, helps


def test_json_keeps_the_warnings_on_stderr(sample_store, sample_gallery_3, tmp_path):
    """'Warnings and errors always print' (-q, --json): compress --json, info --json and
    enroll --add --json printed none of their own (compress: 'expected FRR ...', info
    alike, enroll: the stale basis) and stderr was empty, while the same runs with -q
    printed them. Now --json prints on stderr what -q prints, stdout is the JSON alone."""
    gallery = sample_gallery_3["gallery"]
    args = ["compress", "--store", sample_store["store"], "--m", "2", "--clients",
            "c01,c02,c03", "-o"]
    hushed = invoked([*args, tmp_path / "q.h5", "-q"])
    as_json = invoked([*args, tmp_path / "j.h5", "--json"])
    assert [hushed["exit_code"], as_json["exit_code"]] == [0, 0], as_json["output"]
    assert hushed["stderr"].startswith("ssgallery: warning: expected FRR "), hushed["output"]
    assert as_json["stderr"] == hushed["stderr"]
    assert json.loads(as_json["stdout"])["gallery"] == str(tmp_path / "j.h5")
    hushed = invoked(["info", "--gallery", gallery, "-q"])
    as_json = invoked(["info", "--gallery", gallery, "--json"])
    assert hushed["stderr"].startswith("ssgallery: warning: expected FRR "), hushed["output"]
    assert as_json["stderr"] == hushed["stderr"]
    assert json.loads(as_json["stdout"])["gallery"]["n_clients"] == 3
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    more = make_faces(str(tmp_path / "more"), n_clients=1, n_images=3, shape=(16, 12),
                      prefix="d", seed=1)
    for flag in ("-q", "--json"):
        store = tmp_path / f"s{flag}.h5"
        assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
        added = invoked(["enroll", more, "--store", store, "--add", flag])
        assert added["exit_code"] == 0, added["output"]
        assert added["stderr"].startswith("ssgallery: warning: the eigenface basis was "
                                          "fitted before d00 were added (stale)"), flag
        assert (added["stdout"] == "") if flag == "-q" else json.loads(added["stdout"])[
            "basis_stale"]


def test_claim_and_client_are_one_option_of_show_and_info(sample_gallery_3, tmp_path):
    """'show --client c01' failed ("No such option '--client'. Did you mean '--claim'?")
    while 'info --claim c02' said "Did you mean '--client'?": each command takes both
    spellings, with the same result, and its --help says so."""
    gallery = sample_gallery_3["gallery"]
    runs = {"show": [["show", name, "c01", "-o", tmp_path / "c01.png", "--gallery", gallery,
                      "--json"] for name in ("--claim", "--client")],
            "info": [["info", "--gallery", gallery, name, "c02", "--json"]
                     for name in ("--client", "--claim")]}
    for command, (usual, other) in runs.items():
        first, second = invoked(usual), invoked(other)
        assert first["exit_code"] == 0, first["output"]
        assert second == first, (command, second["output"])
        text = " ".join(invoked([command, "--help"])["stdout"].split())
        both = "--claim, --client ID" if command == "show" else "--client, --claim ID"
        assert both in text, text
