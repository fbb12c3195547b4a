"""The real CLI on sample_data/: enroll -> compress -> verify -> info -> show, through
click's CliRunner and through true subprocesses."""

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from helpers import copied, make_faces

from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path

CLIENTS = "c01,c02,c03"  # compress a few clients (all 200 images still train as impostors)


@pytest.fixture(scope="module")
def data(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("cli")
    faces = sample_faces_path()
    probes = faces.parent / "probes"
    store, gallery = str(root / "enrollment.h5"), str(root / "gallery.h5")
    if (faces / "c03").is_dir():  # enrolled and compressed once per run (conftest.py)
        shared = request.getfixturevalue("sample_store")
        copied(shared["store"], root, "enrollment.h5")
        enrolled = SimpleNamespace(**shared["enrolled"])
        shared = request.getfixturevalue("sample_gallery_3")
        copied(shared["gallery"], root, "gallery.h5")
        compressed = SimpleNamespace(**shared["compressed"])
    else:  # sample_data not generated yet: a tiny stand-in
        faces = make_faces(str(root / "faces"), n_clients=5, n_images=6, prefix="c")
        probes = root / "probes"
        probes.mkdir()
        shutil.copy(os.path.join(faces, "c03", "5.png"), probes / "c03_genuine_1.png")
        shutil.copy(os.path.join(faces, "c01", "5.png"), probes / "c01_genuine_1.png")
        runner = CliRunner()
        enrolled = runner.invoke(main, ["enroll", str(faces), "--store", store, "--json"])
        compressed = runner.invoke(main, ["compress", "--store", store, "-o", gallery, "--m",
                                          "2", "--clients", CLIENTS, "--json"])
    return {"root": root, "faces": str(faces), "probes": probes, "store": store,
            "gallery": gallery, "enrolled": enrolled, "compressed": compressed}


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ssgallery", *args], check=False,
                          capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))


def test_enroll_and_compress(data):
    r = data["enrolled"]
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["changed"] and out["matcher"] == "eigenface" and "c03" in out["clients"]
    assert os.path.exists(data["store"])
    r = CliRunner().invoke(main, ["enroll", data["faces"], "--store", data["store"]])
    assert r.exit_code == 0 and "nothing changed" in r.stdout
    r = data["compressed"]
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [c["client"] for c in out["clients"]] == CLIENTS.split(",")
    assert all(c["m"] == 2 and c["svm_n_support"] > 2 for c in out["clients"])
    # held-out agreement with the SVM (threshold CV): m = 2 ranks like its teacher
    assert all(abs(c["teacher_gap"]) < 0.05 for c in out["clients"])
    assert out["worse_than_svm"] == []
    # a short run on a pipe: no progress line (tests/test_progress.py), its warnings only
    assert all(line.startswith("ssgallery: warning: ") for line in r.stderr.splitlines())


def test_compress_names_clients_much_worse_than_their_svm(data, tmp_path):
    # one prototype from a random start, one sweep: the distilled models rank held-out
    # images far worse than their SVMs; compress names them (as never-accepting ones)
    gallery = str(tmp_path / "bad.h5")
    args = ["compress", "--store", data["store"], "-o", gallery, "--m", "1", "--init",
            "random", "--max-iter", "1", "--clients", CLIENTS]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    bad = [c["client"] for c in out["clients"] if c["teacher_gap"] > 0.05]
    assert bad and out["worse_than_svm"] == bad
    r = CliRunner().invoke(main, [*args, "--force"])
    assert r.exit_code == 0, r.output
    assert f"warning: {len(bad)} client(s) rank held-out images much worse than their SVM" \
        in r.stderr and ", ".join(bad) in r.stderr
    assert "vs SVM" in r.stdout
    # --guard refits them (other starts, with their threshold CV) and keeps the best
    r = CliRunner().invoke(main, [*args, "--guard", "--force", "--json"])
    assert r.exit_code == 0, r.output
    guarded = {c["client"]: c["teacher_gap"] for c in json.loads(r.stdout)["clients"]}
    before = {c["client"]: c["teacher_gap"] for c in out["clients"]}
    assert all(guarded[c] < before[c] for c in bad)
    assert json.loads(r.stdout)["worse_than_svm"] == [c for c in bad if guarded[c] > 0.05]
    r = CliRunner().invoke(main, ["info", "--gallery", gallery, "--client", bad[0], "--json"])
    assert r.exit_code == 0, r.output
    record = json.loads(r.stdout)["client"]["provenance"]["guard"]
    assert record["attempts"][0][0] == "first fit" and record["repaired"]


def _untimed(summary):
    for client in summary["clients"]:
        client.pop("seconds"), client.pop("cpu_seconds")
    return summary


def test_compress_quiet_prints_only_warnings(data, tmp_path):
    """compress -q: nothing on stdout (before: the client table and the summary lines),
    the same warnings on stderr, no progress even where every step would print one;
    -q --json prints the same JSON as --json."""
    args = ["compress", "--store", data["store"], "-o", str(tmp_path / "g.h5"), "--m", "1",
            "--init", "random", "--max-iter", "1", "--clients", CLIENTS, "--force"]
    loud = CliRunner().invoke(main, args)
    assert loud.exit_code == 0, loud.output
    assert "vs SVM" in loud.stdout and "target FAR" in loud.stdout
    warnings = [line for line in loud.stderr.splitlines() if "warning: " in line]
    assert any("much worse than their SVM" in line for line in warnings), loud.stderr
    quiet = CliRunner().invoke(main, [*args, "-q"], env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout == ""
    assert quiet.stderr.splitlines() == warnings
    runs = [CliRunner().invoke(main, [*args, "--json", *q]) for q in ([], ["-q"])]
    assert [r.exit_code for r in runs] == [0, 0], runs[1].output
    assert _untimed(json.loads(runs[1].stdout)) == _untimed(json.loads(runs[0].stdout))


def test_compress_names_clients_thresholded_on_training_scores(tmp_path):
    """--max-impostors 1 leaves each client one impostor person: nothing can be held out,
    its threshold comes from its training scores and compress says so (before: a
    silent 'expected FAR 0.00%' on such galleries); not when every client is held out,
    nor with --cv-folds 0, which asks for training scores."""
    from ssgallery.app.enroll import enroll

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5)
    enroll(faces, tmp_path / "e.h5")
    base = ["compress", "--store", str(tmp_path / "e.h5"), "-o", str(tmp_path / "g.h5"),
            "--force"]
    found = {}
    for extra in ([], ["--max-impostors", "1"], ["--max-impostors", "1", "--cv-folds", "0"]):
        r = CliRunner().invoke(main, [*base, *extra, "--json"])
        assert r.exit_code == 0, r.output
        found[" ".join(extra)] = json.loads(r.stdout)["not_held_out"]
    assert found == {"": [], "--max-impostors 1": ["c00", "c01", "c02", "c03"],
                     "--max-impostors 1 --cv-folds 0": []}
    r = CliRunner().invoke(main, [*base, "--max-impostors", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert ("warning: 4 client(s) set their thresholds on training scores, with too few "
            "impostor people or own images to hold out") in r.stderr


def test_clients_of_one_image_are_told_they_need_another(tmp_path):
    """Clients enrolled with one image each (enroll --min-images 1) hold nothing out: the
    warning's advice names their own images, not only impostors (it said 'raise
    --max-impostors, use --impostors sample or enrol more people', all in place already)."""
    from ssgallery.app.enroll import enroll

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=1)
    enroll(faces, tmp_path / "e.h5", min_images=1)
    r = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e.h5"), "-o",
                                  str(tmp_path / "g.h5"), "-q"])
    assert r.exit_code == 0, r.output
    warned = [ln for ln in r.stderr.splitlines() if "training scores" in ln]
    assert len(warned) == 1 and warned[0].endswith(
        "; a client needs at least 2 images of its own to hold one out"), r.stderr


def test_the_files_are_named_alike_in_every_command(tmp_path):
    """enroll -o/--output writes the store (as compress, show and roc name what they
    write), compress --gallery the gallery (as verify, identify, info, show and roc name
    it): 'compress --gallery g.h5' said "No such option '--gallery'. Did you mean
    '--guard'?"."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4)
    store, gallery = tmp_path / "s.h5", tmp_path / "g.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "-o", str(store), "-q"])
    assert r.exit_code == 0 and store.exists(), r.output
    r = CliRunner().invoke(main, ["compress", "--store", str(store), "--gallery", str(gallery),
                                  "--m", "1", "--cv-folds", "0", "--max-iter", "2", "-q"])
    assert r.exit_code == 0 and gallery.exists(), r.output
    r = CliRunner().invoke(main, ["info", "--gallery", str(gallery), "--store", str(store)])
    assert r.exit_code == 0 and "3 clients" in r.stdout, r.output


def test_verify_accepts_genuine_and_rejects_others(data):
    runner = CliRunner()
    # a probe its client's threshold accepts: c02's in sample_gallery_3 (c01's and c03's
    # probes score below their thresholds: the pooled T of 3 clients is high)
    claim = "c02" if (data["probes"] / "c02_genuine_1.png").is_file() else "c03"
    genuine = [str(data["probes"] / f"{claim}_genuine_1.png")]
    others = sorted(str(p) for p in data["probes"].glob("c01_genuine_*.png"))
    r = runner.invoke(main, ["verify", *genuine, "--claim", claim, "--gallery", data["gallery"]])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert all(line.endswith("ACCEPT") and "score" in line and "threshold" in line
               for line in lines[:len(genuine)])
    r = runner.invoke(main, ["verify", *genuine, *others, "--claim", claim,
                             "--gallery", data["gallery"], "--json"])
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert not out["all_accepted"] and out["claim"] == claim
    assert [x["accept"] for x in out["results"]] == [True] * len(genuine) + [False] * len(others)
    assert all(x["threshold"] == out["results"][0]["threshold"] for x in out["results"])
    # --list: one path per line, comments and blank lines skipped
    listing = data["root"] / "probes.txt"
    listing.write_text("# probes\n" + "\n".join(genuine) + "\n\n")
    r = runner.invoke(main, ["verify", "--list", str(listing), "--claim", claim,
                             "--gallery", data["gallery"], "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)["results"]) == len(genuine)


def test_info(data):
    r = CliRunner().invoke(main, ["info", "--gallery", data["gallery"], "--store", data["store"],
                                  "--json", "--svm"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    g = out["gallery"]
    assert g["n_clients"] == 3 and g["matcher"] == "eigenface" and g["ratio"] > 5
    assert all(c["m"] == 2 and c["svm_bytes"] > c["bytes"] for c in g["clients"])
    assert out["store"]["n_clients"] >= 5 and out["store"]["basis_stale"] is False
    r = CliRunner().invoke(main, ["info", "--gallery", data["gallery"], "--svm"])
    assert r.exit_code == 0 and "smaller" in r.stdout and "c03" in r.stdout
    r = CliRunner().invoke(main, ["info", "--gallery", data["gallery"]])
    assert r.exit_code == 0 and "smaller" not in r.stdout and "c03" in r.stdout


def test_show(data):
    out = data["root"] / "protos.png"
    r = CliRunner().invoke(main, ["show", "--claim", "c03", "-o", str(out),
                                  "--gallery", data["gallery"], "--json"])
    assert r.exit_code == 0, r.output
    from PIL import Image

    with Image.open(out) as img:
        assert img.width > 0 and img.height > 0
    assert json.loads(r.stdout)["m"] == 2


def test_help_of_every_command():
    """Every registered command (new ones included) has --help with examples and names
    its exit statuses (only verify's and identify's did: a script calling enroll,
    compress, info, roc, show or synth had to find them in the main help); the ones
    whose output scripts read have --json."""
    import re

    assert {"enroll", "compress", "verify", "info", "show", "roc", "synth"} <= set(main.commands)
    for cmd in main.commands:
        r = CliRunner().invoke(main, [cmd, "--help"])
        assert r.exit_code == 0 and "Examples:" in r.stdout, cmd
        text = " ".join(r.stdout.split())
        statuses = re.search(r"Exit status: (.*?\.) ", text)
        assert statuses, (cmd, text)
        assert all(f"{n} " in statuses[1] for n in (0, 2, 4)), (cmd, statuses[1])
        if cmd != "synth":  # synth writes a folder of images, nothing to parse
            assert "--json" in r.stdout, cmd


def test_true_subprocess(data, tmp_path):
    """python -m ssgallery as a user runs it: default file names in the working folder."""
    shutil.copy(data["store"], tmp_path / "enrollment.h5")
    genuine = sorted(str(p) for p in data["probes"].glob("c03_genuine_*.png"))
    r = _run("compress", "--m", "2", "--clients", "c03", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "gallery.h5: 1 client, 2 prototypes per client" in r.stdout
    r = _run("verify", genuine[0], "--claim", "c03", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("ACCEPT")
    other = min(str(p) for p in data["probes"].glob("c01_genuine_*.png"))
    r = _run("verify", other, "--claim", "c03", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.rstrip().endswith("REJECT")
    r = _run("verify", other, "--claim", "nobody", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "ssgallery: error: gallery.h5: unknown client 'nobody' (known: c03)\n"
    exe = os.path.join(os.path.dirname(sys.executable), "ssgallery")
    if os.path.exists(exe):  # the installed console script
        r = subprocess.run([exe, "info", "--json"], check=False, capture_output=True,
                           text=True, cwd=tmp_path)
        assert r.returncode == 0 and json.loads(r.stdout)["gallery"]["n_clients"] == 1


def test_enroll_add_and_background_cli(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=3)
    bg = make_faces(str(tmp_path / "bg"), n_clients=2, n_images=3, seed=5, prefix="b")
    store = str(tmp_path / "e.h5")
    runner = CliRunner()
    r = runner.invoke(main, ["enroll", faces, "--store", store, "--clients", "c00,c01",
                             "--background", bg])
    assert r.exit_code == 0, r.output
    assert "enrolled 2 clients and 2 background subjects, 12 images of 24x32" in r.stdout
    r = runner.invoke(main, ["enroll", faces, "--store", store, "--add"])
    assert r.exit_code == 0, r.output
    assert "added 2 client(s) (c02, c03); now 4 clients, 18 images" in r.stdout
    assert "basis was fitted before c02, c03 were added (stale)" in r.stderr
    r = runner.invoke(main, ["info", "--store", store])
    assert "basis STALE" in r.stdout


MATCHERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matchers")


@pytest.fixture(scope="module")
def foreign_cmd(tmp_path_factory):
    """The foreign test matcher (a distance, not symmetric) at a path with a space."""
    folder = tmp_path_factory.mktemp("ext") / "my matchers"
    folder.mkdir()
    prog = folder / "clipped corr.py"
    shutil.copy(os.path.join(MATCHERS, "clipped_corr.py"), prog)
    return [sys.executable, str(prog)]


def test_enroll_matcher_cmd_external(tmp_path, foreign_cmd):
    import shlex

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    store = str(tmp_path / "e.h5")
    r = CliRunner().invoke(main, ["enroll", faces, "--store", store, "--matcher-cmd",
                                  shlex.join(foreign_cmd), "--json"])  # implies external
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["matcher"] == "external" and out["n_images"] == 9
    assert "command" not in out["matcher_config"]  # the store names no program
    r = CliRunner().invoke(main, ["enroll", faces, "--store", store, "--matcher", "external",
                                  "--matcher-cmd", shlex.join(foreign_cmd)])
    assert r.exit_code == 0 and "nothing changed" in r.stdout, r.output
    # -O command=... still works and is the same matcher (same store fingerprint)
    r = CliRunner().invoke(main, ["enroll", faces, "--store", store, "--matcher", "external",
                                  "-O", f"command={json.dumps(foreign_cmd)}"])
    assert r.exit_code == 0 and "nothing changed" in r.stdout, r.output
    # compress with a black-box matcher in reasonable time, then verify through it
    # the host names the program again: here through $SSGALLERY_MATCHER_CMD
    gallery = str(tmp_path / "g.h5")
    env = {"SSGALLERY_MATCHER_CMD": shlex.join(foreign_cmd)}
    r = CliRunner().invoke(main, ["compress", "--store", store, "-o", gallery, "--m", "1",
                                  "--clients", "c00", "--cv-folds", "0", "--max-iter", "2",
                                  "--solver", "paper", "--json"], env=env)
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["clients"][0]
    assert row["client"] == "c00" and row["m"] == 1
    probe = os.path.join(faces, "c00", "0.png")
    r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", gallery],
                           env=env)
    assert r.exit_code == 0 and "ACCEPT" in r.stdout, r.output
    r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", gallery,
                                  "--matcher-cmd", shlex.join(foreign_cmd)])
    assert r.exit_code == 0 and "ACCEPT" in r.stdout, r.output


def test_the_matcher_line_escapes_what_a_store_or_gallery_holds():
    """enroll's and info's matcher line prints a file's matcher name and configuration:
    a control character in them is escaped, never sent to the terminal."""
    from ssgallery.cli.options import matcher_line

    line = matcher_line("ext\x1b[2J", {"serve\x1b]0;pwned\x07": True, "unset": None}, 3)
    assert "\x1b" not in line and "\x07" not in line
    assert line == "matcher: ext\\x1b[2J (serve\\x1b]0;pwned\\x07 True), d = 3"


def test_the_contract_line_says_what_a_file_records_of_a_program():
    """info's contract line under the matcher line: an open range, a similarity (no
    conversion), no quality score, a file's digest escaped; none for a matcher that runs
    no program."""
    from ssgallery.cli.options import contract_line

    contract = {"kind": "similarity", "symmetric": False, "range": [-float("inf"), 1.0],
                "quality": False, "quality_threshold": None, "conversion": "identity",
                "distance_scale": None, "serve_offered": None,
                "contract_sha256": "\x1b[2J" + "0" * 60}
    assert contract_line(contract) == (
        "program contract: similarity, not symmetric, range [-inf, 1], no quality score; "
        "digest \\x1b[2J00000000... (the program named on this host must describe itself "
        "with it)")
    assert contract_line(None) is None
