"""Identification: CMC, open-set DIR, full-search tables from the protocol and roc."""

import json

import numpy as np
import pytest
from helpers import synthetic_images

from ssgallery.biometrics import identification as ident
from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
from ssgallery.biometrics.scores import Scores
from ssgallery.errors import InputError

# 4 probes x 3 clients; probe 3 is an unknown person
S = np.array([[0.9, 0.2, 0.1],    # client 0, rank 1
              [0.5, 0.4, 0.6],    # client 1, rank 3
              [0.3, 0.7, 0.7],    # client 2, tie with client 1: pessimistic rank 2
              [0.8, 0.1, 0.0]])   # unknown, best score 0.8
TRUE = np.array([0, 1, 2, -1])


def test_ranks_and_cmc_hand_case():
    assert ident.ranks(S, TRUE).tolist() == [1, 3, 2]
    assert ident.cmc(S, TRUE, max_rank=10) == pytest.approx([1 / 3, 2 / 3, 1.0])


def brute_cmc(S, true, r):
    hits = []
    for i, t in enumerate(true):
        if t < 0:
            continue
        order = sorted(range(S.shape[1]), key=lambda j: (-S[i, j], j != t))
        hits.append(t in order[:r] and sum(S[i] >= S[i, t]) <= r)
    return np.mean(hits)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cmc_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(40, 7)).round(1)  # rounding makes ties
    true = rng.integers(-1, 7, size=40)
    curve = ident.cmc(S, true, max_rank=7)
    assert curve == pytest.approx([brute_cmc(S, true, r) for r in range(1, 8)])
    assert np.all(np.diff(curve) >= 0) and curve[-1] == 1.0


def test_open_set_threshold_and_dir():
    rng = np.random.default_rng(0)
    n_known, n_unknown, n_clients = 30, 200, 5
    true = np.r_[rng.integers(0, n_clients, n_known), -np.ones(n_unknown, int)]
    S = rng.normal(size=(len(true), n_clients))
    S[np.arange(n_known), true[:n_known]] += 3.0
    t = ident.unknown_threshold(S, true, far=0.01)
    best_unknown = S[n_known:].max(axis=1)
    assert np.mean(best_unknown >= t) <= 0.01
    assert np.mean(best_unknown >= np.nextafter(t, -np.inf) - 1e-9) > 0.01 - 1e-12
    rate, t2 = ident.detection_identification_rate(S, true, far=0.01)
    own = S[np.arange(n_known), true[:n_known]]
    expected = np.mean((ident.ranks(S, true) == 1) & (own >= t))
    assert t2 == t and rate == pytest.approx(expected)
    # 200 unknowns cannot resolve FAR = 0.1 %
    assert ident.detection_identification_rate(S, true, far=0.001) == (None, None)


def test_score_matrix_pivots_a_table_and_refuses_a_partial_search():
    clients = np.array(["a", "b", "c"])
    probes = ["p0", "p1", "p2", "p3"]
    real = ["a", "b", "c", "zed"]
    claimed = np.repeat(clients, 4)
    table = Scores("x", None, 0, claimed, np.tile(real, 3), np.tile(probes, 3),
                   S.T.ravel().copy())
    got_clients, got_probes, got_S, got_true = ident.score_matrix(table)
    assert got_clients.tolist() == ["a", "b", "c"] and got_probes.tolist() == probes
    assert np.array_equal(got_S, S) and got_true.tolist() == TRUE.tolist()
    partial = Scores("x", None, 0, claimed[:-1], np.tile(real, 3)[:-1],
                     np.tile(probes, 3)[:-1], S.T.ravel()[:-1].copy())
    with pytest.raises(InputError, match="full search"):
        ident.score_matrix(partial)


def test_protocol_search_keeps_the_verification_claims():
    images, labels = synthetic_images(n_subjects=8, per=7, seed=3)
    kwargs = {"methods": ("svm", "ssvm"), "m": 2, "n_train": 4, "repetitions": 1, "seed": 0}
    plain = run_protocol(images, labels, ProtocolOptions(**kwargs))
    both = run_protocol(images, labels, ProtocolOptions(identification=True, **kwargs))
    for a, b in zip(plain, both):
        assert a.search is None
        assert np.array_equal(a.claimed, b.claimed) and np.array_equal(a.probe, b.probe)
        assert np.allclose(a.score, b.score, rtol=0, atol=1e-9, equal_nan=True)
        clients, probes, matrix, true = ident.score_matrix(b.search)
        n_genuine = 4 * 3  # 4 enrolled subjects x 3 test images
        n_impostor = 4 * 7
        assert matrix.shape == (n_genuine + n_impostor, 4)
        assert (true >= 0).sum() == n_genuine
        # the verification claims are a subset of the search (a claim whose probe failed
        # to acquire scores NaN; the search keeps its score)
        for c, p, s in zip(b.claimed, b.probe, b.score):
            if np.isnan(s):
                continue
            row = np.flatnonzero(probes == p)[0]
            assert matrix[row, list(clients).index(c)] == pytest.approx(s)
    (svm, ssvm) = ident.evaluate_identification([t.search for t in both])
    assert svm["rank1"] >= 0.9 and ssvm["rank1"] >= 0.9
    assert ssvm["matches_per_search"] == 4 * 2


def test_roc_writes_identification_outputs(tmp_path):
    pytest.importorskip("matplotlib")
    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.biometrics.scores import read_scores
    from ssgallery.cli import main

    faces = make_faces(str(tmp_path / "faces"), n_clients=6, n_images=7)
    out = tmp_path / "rep"
    res = CliRunner().invoke(main, ["roc", faces, "--repetitions", "1", "--methods",
                                    "svm,ssvm", "--train-images", "4", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "rank-1 %" in res.output and (out / "cmc.png").stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    found = {s["label"]: s for s in summary["identification"]}
    assert set(found) == {"svm", "ssvm m=2"}
    # the full-search score files reproduce the CMC
    for s in summary["identification"]:
        name = "svm.r0.txt" if s["m"] is None else f"ssvm-m{s['m']}.r0.txt"
        _, _, matrix, true = ident.score_matrix(read_scores(out / "identification" / name))
        assert ident.cmc(matrix, true, 10) == pytest.approx(s["cmc"])
        # 3 people never enrolled x 7 images: FPIR 1 % is not resolved ("—", the reason)
        assert s["fnir_at_fpir_1pct"] is None and s["fnir_at_fpir_01pct"] is None
        assert "below the resolution" in s["notes"]["fnir_at_fpir_1pct"]
        assert s["det"]["fpir"][0] == pytest.approx(1 / 21)
    assert "FNIR@1% %" in res.output and "—: FPIR 1% is below" in res.output
    assert (out / "det_identification.png").stat().st_size > 0


def _table(method, rep, S, true):
    """A full-search Scores table from a probe x client matrix (-1: a stranger)."""
    clients = np.array([f"c{k}" for k in range(S.shape[1])])
    real = np.array([f"c{t}" if t >= 0 else f"x{i}" for i, t in enumerate(true)])
    probes = np.array([f"p{i}" for i in range(len(true))])
    n = S.shape[1]
    return Scores(method, 2, rep, np.repeat(clients, len(true)), np.tile(real, n),
                  np.tile(probes, n), S.T.ravel().copy(), {c: {"matches": 2} for c in clients})


def test_evaluation_reports_fnir_at_fpir_and_the_averaged_det():
    rng = np.random.default_rng(7)
    tables, mats = [], []
    for rep in range(2):
        true = np.r_[rng.integers(0, 5, 40), -np.ones(300, int)]
        S = rng.normal(size=(340, 5))
        S[np.arange(40), true[:40]] += 2.5
        tables.append(_table("ssvm", rep, S, true))
        mats.append((S, true))
    (s,) = ident.evaluate_identification(tables)
    expected = np.mean([ident.fnir_at_fpir(S, t, 0.01)[0] for S, t in mats])
    assert s["fnir_at_fpir_1pct"] == pytest.approx(expected)
    assert s["fnir_at_fpir_1pct"] == pytest.approx(1 - s["dir"])
    assert s["fnir_at_fpir_01pct"] is None  # 300 strangers per repetition
    assert s["notes"]["fnir_at_fpir_01pct"].startswith("FPIR 0.1% is below")
    grid, fnir = np.array(s["det"]["fpir"]), np.array(s["det"]["fnir"])
    assert grid[0] == pytest.approx(1 / 300) and grid[-1] == 1.0
    assert np.all(np.diff(fnir) <= 1e-12)  # FNIR falls as FPIR grows
    at_1pct = np.mean([ident.fpir_fnir(S, t, ident.fnir_at_fpir(S, t, 0.01)[1])[1]
                       for S, t in mats])
    assert np.interp(0.01, grid, fnir) == pytest.approx(at_1pct, abs=0.05)


def test_protocol_searches_carry_each_methods_held_out_normalisation():
    """roc ranks searches as compress deploys them: each method's Z-norm parameters come
    from its training impostors held out by subject; closed set on Z-norm, open set on
    the centred scores."""
    from ssgallery.biometrics.heldout import threshold_folds
    from ssgallery.biometrics.protocol import ProtocolOptions, make_splits
    from ssgallery.learn.teacher import SimilaritySVM
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    images, labels = synthetic_images(n_subjects=8, per=7, seed=3)
    options = ProtocolOptions(methods=("svm",), n_train=4, repetitions=1, seed=0,
                              identification=True, norm_folds=3)
    (table,) = run_protocol(images, labels, options)
    split = make_splits(labels, None, 4, 1, 0)[0]
    idx = split.train_indices()
    matcher = EigenfaceMatcher().fit(images[idx])
    X, owner = matcher.transform(images[idx]), labels[idx]
    c = split.enrolled[0]
    y = np.where(owner == c, 1, -1)
    teacher = SimilaritySVM(similarity=matcher.similarity(), random_state=0).fit(X, y)
    folds = threshold_folds(y, owner, 3, 0)
    held = []
    for j in range(folds.max() + 1):
        model = SimilaritySVM(similarity=matcher.similarity(), C=teacher.C_,
                              random_state=0).fit(X[folds != j], y[folds != j])
        held.append(model.decision_function(X[(folds == j) & (y < 0)]))
    held = np.concatenate(held)
    info = table.search.clients[c]
    assert info["norm_mean"] == pytest.approx(held.mean(), rel=1e-6)
    assert info["norm_std"] == pytest.approx(held.std(ddof=1), rel=1e-6)
    clients, _, raw, true = ident.score_matrix(table.search)
    Z, centred, kind = ident.normalised_searches(table.search, clients, raw)
    assert kind == ("znorm", "centred")
    (s,) = ident.evaluate_identification([table.search])
    assert s["ranking"] == "znorm" and s["open_set_score"] == "centred"
    assert s["cmc"] == pytest.approx(ident.cmc(Z, true, 10))
    assert s["dir"] == pytest.approx(ident.detection_identification_rate(centred, true)[0])
    # norm_folds=0: raw scores, as before
    (plain,) = run_protocol(images, labels, ProtocolOptions(
        methods=("svm",), n_train=4, repetitions=1, seed=0, identification=True,
        norm_folds=0))
    assert "norm_mean" not in plain.search.clients[c]
    assert ident.evaluate_identification([plain.search])[0]["ranking"] == "raw"
