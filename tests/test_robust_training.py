"""Robust black-box training (issue 21): exact similarities every p moves with the
first-order model of the paper's closing section in between, on the L1 example matcher
through the external contract (a real program); the held-out guard on a constructed
failure; a black box trained on swapped real images by default, and mirror images. The
starts and swaps of its prototypes: tests/test_black_box_starts.py. What compress and
roc resolve for a black box by default: tests/test_black_box_defaults.py."""

import numpy as np
import pytest
from helpers import l1_matcher
from sklearn.base import clone

from ssgallery.learn.guard import guarded_fit, heldout_gap, misranking
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.learn.solvers import first_order_column, secant_scale
from ssgallery.learn.supersparse import (
    SuperSparseDistiller,
    SuperSparseRegressor,
    balanced_weights,
)
from ssgallery.learn.teacher import SimilaritySVM


@pytest.fixture(scope="module")
def l1():
    with l1_matcher() as fitted:
        yield fitted


def test_first_order_column_follows_exact_moves_on_l1(l1):
    # Eq. 7 (eq:similarity-grad) gives a direction without a scale; the scale fitted on
    # one exact move (secant) predicts the column after longer moves along the same line
    # with a relative RMS error of about 0.21 here (0.3 stated), where keeping the old
    # column (zeroth order) is off by 1. The self pair (z started on x_3) is left out:
    # there Eq. 7 is 0 while L1 has a kink.
    _, sim, X = l1
    z = X[3].copy()
    s0 = sim(X, z[None])[:, 0]
    direction = X[:10].mean(0) - z
    small = 0.05 * direction
    kappa = secant_scale(first_order_column(X, z, s0, small, sim) - s0,
                         sim(X, (z + small)[None])[:, 0] - s0)
    assert kappa > 0
    others = np.arange(len(X)) != 3
    for f in (0.1, 0.2):
        exact = sim(X, (z + f * direction)[None])[:, 0]
        approx = first_order_column(X, z, s0, f * direction, sim, kappa)
        change = np.linalg.norm((exact - s0)[others])
        assert np.linalg.norm((approx - exact)[others]) < 0.3 * change


def test_first_order_column_is_exact_to_first_order_for_rbf():
    rng = np.random.default_rng(0)
    X, z = rng.normal(size=(20, 4)), rng.normal(size=4)
    sim = RBFSimilarity(0.3)
    s0 = sim(X, z[None])[:, 0]
    for h in (1e-2, 1e-3):
        delta = h * rng.normal(size=4)
        err = np.abs(first_order_column(X, z, s0, delta, sim) - sim(X, (z + delta)[None])[:, 0])
        assert err.max() < 2 * h ** 2  # second-order remainder


@pytest.mark.parametrize("p", [3, 5])
def test_refresh_every_p_matches_exact_refreshes_on_l1(p):
    # Algorithm 1 on the L1 program, 12 sweeps: with exact columns every p moves the
    # final (exact) Omega is within 5 % of Algorithm 1 with exact columns after every move
    # (0.713 and 0.706 vs 0.698 measured), for at most a third of the program runs
    # (13 and 7 vs 70; a fresh matcher, so that no answer comes from an earlier cache)
    with l1_matcher() as (matcher, sim, X):
        y = np.where(np.arange(len(X)) < 10, 1.0, -1.0) + 0.1 * np.arange(len(X)) / len(X)
        fits, runs = {}, {}
        for q in (1, p):
            calls = matcher.n_calls_
            fits[q] = SuperSparseRegressor(3, similarity=sim, solver="paper", max_iter=12,
                                           tol=0, refresh_every=q, bounds=(0, 255),
                                           init="random", random_state=0).fit(X, y)
            runs[q] = matcher.n_calls_ - calls
        exact, approx = fits[1], fits[p]
        # the returned Omega is exact: recomputed from fresh program answers
        S = sim(X, approx.prototypes_)
    r = S @ approx.beta_ + approx.intercept_ - y
    assert approx.objective_ == pytest.approx(np.mean(r * r) + approx.lam_ * approx.beta_ @
                                              approx.beta_, rel=1e-9)
    assert approx.objective_ == pytest.approx(exact.objective_, rel=0.05)
    assert approx.objective_ < exact.objective_path_[0, 1]  # it did descend
    assert runs[p] * 3 <= runs[1]


def two_pose_client(rng, n_gen=10, n_imp=80):
    """A client seen in two poses (two genuine clusters) among impostors, in 2-D."""
    gen = np.vstack([rng.normal([2, 0], 0.3, (n_gen // 2, 2)),
                     rng.normal([0, 2], 0.3, (n_gen - n_gen // 2, 2))])
    imp = rng.normal(0, 1.5, (n_imp, 2))
    imp = imp[(np.linalg.norm(imp - [2, 0], axis=1) > 1) & (np.linalg.norm(imp - [0, 2], axis=1) > 1)]
    return np.vstack([gen, imp]), np.r_[np.ones(len(gen)), -np.ones(len(imp))]


def test_misranking_is_one_minus_auc_with_half_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    g, i = np.round(rng.normal(1, 1, 7), 1), np.round(rng.normal(0, 1, 30), 1)
    labels = np.r_[np.ones(7), np.zeros(30)]
    assert misranking(g, i) == pytest.approx(1 - roc_auc_score(labels, np.r_[g, i]))
    assert misranking([1.0], [1.0]) == 0.5 and misranking([2.0], [1.0]) == 0.0
    assert np.isnan(misranking([], [1.0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_guard_detects_and_repairs_a_start_that_converges_badly(seed):
    # random starts (init="random", seeds 0-2) put no prototype on one of the client's two
    # poses, and 2 sweeps of Algorithm 1 do not bring one there: 16-34 % of the held-out
    # genuine-impostor pairs misranked beyond the SVM's. The guard sees it on held-out
    # data and refits from the class-aware start of real images, which matches the SVM.
    rng = np.random.default_rng(0)
    X, y = two_pose_client(rng)
    X_val, y_val = two_pose_client(rng)
    sim = RBFSimilarity(1.0)
    svm = SimilaritySVM(similarity=sim).fit(X, y)
    dist = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=3, similarity=sim,
                                init="random", solver="paper", max_iter=2, random_state=seed)
    plain = clone(dist).set_params(teacher=svm).fit(X, y)
    gap = heldout_gap(svm.decision_function(X_val), plain.decision_function(X_val), y_val > 0)
    assert gap > 0.15  # the failure is real
    fixed = guarded_fit(dist, X, y, X_val, y_val, max_gap=0.05)
    assert fixed.guard_["attempts"][0] == ("first fit", pytest.approx(gap))
    assert fixed.guard_["repaired"] and fixed.guard_["ok"]
    assert fixed.guard_["gap"] <= 0.05
    assert fixed.teacher_ is svm and fixed.init == "class"


def test_guard_leaves_a_good_fit_alone_and_reports_a_failed_repair():
    rng = np.random.default_rng(0)
    X, y = two_pose_client(rng)
    X_val, y_val = two_pose_client(rng)
    sim = RBFSimilarity(1.0)
    svm = SimilaritySVM(similarity=sim).fit(X, y)
    good = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=3, similarity=sim,
                                random_state=0)
    fit = guarded_fit(good, X, y, X_val, y_val)
    assert fit.guard_["attempts"] == [("first fit", pytest.approx(fit.guard_["gap"]))]
    assert fit.guard_["ok"] and not fit.guard_["repaired"]
    # one prototype cannot cover two poses: every start fails, the guard keeps the least
    # bad fit and says so; grow=True tries m + 1 = 2, better (17 % vs 28 % more pairs
    # misranked than the SVM) but still failed: kept, and reported as not ok
    one = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=1, similarity=sim,
                               random_state=0)
    fit = guarded_fit(one, X, y, X_val, y_val)
    assert not fit.guard_["ok"] and [a for a, _ in fit.guard_["attempts"]] == [
        "first fit", "init=genuine", "3 random starts"]
    assert fit.guard_["gap"] == min(g for _, g in fit.guard_["attempts"]) > 0.2
    grown = guarded_fit(one, X, y, X_val, y_val, grow=True)
    assert grown.guard_["attempts"][-1][0] == "m=2" and len(grown.beta_) == 2
    assert grown.guard_["repaired"] and not grown.guard_["ok"]
    assert grown.guard_["gap"] < fit.guard_["gap"]


def test_train_client_guard_keeps_the_first_fit_it_replaced():
    # compress --guard's function: three prototypes from a random start, two sweeps, fail
    # the held-out check on the two-pose client and is refitted; the first fit stays
    # on the ClientFit (first_distiller), equal to what compress keeps without --guard
    from ssgallery.app.client_fit import GUARD_GAP, train_client
    from ssgallery.app.options import CompressOptions

    X, y = two_pose_client(np.random.default_rng(0))
    groups = np.where(y > 0, "client", [f"p{i % 8}" for i in range(len(y))])
    sim = RBFSimilarity(1.0)
    opts = CompressOptions(m=3, init="random", solver="paper", max_iter=2, seed=0)
    plain = train_client(X, y, sim, opts, groups=groups)
    guarded = train_client(X, y, sim, CompressOptions(**{**opts.__dict__, "guard": True}),
                           groups=groups)
    record = guarded.cv["guard"]
    assert plain.first_distiller is None
    assert record["attempts"][0] == ["first fit", pytest.approx(plain.cv["teacher_gap"])]
    assert record["attempts"][0][1] > GUARD_GAP and record["repaired"]
    first = guarded.first_distiller
    assert first is not guarded.distiller and first.init == "random"
    np.testing.assert_array_equal(first.prototypes_, plain.distiller.prototypes_)
    assert guarded.cv["teacher_gap"] == pytest.approx(min(g for _, g in record["attempts"]))
    # a fit that passes: the guard keeps it, and it is its own first fit
    good = train_client(X, y, sim, CompressOptions(m=3, guard=True, between=0.0),
                        groups=groups)
    assert good.cv["guard"]["attempts"][0][1] <= GUARD_GAP
    assert good.first_distiller is good.distiller


def test_teacher_agreement_needs_held_out_scores():
    from ssgallery.app.client_training import teacher_agreement

    gen_g, imp_g, gen_s, imp_s = [0.0, 2.0], [1.0, -1.0], [2.0, 3.0], [1.0, -1.0]
    out = teacher_agreement(gen_g, imp_g, gen_s, imp_s)
    assert out == {"misranking": 0.25, "svm_misranking": 0.0, "teacher_gap": 0.25}
    assert teacher_agreement(gen_g, imp_g, gen_s, imp_s, held_out=False) == {
        "misranking": None, "svm_misranking": None, "teacher_gap": None}


def test_guard_repairs_a_regression_distiller_by_held_out_mae():
    # SRidge (issue 21: "the same robust training"): 6 prototypes from random starts
    # (seed 1) and one sweep land 16 % above the teacher's held-out MAE; the guard's
    # restarts bring it within 10 % (2 % measured)
    from ssgallery.learn.regression import SimilarityRidge, SuperSparseRegressionDistiller

    rng = np.random.default_rng(0)
    X, X_val = rng.uniform(-3, 3, (120, 1)), rng.uniform(-3, 3, (120, 1))
    y = np.sin(2 * X[:, 0]) + 0.05 * rng.normal(size=120)
    y_val = np.sin(2 * X_val[:, 0]) + 0.05 * rng.normal(size=120)
    teacher = SimilarityRidge().fit(X, y)
    dist = SuperSparseRegressionDistiller(teacher=teacher, prefit=True, n_prototypes=6,
                                          init="random", solver="paper", max_iter=1,
                                          random_state=1)
    fit = guarded_fit(dist, X, y, X_val, y_val, max_gap=0.1)
    first = fit.guard_["attempts"][0][1]
    assert first > 0.1 and fit.guard_["repaired"] and fit.guard_["ok"]
    mae = np.mean(np.abs(fit.predict(X_val) - y_val))
    assert mae <= 1.1 * np.mean(np.abs(teacher.predict(X_val) - y_val))


def test_a_black_box_trains_on_swapped_real_images_by_default(l1):
    """train_client with the defaults on a black box (the served L1 program): swaps of
    real training images and no move, so no program run beyond the Gram matrix and
    every prototype one of the training images; moves stay one option away."""
    from ssgallery.app.client_fit import train_client
    from ssgallery.app.options import CompressOptions

    matcher, sim, X = l1
    y = np.where(np.arange(len(X)) < 6, 1, -1)
    groups = np.repeat(np.arange(5), 6)
    gram = sim(X, X)
    calls = matcher.n_calls_
    fit = train_client(X, y, sim, CompressOptions(m=3), groups=groups,
                       bounds=matcher.bounds(), gram=gram)
    assert matcher.n_calls_ == calls  # threshold CV included
    Z = fit.distiller.prototypes_
    assert all((np.abs(X - z).max(axis=1) == 0).any() for z in Z)
    assert fit.distiller.swap_rounds == 3 and fit.distiller.max_iter == 0
    unswapped = train_client(X, y, sim, CompressOptions(m=3, swap_rounds=0), groups=groups,
                             bounds=matcher.bounds(), gram=gram).distiller
    assert not np.array_equal(unswapped.prototypes_, Z)  # the swaps changed the start
    assert fit.distiller.regressor_.objective_ < unswapped.regressor_.objective_
    moved = train_client(X, y, sim, CompressOptions(m=3, max_iter=2, swap_rounds=0),
                         groups=groups, bounds=matcher.bounds(), gram=gram).distiller
    assert matcher.n_calls_ > calls  # Eq. 7 moves ask the program
    assert not all((np.abs(X - z).max(axis=1) == 0).any() for z in moved.prototypes_)


def test_mirror_images_flip_each_row_of_a_flattened_image():
    from ssgallery.learn.mirror import MirrorImages

    flip = MirrorImages((2, 3))
    X = np.arange(12.0).reshape(2, 6)
    assert np.array_equal(flip(X), [[2, 1, 0, 5, 4, 3], [8, 7, 6, 11, 10, 9]])
    assert np.array_equal(flip(flip(X)), X)
    with pytest.raises(ValueError, match="not flattened 2x3 images"):
        flip(np.zeros((2, 5)))
    assert clone(SuperSparseDistiller(mirror=flip)).mirror == flip


def test_mirror_images_are_fitted_but_no_prototype_is_made_of_one(l1):
    """With ``mirror`` the distiller fits the teacher at the training images and their
    mirror images (beta by Eq. 4 on both, equal class weights), while the start and the
    swaps choose among the training images only; the swaps' Omega sees the mirrors,
    so they pick other images than without them."""
    from ssgallery.learn.mirror import MirrorImages
    from ssgallery.learn.solvers import beta_step

    matcher, sim, X = l1
    flip = MirrorImages(matcher.image_shape)
    y = np.where(np.arange(len(X)) < 6, 1, -1)
    svm = SimilaritySVM(similarity=sim).fit(X, y)
    params = {"teacher": svm, "prefit": True, "n_prototypes": 3, "similarity": sim,
              "init": "genuine", "max_iter": 0, "swap_rounds": 3, "random_state": 0}
    plain = SuperSparseDistiller(**params).fit(X, y)
    mirrored = SuperSparseDistiller(mirror=flip, **params).fit(X, y)
    rows = [np.flatnonzero((X == z).all(axis=1)) for z in mirrored.prototypes_]
    assert all(len(r) == 1 for r in rows)  # each a training image, none a mirror image
    rows = np.concatenate(rows)
    both = np.vstack([X, flip(X)])
    u = np.r_[balanced_weights(y), balanced_weights(y)]
    beta, b = beta_step(sim(both, X[rows]), svm.decision_function(both), u / u.sum(),
                        mirrored.regressor_.lam_)
    assert np.allclose(mirrored.beta_, beta) and np.isclose(mirrored.intercept_, b)
    assert not np.array_equal(np.sort(rows), np.sort(
        [np.flatnonzero((X == z).all(axis=1))[0] for z in plain.prototypes_]))
    with pytest.raises(ValueError, match="boolean mask of shape"):
        SuperSparseRegressor(similarity=sim).fit(X, y * 1.0, candidates=np.ones(3, bool))
    with pytest.raises(ValueError, match="no row of positive weight"):
        SuperSparseRegressor(similarity=sim).fit(X, y * 1.0,
                                                 candidates=np.zeros(len(X), bool))
