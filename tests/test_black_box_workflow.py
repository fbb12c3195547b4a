"""A new user's session with a black-box matcher program, as the docs tell it
(docs/external-matcher.md): enroll --matcher external, roc on the store, enroll --add.
Real CLI, the example matcher program of the docs, fixed seeds."""

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.cli import main

PROGRAM = f"{sys.executable} {Path(__file__).resolve().parent / 'matchers' / 'example_mad.py'}"


@pytest.fixture
def store(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    res = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "bb.h5"),
                                    "--matcher-cmd", PROGRAM, "--quiet"])
    assert res.exit_code == 0, res.output
    return tmp_path / "bb.h5"


def _roc(store, *args):
    return CliRunner().invoke(main, ["roc", "--store", str(store), "--enrolled", "2",
                                     "--train-images", "3", "--repetitions", "1",
                                     "--no-plot", "--no-identification", "--quiet",
                                     "-o", str(store.parent / "report"), *args],
                              env={"SSGALLERY_MATCHER_CMD": PROGRAM})


def test_roc_on_a_black_box_store_runs_its_default_methods(store):
    """`ssgallery roc` as written, on an external matcher's store: svm-red (RBF pre-images)
    is left out of the defaults, not a failure naming an internal class. It warned 'svm-red
    left out of the default methods ...' on every run; the report says it once, where a
    reader looks for the missing method: summary.json's config.left_out, and a line under
    the table. Nothing on stderr."""
    res = _roc(store, "--json")
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    import json

    summary = json.loads(res.stdout)
    assert summary["config"]["methods"] == ["svm", "ssvm", "svm-sel"], summary["config"]
    why = "needs an RBF similarity (eigenface, dlib); the external matcher is a black box"
    assert summary["config"]["left_out"] == {"svm-red": why}
    text = _roc(store, "--force")
    assert text.exit_code == 0 and text.stderr == "", text.output
    assert f"svm-red not run: it {why} (the default methods leave it out)\n" in text.stdout
    assert "svm-red" not in _roc(store, "--methods", "svm", "--force").stdout


def test_roc_refuses_a_listed_svm_red_on_a_black_box_before_training(store):
    res = _roc(store, "--methods", "svm,svm-red,ssvm")
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (
        "ssgallery: error: svm-red needs an RBF similarity (eigenface, dlib); the external "
        "matcher is a black box: leave it out (--methods svm,ssvm)")
    assert "HeuristicGradient" not in res.output
    assert not (store.parent / "report").exists()


def test_roc_caps_the_black_box_default_m_at_a_split_s_training_images(store):
    """2 clients x 2 training images give 4 rows: the black box's default m of 5 is 4
    there, as compress caps it at a store's images, and svm-sel keeps every support
    vector when they are all its rows (it stopped: 'n_prototypes=5 exceeds the 4
    training samples', then an internal error on no row left to pad with); an explicit
    --m 5 is refused before training, naming the flags that set the rows."""
    import json

    res = _roc(store, "--train-images", "2", "--methods", "svm,ssvm,svm-sel", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["config"]["m"] == [4]
    assert {r["label"] for r in summary["methods"]} >= {"ssvm m=4", "svm-sel m=4"}
    res = _roc(store, "--train-images", "2", "--m", "5")
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().endswith(
        "--m = 5 is more prototypes than a split's training images (4: --enrolled x "
        "--train-images)")


def test_enroll_add_on_a_black_box_leaves_no_stale_basis(store, tmp_path):
    """An external program learns nothing from the enrolled images: ``enroll --add`` and
    the ``compress --update`` after it say nothing of a stale basis to refit (they did,
    twice, with advice to re-run enroll that changed nothing)."""
    import json

    new = make_faces(str(tmp_path / "new"), n_clients=2, n_images=5, shape=(16, 12), seed=3,
                     prefix="n")
    runner, env = CliRunner(), {"SSGALLERY_MATCHER_CMD": PROGRAM}
    gallery = str(tmp_path / "g.h5")
    common = ["--store", str(store), "-o", gallery, "--cv-folds", "0", "--quiet"]
    assert runner.invoke(main, ["compress", *common], env=env).exit_code == 0
    res = runner.invoke(main, ["enroll", new, "--add", "--store", str(store)],
                        env={"SSGALLERY_PROGRESS_INTERVAL": "3600"})  # its summary: no -q
    assert res.exit_code == 0, res.output
    assert "added 2 client(s) (n00, n01)" in res.stdout and "stale" not in res.stderr
    res = runner.invoke(main, ["compress", *common, "--update", "--json"], env=env)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["trained"] == ["n00", "n01"] and summary["basis_stale"] is False
    assert "stale" not in res.stderr, res.stderr
    res = runner.invoke(main, ["info", "--gallery", gallery, "--store", str(store), "--json"])
    assert res.exit_code == 0 and "stale" not in res.stderr, res.output
    info = json.loads(res.stdout)
    assert info["store"]["basis_stale"] is False and info["store"]["stale_clients"] == []


def test_clients_are_listed_in_natural_order(tmp_path):
    """docs/guide.md: "Clients and files are sorted naturally (s2 before s10)": the store's
    clients and enroll --add's new ones (AT&T's s1 ... s40 came out s1, s10, s11, s2)."""
    import json
    import os

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=3, shape=(16, 12))
    for i, name in enumerate(["s1", "s2", "s10", "s11"]):
        os.rename(os.path.join(faces, f"c{i:02d}"), os.path.join(faces, name))
    new = make_faces(str(tmp_path / "new"), n_clients=2, n_images=3, shape=(16, 12), seed=5)
    os.rename(os.path.join(new, "c00"), os.path.join(new, "s9"))
    os.rename(os.path.join(new, "c01"), os.path.join(new, "s20"))
    runner, store = CliRunner(), str(tmp_path / "e.h5")
    res = runner.invoke(main, ["enroll", faces, "--store", store, "--json", "--quiet"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["clients"] == ["s1", "s2", "s10", "s11"]
    res = runner.invoke(main, ["enroll", new, "--add", "--store", store])  # its summary
    assert res.exit_code == 0, res.output
    assert "added 2 client(s) (s9, s20); now 6 clients" in res.stdout


def test_update_names_the_options_its_clients_were_trained_with(store, tmp_path):
    """compress --update (and --resume) after a run with other options names them (it said
    only "trained with other options than this run's")."""
    runner, env = CliRunner(), {"SSGALLERY_MATCHER_CMD": PROGRAM}
    common = ["--store", str(store), "-o", str(tmp_path / "g.h5"), "--cv-folds", "0", "-q"]
    res = runner.invoke(main, ["compress", *common, "--swap-rounds", "1"], env=env)
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["compress", *common, "--update"], env=env)
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines()[0] == (
        f"ssgallery: warning: {tmp_path / 'g.h5'}: c00, c01, c02, c03: trained with other "
        "options than this run's (they record --swap-rounds 1, this run 3): trained again "
        "(to keep them, give the options they were compressed with)"), res.stderr


def test_info_shows_the_program_contract_the_files_record(store, tmp_path):
    """``info`` on a black-box store and its gallery shows what each file records of the
    program's contract (kind, symmetric, range, the distance's conversion, the quality
    threshold, the contract digest), in text and --json, reading the file only: the
    program the host names is never run. The digest's first digits are those another
    program's refusal names (info showed only the timeouts: which program a file needs
    was seen only when a later command refused one)."""
    import json

    matchers = Path(__file__).resolve().parent / "matchers"
    gallery = tmp_path / "g.h5"
    res = CliRunner().invoke(main, ["compress", "--store", str(store), "-o", str(gallery),
                                    "--cv-folds", "0", "--quiet"],
                             env={"SSGALLERY_MATCHER_CMD": PROGRAM})
    assert res.exit_code == 0, res.output
    log = tmp_path / "runs.log"
    logged = {"SSGALLERY_MATCHER_CMD": f"{sys.executable} {matchers / 'log_calls.py'} "
                                       + PROGRAM, "MATCHER_LOG": str(log)}
    res = CliRunner().invoke(main, ["info", "--gallery", str(gallery), "--store", str(store),
                                    "--json"], env=logged)
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    contract = info["store"]["matcher_contract"]
    assert info["gallery"]["matcher_contract"] == contract
    digest, scale = contract["contract_sha256"], contract["distance_scale"]
    threshold = contract["quality_threshold"]
    assert len(digest) == 64 and scale > 0 and isinstance(threshold, float)
    assert contract == {"kind": "distance", "symmetric": True, "range": [0.0, 255.0],
                        "quality": True, "quality_threshold": threshold,
                        "conversion": "exp(-d/scale)", "distance_scale": scale,
                        "serve_offered": False, "contract_sha256": digest}
    res = CliRunner().invoke(main, ["info", "--gallery", str(gallery), "--store", str(store)],
                             env=logged)
    assert res.exit_code == 0, res.output
    line = (f"program contract: distance, symmetric, range [0, 255], similarity "
            f"exp(-d/{scale:.4g}), quality threshold {threshold:.4g}; digest {digest[:12]}... "
            "(the program named on this host must describe itself with it)")
    lines = res.stdout.splitlines()
    assert lines.count(line) == 2, res.stdout  # under each file's matcher line
    assert [lines[i - 1].split(" (")[0] for i, s in enumerate(lines) if s == line] == [
        "matcher: external"] * 2
    assert not log.exists()  # info ran no program
    other = f"{sys.executable} {matchers / 'clipped_corr.py'}"
    res = CliRunner().invoke(main, ["verify", str(store.parent / "faces" / "c00" / "0.png"),
                                    "--claim", "c00", "--gallery", str(gallery),
                                    "--matcher-cmd", other])
    assert res.exit_code == 2 and f"the file was made with {digest[:12]}..." in res.stderr, \
        res.output
    eigen = tmp_path / "eigen.h5"
    res = CliRunner().invoke(main, ["enroll", str(store.parent / "faces"), "--store",
                                    str(eigen), "--quiet"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["info", "--store", str(eigen), "--json"])
    assert json.loads(res.stdout)["store"]["matcher_contract"] is None  # runs no program
    res = CliRunner().invoke(main, ["info", "--store", str(eigen)])
    assert res.exit_code == 0 and "contract" not in res.stdout, res.output


def test_enroll_and_info_client_show_the_program_contract_line(store, tmp_path):
    """The program contract line info shows under a file's matcher line (a4f383d) was
    missing where a user meets the file first and where they look at one client: enroll's
    summary (text and --json) and info --client (text and --json) now show the same
    line as info --store, read from the file (info --client runs no program); an
    eigenface store's enroll shows none."""
    import json

    faces = str(store.parent / "faces")
    gallery = tmp_path / "g.h5"
    res = CliRunner().invoke(main, ["compress", "--store", str(store), "-o", str(gallery),
                                    "--cv-folds", "0", "--quiet"],
                             env={"SSGALLERY_MATCHER_CMD": PROGRAM})
    assert res.exit_code == 0, res.output
    shown = CliRunner().invoke(main, ["info", "--store", str(store)])
    line = next(s for s in shown.stdout.splitlines() if s.startswith("program contract: "))
    contract = json.loads(CliRunner().invoke(main, ["info", "--store", str(store), "--json"])
                          .stdout)["store"]["matcher_contract"]
    fresh = tmp_path / "fresh.h5"
    for args in ([], ["--json"]):
        res = CliRunner().invoke(main, ["enroll", faces, "--store", str(fresh),
                                        "--matcher-cmd", PROGRAM, *args])
        assert res.exit_code == 0, res.output
        if args:
            assert json.loads(res.stdout)["matcher_contract"] == contract
        else:
            lines = res.stdout.splitlines()
            assert lines[1].startswith("matcher: external") and lines[2] == line, res.stdout
    log = tmp_path / "runs.log"
    matchers = Path(__file__).resolve().parent / "matchers"
    logged = {"SSGALLERY_MATCHER_CMD": f"{sys.executable} {matchers / 'log_calls.py'} "
                                       + PROGRAM, "MATCHER_LOG": str(log)}
    res = CliRunner().invoke(main, ["info", "--gallery", str(gallery), "--client", "c00"],
                             env=logged)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1] == line, res.stdout
    res = CliRunner().invoke(main, ["info", "--gallery", str(gallery), "--client", "c00",
                                    "--json"], env=logged)
    assert json.loads(res.stdout)["client"]["matcher_contract"] == contract
    assert not log.exists()  # info --client ran no program
    eigen = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5")])
    assert eigen.exit_code == 0 and "contract" not in eigen.stdout, eigen.output


def test_roc_refuses_a_program_that_is_not_the_stores_as_compress_does(store, tmp_path,
                                                                       monkeypatch):
    """'roc --store e.h5 --matcher-cmd OTHER', OTHER describing another contract than the
    one the store records, ran the protocol with OTHER and reported its figures as the
    store's (exit 0), where compress refuses OTHER as 'not the file's matcher': now roc
    refuses it with compress's line, exit 2, before any report is written."""
    other = f"{sys.executable} {Path(__file__).resolve().parent / 'matchers' / 'described.py'}"
    monkeypatch.delenv("DESCRIBED_JSON", raising=False)  # its default: a distance
    compressed = CliRunner().invoke(main, ["compress", "--store", str(store), "-o",
                                           str(tmp_path / "g.h5"), "--m", "1", "-q",
                                           "--matcher-cmd", other])
    assert compressed.exit_code == 2 and "is not the file's matcher" in compressed.stderr, \
        compressed.output
    res = _roc(store, "--methods", "ssvm", "--m", "1", "--matcher-cmd", other)
    assert (res.exit_code, res.stdout, res.stderr) == (2, "", compressed.stderr), res.output
    assert not (tmp_path / "report").exists() and not (tmp_path / "g.h5").exists()
    assert _roc(store, "--methods", "ssvm", "--m", "1").exit_code == 0  # the store's program
