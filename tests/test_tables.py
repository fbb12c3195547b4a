"""Tables for humans: the default roc table fits 100 columns whatever the methods, m and
modes; --wide shows every convention; one symbol for a figure that cannot be resolved."""

import numpy as np
from click.testing import CliRunner

from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.report import WIDTH, format_dev_eval, format_table
from ssgallery.biometrics.scores import Scores
from ssgallery.tables import DASH
from ssgallery.tables import format_table as format_rows


def _table(method, m, seed, n_clients=12, fta=0.0, thresholds=False, matches=2.0):
    rng = np.random.default_rng(seed)
    claimed, real, score, clients = [], [], [], {}
    for c in range(n_clients):
        cid = f"Person_With_A_Long_Name_{c}"
        for s in rng.normal(2.0, 1.0, 5):
            claimed.append(cid), real.append(cid), score.append(s)
        for i, s in enumerate(rng.normal(0.0, 1.0, 60)):
            claimed.append(cid), real.append(f"z{i}"), score.append(s)
        clients[cid] = {"matches": matches * (1 + c % 3), "fit_seconds": 0.5}
        if thresholds:
            clients[cid]["threshold"] = 1.5
    score = np.array(score)
    score[rng.random(len(score)) < fta] = np.nan
    return Scores(method, m, 0, np.array(claimed), np.array(real),
                  np.array([f"p{i}" for i in range(len(score))]), score, clients)


def test_default_table_fits_100_columns_wide_has_every_convention():
    tables = [_table("svm", None, 0, matches=180.0), _table("ssvm-paper", 10, 1),
              _table("svm-red", 2, 2), _table("svm-sel", 2, 3), _table("nystrom", 2, 4),
              _table("ps-km", 10, 5), _table("gallery", 2, 6, fta=0.05, thresholds=True)]
    summaries = evaluate(tables, n_boot=20)
    text = format_table(summaries)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH == 100
    head = lines[0]
    for column in ("method", "m", "matches", "EER % [95% CI]", "FRR@FAR=1%",
                   "FAR@thresholds %", "FRR@thresholds %"):
        assert column in head
    assert "averaged-curve" not in head and "FTA" not in head
    assert "`wide`: every convention" in text  # the command line shows it as --wide
    # 60 impostor claims per client cannot resolve FAR 1 %: the one symbol and its note
    assert f"{DASH}: FAR 1% is below the resolution of a client's curve" in text
    assert "-" not in {cell for line in lines[2:len(tables) + 2] for cell in line.split()}
    wide = format_table(summaries, wide=True)
    for column in ("EER averaged-curve %", "EER global-threshold %",
                   "FRR@FAR=0.1% averaged-curve", "FRR@FAR=1% global-threshold",
                   "FRR@FAR=0.1% global-threshold", "fit s/client", "FTA genuine %",
                   "FTA impostor %"):
        assert column in wide.splitlines()[0]
    assert "--wide" not in wide


def test_columns_are_sized_to_their_content():
    text = format_rows(["client", "m", "FRR"], [["Arnold_Schwarzenegger", 2, "10%"],
                                                ["c1", None, "100%"]], right=[1, 2])
    assert text.splitlines() == ["client                 m   FRR",
                                 "---------------------  -  ----",
                                 "Arnold_Schwarzenegger  2   10%",
                                 f"c1                     {DASH}  100%"]


def test_dev_eval_table_fits(tmp_path):
    from ssgallery.biometrics.evaluation import dev_eval

    res = dev_eval([_table("a", None, 0)], [_table("a", None, 1)])
    assert max(len(line) for line in format_dev_eval(res).splitlines()) <= WIDTH


def test_roc_wide_flag(tmp_path):
    from ssgallery.biometrics.scores import write_scores
    from ssgallery.cli import main

    write_scores(tmp_path / "ssvm-m2.r0.txt", _table("ssvm", 2, 0))
    args = ["roc", "--scores", str(tmp_path / "ssvm-m2.r0.txt"), "--no-plot", "-q"]
    narrow = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "a")])
    wide = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "b"), "--wide"])
    assert narrow.exit_code == wide.exit_code == 0
    assert "EER averaged-curve" in wide.stdout and "EER averaged-curve" not in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 100
