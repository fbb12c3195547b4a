"""roc names the client models far above the same client's SVM (ssgallery.biometrics.
client_gaps): a mean close to the SVM's must not hide a failed person."""

import numpy as np
import pytest

from ssgallery.biometrics import metrics
from ssgallery.biometrics.client_gaps import client_gaps
from ssgallery.biometrics.evaluation import client_eers, evaluate
from ssgallery.biometrics.report import format_table
from ssgallery.biometrics.scores import Scores

IMPOSTOR = [float(v) for v in range(40)]  # of every claimed client


def _table(method, m, repetition, genuine):
    """Scores of clients c1..c3: ``genuine[c]`` their genuine scores, `IMPOSTOR` against
    each from the other clients' images."""
    claimed, real, score = [], [], []
    for c, mine in genuine.items():
        claimed += [c] * (len(mine) + len(IMPOSTOR))
        real += [c] * len(mine) + ["x" if c != "x" else "y"] * len(IMPOSTOR)
        score += list(mine) + IMPOSTOR
    n = len(score)
    return Scores(method, m, repetition, np.array(claimed), np.array(real),
                  np.array([f"p{i}" for i in range(n)]), np.array(score, dtype=float))


GOOD = {"c1": [50.0, 60.0], "c2": [50.0, 60.0], "c3": [50.0, 60.0]}


def _tables():
    """svm: every client separated, both repetitions. ssvm m=2: c2 of repetition 1
    half fails (one genuine score among the impostors), c3 of repetition 0 slightly
    (its genuine score at the top impostor's); the rest as the SVM."""
    svm = [_table("svm", None, r, GOOD) for r in (0, 1)]
    ssvm = [_table("ssvm", 2, 0, {**GOOD, "c3": [39.0, 60.0]}),
            _table("ssvm", 2, 1, {**GOOD, "c2": [20.5, 60.0]})]
    return svm + ssvm


def test_client_gaps_count_and_name_the_client_models_above_their_reference():
    tables = _tables()
    svm, ssvm = client_eers(tables[:2]), client_eers(tables[2:])
    assert {k[:2] for k in svm} == {(r, c) for r in (0, 1) for c in ("c1", "c2", "c3")}
    assert set(svm) == set(ssvm)  # the same claims: the same keys
    assert all(v == 0.0 for v in svm.values())
    half = metrics.curve_eer(*metrics.roc_curve(np.array(IMPOSTOR), np.array([20.5, 60.0]))[:2])
    slight = metrics.curve_eer(*metrics.roc_curve(np.array(IMPOSTOR), np.array([39.0, 60.0]))[:2])
    assert half > 0.2 and 0.0 < slight <= 0.05  # the construction: one far, one near
    gaps = client_gaps(ssvm, svm)
    assert gaps["compared"] == 6 and gaps["worse"] == 1 and gaps["worse_by"] == 0.05
    assert gaps["worst"] == [[1, "c2", pytest.approx(half)]]
    assert gaps["largest"] == pytest.approx(half)
    # a stricter margin names the near one too, worst first; `named` caps the list
    strict = client_gaps(ssvm, svm, worse_by=0.0, named=1)
    assert strict["worse"] == 2 and strict["worst"] == [[1, "c2", pytest.approx(half)]]
    # only client models both methods scored are compared
    one = next(k for k in svm if k[:2] == (0, "c1"))
    assert client_gaps(ssvm, {one: 0.0})["compared"] == 1
    assert client_gaps({}, svm) == {"compared": 0, "other_claims": 0, "worse": 0,
                                    "worse_by": 0.05, "worst": [], "largest": None}


def test_evaluate_and_the_printed_table_carry_them():
    summaries = evaluate(_tables(), n_boot=0)
    svm, ssvm = summaries
    assert "vs_svm" not in svm
    assert ssvm["vs_svm"]["worse"] == 1 and ssvm["vs_svm"]["worst"][0][:2] == [1, "c2"]
    text = format_table(summaries)
    line = " ".join(text.split())
    gap = 100 * ssvm["vs_svm"]["worst"][0][2]
    assert (f"client models more than 5 points above the EER of the same client's svm: "
            f"ssvm m=2 1 of 6 (r1:c2 +{gap:.1f}).") in line
    # no svm among the methods: nothing to compare with, no line
    alone = evaluate(_tables()[2:], n_boot=0)
    assert "vs_svm" not in alone[0] and "same client's svm" not in format_table(alone)


def test_a_gap_of_exactly_the_margin_is_not_above_it_whatever_the_float_noise():
    # EERs are rates: 0.2 - 0.15 = 0.05000000000000002 and 0.25 - 0.2 = 0.04999999999999999
    # are both 5 points, and neither is "more than 5 points" (the demo's roc named
    # svm-red's r1:c09 "+5.0" under that heading); equal gaps are ordered by client
    method = {(0, "a"): 0.2, (0, "b"): 0.25, (0, "c"): 0.22, (0, "d"): 0.07}
    svm = {(0, "a"): 0.15, (0, "b"): 0.2, (0, "c"): 0.16, (0, "d"): 0.01}
    gaps = client_gaps(method, svm)  # c: 0.06 exactly, d: 0.06000000000000001
    assert gaps["compared"] == 4 and gaps["worse"] == 2
    assert gaps["worst"] == [[0, "c", 0.06], [0, "d", 0.06]]
    assert gaps["largest"] == 0.06


def test_client_models_scored_on_other_claims_are_not_compared():
    """Score files of two runs can share repetition numbers and client ids (roc --scores
    renumbers only clashes): a client model is compared with the SVM's only on the same
    claims; the others are counted and the line says so."""
    tables = _tables()
    other_run = [Scores(t.method, t.m, t.repetition, t.claimed, t.real,
                        np.char.add("other-", t.probe), t.score) for t in tables[2:]]
    summaries = evaluate(tables[:2] + other_run, n_boot=0)
    gaps = summaries[1]["vs_svm"]
    assert gaps["compared"] == 0 and gaps["other_claims"] == 6 and gaps["worse"] == 0
    line = " ".join(format_table(summaries).split())
    assert ("6 client models not compared with the svm's: scored on other claims (score "
            "files of another run?).") in line
    assert "ssvm m=2 0 of" not in line
    # one repetition of the same run, one of another: only the first is compared
    mixed = evaluate(tables[:2] + [tables[2], other_run[1]], n_boot=0)[1]["vs_svm"]
    assert mixed["compared"] == 3 and mixed["other_claims"] == 3
