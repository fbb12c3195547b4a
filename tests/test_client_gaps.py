"""roc names the client models far above the same client's SVM (ssgallery.biometrics.
client_gaps): a mean close to the SVM's must not hide a failed person."""

import json

import numpy as np
import pytest
from helpers import invoked

from ssgallery.biometrics import metrics
from ssgallery.biometrics.client_gaps import (
    AMBIGUOUS,
    NOTHING_IN_COMMON,
    client_gaps,
    several_references,
)
from ssgallery.biometrics.evaluation import client_eers, default_grid, evaluate, evaluate_method
from ssgallery.biometrics.report import format_table
from ssgallery.biometrics.scores import Scores, scores_filename, write_scores

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
    # only client models both methods scored on the same claims are compared (here both
    # repetitions score the same claims: c1's model of either is compared with this one)
    one = next(k for k in svm if k[:2] == (0, "c1"))
    assert client_gaps(ssvm, {one: 0.0})["compared"] == 2
    assert client_gaps({}, svm) == {"compared": 0, "other_claims": 0, "ambiguous": 0,
                                    "worse": 0, "worse_by": 0.05, "worst": [],
                                    "largest": None, "reason": NOTHING_IN_COMMON}


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


def _other_run(tables, repetition=None, prefix="other-"):
    """The tables as another run scored them: other probes (other claims), the same
    repetition numbers unless ``repetition``."""
    return [Scores(t.method, t.m, t.repetition if repetition is None else repetition,
                   t.claimed, t.real, np.char.add(prefix, t.probe), t.score)
            for t in tables]


def _said(summaries):
    return " ".join(format_table(summaries).split())


def test_no_comparison_says_why_in_the_table_and_in_vs_svm():
    """The line on the client models above the same client's svm vanished without a word
    (no vs_svm either) when the scores held two svm references (svm and svm m=2: which
    one is the teacher?), and when the svm scored no client of the method's repetitions
    (scores of other repetitions or clients): one line says why, and vs_svm's reason."""
    tables = _tables()
    svm_m2 = Scores("svm", 2, 0, tables[0].claimed, tables[0].real, tables[0].probe,
                    tables[0].score)
    summaries = evaluate(tables + [svm_m2], n_boot=0)
    gaps = next(s["vs_svm"] for s in summaries if s["label"] == "ssvm m=2")
    reason = several_references(["svm", "svm m=2"])
    assert reason == ("2 svm references in the scores (svm, svm m=2): which one the methods "
                      "were distilled from is ambiguous")
    assert gaps["compared"] == 0 and gaps["reason"] == reason and gaps["largest"] is None
    assert [s["label"] for s in summaries if "vs_svm" not in s] == ["svm", "svm m=2"]
    assert f"not compared with the same client's svm: ssvm m=2: {reason}." in _said(summaries)
    # the svm scored other repetitions on other claims: nothing in common
    summaries = evaluate(tables[:1] + _other_run(tables[2:], repetition=5), n_boot=0)
    gaps = summaries[1]["vs_svm"]
    assert gaps["compared"] == gaps["other_claims"] == gaps["ambiguous"] == 0
    assert gaps["reason"] == NOTHING_IN_COMMON
    line = _said(summaries)
    assert f"not compared with the same client's svm: ssvm m=2: {NOTHING_IN_COMMON}." in line
    assert "points above the EER" not in line
    # compared: no reason, and no such line
    summaries = evaluate(tables, n_boot=0)
    assert summaries[1]["vs_svm"]["reason"] is None
    assert "not compared" not in _said(summaries)


def test_the_svm_scoring_the_same_claims_twice_with_other_eers_is_ambiguous():
    """Two svm models of the same client and claims (score files of two runs of one split)
    with different EERs, and none of the method's repetition (its files renumbered): that
    client's models are not compared with either, and counted."""
    tables = _tables()
    tables[2:] = [Scores(t.method, t.m, t.repetition + 3, t.claimed, t.real, t.probe,
                         t.score) for t in tables[2:]]  # renumbered: r3, r4
    rerun = _table("svm", None, 2, {**GOOD, "c2": [20.5, 60.0]})  # c2's EER differs
    summaries = evaluate(tables + [rerun], n_boot=0)
    gaps = summaries[1]["vs_svm"]
    assert gaps["ambiguous"] == 2 and gaps["compared"] == 4 and gaps["reason"] is None
    assert f"2 client models not compared with the svm's: {AMBIGUOUS}." in _said(summaries)
    # the same EERs again (an identical rerun): nothing ambiguous
    same = _table("svm", None, 2, GOOD)
    assert evaluate(tables + [same], n_boot=0)[1]["vs_svm"]["compared"] == 6


def test_a_run_that_drew_a_clients_claims_twice_compares_each_with_its_own_svm():
    """One run whose repetitions drew the same claims for a client (a small data set:
    'roc tiny/faces --enrolled 2 --train-images 5 --repetitions 20 --seed 3' on 4 synth
    identities of 6 images) with two svm models of other EERs (the other clients'
    training images differed): each client model is compared with its own
    repetition's svm, never called ambiguous ('3 client models not compared with the
    svm's: the svm scored their claims more than once ...' on that run)."""
    half_failed = {**GOOD, "c2": [20.5, 60.0]}
    tables = [_table("svm", None, 0, GOOD), _table("svm", None, 1, half_failed),
              _table("ssvm", 2, 0, half_failed), _table("ssvm", 2, 1, half_failed)]
    gaps = evaluate(tables, n_boot=0)[1]["vs_svm"]
    assert gaps["ambiguous"] == 0 and gaps["compared"] == 6 and gaps["reason"] is None
    assert gaps["worse"] == 1 and [w[:2] for w in gaps["worst"]] == [[0, "c2"]]
    assert "not compared" not in _said(evaluate(tables, n_boot=0))


def _write(folder, tables):
    folder.mkdir()
    paths = []
    for t in tables:
        paths.append(folder / scores_filename(t))
        write_scores(paths[-1], t)
    return paths


def test_roc_scores_of_two_runs_compares_each_model_with_its_own_svm(tmp_path):
    """roc --scores B's svm files, then A's svm and ssvm files: A's svm files clash with
    B's repetition numbers and are renumbered (r2, r3), so that A's ssvm r0 and r1 found
    only B's svm there, on other claims: 'not compared ... scored on other claims' though
    A's own svm was given. A client model is compared with the svm's of the same client
    and claims; summary.json's vs_svm and the printed line say so; and two svm references
    say why there is no comparison."""
    # each repetition its own claims (probes), as in a run
    tables = [t for r in (0, 1) for t in _other_run(_tables()[r::2], prefix=f"r{r}-")]
    run_b = _write(tmp_path / "b", _other_run(tables[::2]))
    run_a = _write(tmp_path / "a", tables)
    res = invoked(["roc", "--scores", *run_b, *run_a, "-o", tmp_path / "out", "--no-plot",
                   "-q"])
    assert res["exit_code"] == 0, res["output"]
    methods = json.loads((tmp_path / "out" / "summary.json").read_text())["methods"]
    gaps = next(m["vs_svm"] for m in methods if m["label"] == "ssvm m=2")
    assert gaps["compared"] == 6 and gaps["other_claims"] == 0 and gaps["worse"] == 1
    line = " ".join(res["stdout"].split())
    assert "client models more than 5 points above the EER of the same client's svm: " \
           "ssvm m=2 1 of 6 (r1:c2 +" in line, line
    assert "not compared" not in line
    svm_m2 = Scores("svm", 2, 0, tables[0].claimed, tables[0].real, tables[0].probe,
                    tables[0].score + 1)
    res = invoked(["roc", "--scores", *run_a, *_write(tmp_path / "m2", [svm_m2]), "-o",
                   tmp_path / "out2", "--no-plot", "-q"])
    assert res["exit_code"] == 0, res["output"]
    methods = json.loads((tmp_path / "out2" / "summary.json").read_text())["methods"]
    reason = several_references(["svm", "svm m=2"])
    assert next(m["vs_svm"] for m in methods if m["label"] == "ssvm m=2")["reason"] == reason
    assert f"not compared with the same client's svm: ssvm m=2: {reason}." in \
        " ".join(res["stdout"].split())


def _calls(function, *names):
    """How many times ``function()`` called each of ``ssgallery.biometrics.metrics``'
    functions ``names`` (counted by cProfile: nothing is replaced)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.runcall(function)
    stats = pstats.Stats(profile).stats
    return {name: sum(v[1] for (path, _, func), v in stats.items()
                      if func == name and path == metrics.__file__) for name in names}


def test_evaluate_sweeps_each_client_once():
    """evaluate swept each client's threshold twice (its ROC for the method's figures, and
    again for client_eers, the comparison with the svm) and computed its EER three times
    (the mean client EER, the bootstrap's input, client_eers): 28 ROCs and 44 EERs for
    the 12 client models of 4 tables. Once each now, with the same figures."""
    tables = _tables()
    calls = _calls(lambda: evaluate(tables, n_boot=0), "roc_curve", "curve_eer")
    # 12 clients' ROCs + 4 pooled ones; 12 clients' EERs + 4 pooled + 4 averaged curves'
    assert calls == {"roc_curve": 12 + 4, "curve_eer": 12 + 4 + 4}
    summaries = evaluate(tables, n_boot=20)
    alone = [evaluate_method(tables[i:i + 2], default_grid(), 20) for i in (0, 2)]
    for s, a in zip(summaries, alone):
        s.pop("vs_svm", None)
        np.testing.assert_equal(s, a)  # dicts, arrays and NaN compared exactly


def test_the_clients_a_gallery_s_mean_far_hides_are_named():
    """roc --gallery printed FAR@thresholds and FRR@thresholds as means over clients
    only, which hide the clients whose stored thresholds let strangers through (or turn
    their own person away): the AT&T gallery of s1-s20 (compress's defaults) said 0.98 %
    while s14 accepted 7 of its 138 impostor claims (5.07 %); with --cv-folds 0, 14.75 %
    and s15 at 36.96 %. The clients with the highest FAR and FRR are now named under the
    table and in summary.json."""
    t = _table("gallery", 2, 0, GOOD)
    t.clients = {"c1": {"threshold": 30.0}, "c2": {"threshold": 38.0},
                 "c3": {"threshold": 55.0}}
    s = evaluate([t], n_boot=0)[0]
    # impostor scores 0..39 against each: c1 accepts 10 of 40, c2 2, c3 none; genuine
    # 50 and 60: c3 rejects 50
    assert s["far_at_stored_thresholds"] == pytest.approx(12 / 120)
    assert s["frr_at_stored_thresholds"] == pytest.approx(0.5 / 3)
    assert s["far_at_stored_thresholds_worst"] == [[0, "c1", 0.25, 10, 40],
                                                   [0, "c2", 0.05, 2, 40]]
    assert s["frr_at_stored_thresholds_worst"] == [[0, "c3", 0.5, 1, 2]]
    text = " ".join(format_table([s]).split())
    assert ("clients with the highest FAR@thresholds (the column is their mean; accepted "
            "impostor claims): gallery m=2 c1 25.00% (10 of 40), c2 5.00% (2 of 40).") in text
    assert ("clients with the highest FRR@thresholds (the column is their mean; rejected "
            "genuine claims): gallery m=2 c3 50.00% (1 of 2).") in text, text
    t.clients = {c: {"threshold": 45.0} for c in t.clients}  # nobody wrongly decided
    s = evaluate([t], n_boot=0)[0]
    assert s["far_at_stored_thresholds_worst"] == s["frr_at_stored_thresholds_worst"] == []
    assert "@thresholds (the column" not in format_table([s])
    s = evaluate([_table("ssvm", 2, 0, GOOD)], n_boot=0)[0]  # protocol mode: no thresholds
    assert s["far_at_stored_thresholds_worst"] is s["frr_at_stored_thresholds_worst"] is None
