"""Robust black-box training (issue 21): exact similarities every p moves with the
first-order model of the paper's closing section in between, on the L1 example matcher
through the external contract (a real program); the held-out guard on a constructed
failure; the starts, swaps and mirror images of a black box's prototypes. What compress
and roc resolve for a black box by default: tests/test_black_box_defaults.py."""

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


def three_poses(rng, n=5):
    """A client seen in three poses (n images each) among 15 impostor subjects of n images."""
    poses = np.array([[3, 0], [-1.5, 2.6], [-1.5, -2.6]])
    X = [p + rng.normal(0, 0.3, (n, 2)) for p in poses]
    X += [rng.normal(0, 1.2, (1, 2)) + rng.normal(0, 0.3, (n, 2)) for _ in range(15)]
    groups = np.repeat(["c"] * 3 + [f"s{i}" for i in range(15)], n)
    return np.vstack(X), np.where(groups == "c", 1, -1), groups


def test_heldout_start_follows_held_out_images_not_the_rule_order():
    # m = 4: "class" starts 2 prototypes on the client's images and leaves one of its
    # three poses uncovered, "genuine" starts 3. Preferring "class" on a tie, the choice
    # still goes to "genuine": 0 % of the held-out genuine-impostor pairs misranked
    # against 20.7 %; on new images of the same people the unmoved genuine start
    # misranks 4.4 % of the pairs and the class start 13.9 %
    from ssgallery.biometrics.heldout import threshold_folds
    from ssgallery.learn.solvers import beta_step
    from ssgallery.learn.starts import heldout_start
    from ssgallery.learn.supersparse import balanced_weights, gram_scale, start_indices

    rng = np.random.default_rng(0)
    X, y, groups = three_poses(rng)
    X_new, y_new, _ = three_poses(rng)
    sim = RBFSimilarity(1.0)
    G = sim(X, X)
    svm = SimilaritySVM(similarity=sim).fit(X, y, G)

    def fit_teacher(train):
        fold = SimilaritySVM(similarity=sim, C=svm.C_).fit(X[train], y[train],
                                                           G[np.ix_(train, train)])
        return G[:, np.flatnonzero(train)[fold.support_]] @ fold.dual_coef_ + fold.intercept_

    u = balanced_weights(y)
    lam = 2e-3 * gram_scale(G, u)
    rule, mis = heldout_start(X, y, G, threshold_folds(y, groups, 5, 0), fit_teacher, 4, lam,
                              rules=("class", "genuine"))
    assert rule == "genuine"
    assert mis["genuine"] == 0.0 and mis["class"] == pytest.approx(0.2071, abs=1e-4)
    new = {}
    for r in ("genuine", "class"):
        P = start_indices(X, y, u, 4, r, np.random.default_rng(0))
        beta, b = beta_step(G[:, P], svm.decision_function(X), u, lam)
        s = sim(X_new, X[P]) @ beta + b
        new[r] = misranking(s[y_new > 0], s[y_new < 0])
    assert new["genuine"] == pytest.approx(0.0436, abs=1e-4)
    assert new["class"] == pytest.approx(0.1387, abs=1e-4)


def test_least_omega_start_keeps_the_start_of_least_unmoved_omega_in_one_call():
    from ssgallery.learn.initial import candidate_starts, least_omega_start
    from ssgallery.learn.solvers import CountingSimilarity, beta_step, objective
    from ssgallery.learn.supersparse import balanced_weights

    rng = np.random.default_rng(0)
    X, y, _ = three_poses(rng)
    u = balanced_weights(y)
    t = SimilaritySVM(similarity=RBFSimilarity(1.0)).fit(X, y).decision_function(X)
    starts = candidate_starts(X, y, u, 4, "class", np.random.default_rng(1), 10)
    assert len(starts) == 10
    rows = [np.flatnonzero((X[:, None] == Z[None]).all(-1).any(1)) for Z in starts]
    assert all(len(r) == 4 for r in rows)  # every start is made of 4 training rows
    assert all((y[r] > 0).any() and (y[r] < 0).any() for r in rows)  # of both classes
    counter = CountingSimilarity(RBFSimilarity(1.0))
    Z0, omega = least_omega_start(X, t, u, starts, counter, 1e-3)
    assert counter.n_evals == len(X) * 4 * 10  # one call: every start's columns
    omegas = []
    for Z in starts:
        S = RBFSimilarity(1.0)(X, Z)
        omegas.append(objective(S, t, u, *beta_step(S, t, u, 1e-3), 1e-3))
    assert omega == pytest.approx(min(omegas)) and omega < omegas[0]
    assert np.array_equal(Z0, starts[int(np.argmin(omegas))])


def unmoved_pose_fits(seed, **variants):
    """The three-pose client of ``seed`` and, per variant (learner parameters), its
    unmoved m = 4 distillation from the class rule's start: (share of new images'
    genuine-impostor pairs misranked, genuine prototypes, the fit)."""
    rng = np.random.default_rng(seed)
    X, y, _ = three_poses(rng)
    three_poses(rng)
    X_new, y_new, _ = three_poses(rng)
    sim = RBFSimilarity(1.0)
    svm = SimilaritySVM(similarity=sim).fit(X, y)
    out = {}
    for key, params in variants.items():
        d = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=4, similarity=sim,
                                 init="class", solver="paper", max_iter=0, random_state=0,
                                 **params).fit(X, y)
        s = d.decision_function(X_new)
        rows = np.flatnonzero((X[:, None] == d.prototypes_[None]).all(-1).any(1))
        out[key] = misranking(s[y_new > 0], s[y_new < 0]), int((y[rows] > 0).sum()), d
    return X, y, svm, out


@pytest.mark.parametrize("seed, before, after", [(0, 0.0142, 0.0009), (1, 0.0329, 0.0009),
                                                 (2, 0.0649, 0.0036)])
def test_start_candidates_cover_the_pose_the_class_rule_leaves_out(seed, before, after):
    # m = 4: the class rule starts 2 prototypes on a client seen in three poses, so one
    # pose has none; among 12 unmoved starts the one of least Omega holds 3 genuine
    # images, one per pose, and misranks far fewer genuine-impostor pairs of new images
    *_, found = unmoved_pose_fits(seed, one={"start_candidates": 1},
                                  twelve={"start_candidates": 12})
    assert found["one"][:2] == (pytest.approx(before, abs=1e-4), 2)
    assert found["twelve"][:2] == (pytest.approx(after, abs=1e-4), 3)


def test_candidate_starts_repeat_a_row_only_when_short_and_then_jittered():
    """A random start fills a short class's share with other rows, and repeats a row
    only with fewer usable rows than m, jittered as the rule's start is: equal
    prototypes would never part (was: exact repeats, chosen by least Omega and kept)."""
    from scipy.spatial.distance import pdist

    from ssgallery.learn.initial import candidate_starts
    from ssgallery.learn.supersparse import SuperSparseRegressor, balanced_weights

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(1, 2)) + 5, rng.normal(size=(40, 2))])  # 1 genuine
    y = np.r_[1.0, -np.ones(40)]
    starts = candidate_starts(X, y, balanced_weights(y), 4, "class", rng, 30)
    for Z in starts[2:]:  # the random ones (the class rule repeats its 1 genuine row)
        rows = np.flatnonzero((X[:, None] == Z[None]).all(-1).any(1))
        assert len(rows) == 4 and y[rows].max() > 0  # 4 training rows, the genuine one
    X4, y4 = np.array([[0.0, 0], [1, 0], [0, 1], [3, 3]]), np.array([1.0, 1, -1, -1])
    starts = candidate_starts(X4, y4, balanced_weights(y4), 6, "class", rng, 6)
    assert all(len(np.unique(Z, axis=0)) == 6 for Z in starts)
    fit = SuperSparseRegressor(n_prototypes=6, gamma=1.0, solver="paper", repulsion=False,
                               max_iter=100, start_candidates=8, random_state=0)
    fit.fit(X4, y4, balanced_weights(y4))
    assert pdist(fit.prototypes_).min() > 1e-4


def test_swap_start_makes_the_best_single_swap_in_two_calls():
    """One round makes the swap of least unmoved Omega among all (prototype, free
    training row) pairs, found by brute force here; the similarities come from two
    calls (every row to every row, every row to the start)."""
    from ssgallery.learn.initial import swap_start, unmoved_omega
    from ssgallery.learn.solvers import CountingSimilarity
    from ssgallery.learn.supersparse import balanced_weights, start_indices

    rng = np.random.default_rng(0)
    X, y, _ = three_poses(rng)
    u = balanced_weights(y)
    sim = RBFSimilarity(1.0)
    t = SimilaritySVM(similarity=sim).fit(X, y).decision_function(X)
    P = list(start_indices(X, y, u, 4, "class", np.random.default_rng(0)))
    G = sim(X, X)
    omega = lambda rows: unmoved_omega(G[:, rows], t, u, 1e-3)
    swaps = {(i, j): omega(P[:i] + [j] + P[i + 1:])
             for i in range(4) for j in range(len(X)) if j not in P}
    (i, j), best = min(swaps.items(), key=lambda kv: kv[1])
    assert best < omega(P)
    counter = CountingSimilarity(sim)
    Z = swap_start(X, t, u, X[P], counter, 1e-3, rounds=1)
    assert counter.n_evals == len(X) * len(X) + len(X) * 4
    assert np.array_equal(Z, X[P[:i] + [j] + P[i + 1:]])
    assert np.array_equal(swap_start(X, t, u, X[P], sim, 1e-3, rounds=0), X[P])


@pytest.mark.parametrize("seed, before, after", [(0, 0.0142, 0.0009), (1, 0.0329, 0.0),
                                                 (2, 0.0649, 0.0009)])
def test_swap_rounds_give_the_client_its_poses_back(seed, before, after):
    # the class rule's m = 4 start holds 2 of the client's images, seen in three poses;
    # swaps by the unmoved Omega lower it at every round, stop by themselves before 10,
    # and hold 3 or more genuine images: new images of the same people misranked far
    # less, with no move at all (max_iter=0)
    from ssgallery.learn.initial import swap_start, unmoved_omega
    from ssgallery.learn.supersparse import balanced_weights

    X, y, svm, found = unmoved_pose_fits(seed, none={}, ten={"swap_rounds": 10})
    assert found["none"][:2] == (pytest.approx(before, abs=1e-4), 2)
    assert found["ten"][0] == pytest.approx(after, abs=1e-4) and found["ten"][1] >= 3
    fits, sim = {0: found["none"][2], 10: found["ten"][2]}, RBFSimilarity(1.0)
    t, u, lam = svm.decision_function(X), balanced_weights(y), fits[10].regressor_.lam_
    start = fits[0].initial_prototypes_  # the class rule's
    omegas = [unmoved_omega(sim(X, swap_start(X, t, u, start, sim, lam, r)), t, u, lam)
              for r in range(11)]
    assert all(np.diff(omegas[:4]) < 0)  # each of the first swaps lowers it
    assert omegas[-1] == pytest.approx(fits[10].regressor_.objective_)


def test_swap_start_never_swaps_in_a_copy_of_a_prototype():
    # the same image twice in X (enrolled twice; a repeated row of a regression set):
    # once one copy is a prototype, the other is not free either, or the swaps pile
    # every prototype on it (equal prototypes move together forever)
    from ssgallery.learn.initial import swap_start, unmoved_omega

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    X[5] = X[6] = X[0]
    y, u = rng.normal(size=12), np.full(12, 1 / 12)
    y[[0, 5, 6]], u[[0, 5, 6]] = 5.0, 0.2
    sim = RBFSimilarity(2.0)
    Z0 = X[[1, 2, 3]]
    Z = swap_start(X, y, u, Z0, sim, 0.1, rounds=5)
    assert len(np.unique(Z, axis=0)) == 3
    assert sum(np.array_equal(z, X[0]) for z in Z) == 1  # the heavy image, once
    assert unmoved_omega(sim(X, Z), y, u, 0.1) < unmoved_omega(sim(X, Z0), y, u, 0.1)


@pytest.mark.parametrize("param, value, drop, kept", [("start_candidates", 8, 0.0, 3),
                                                     ("swap_rounds", 2, 1e-4, 2)])
def test_robust_starts_reach_the_regression_distiller(param, value, drop, kept):
    # SRidge's learner gets them too. From its quantile start: among 8 candidates (the
    # quantile rule's restarts) the rule's own start has the least unmoved Omega and
    # is kept; the swaps exchange one of its three prototypes and Omega drops
    from ssgallery.learn.regression import SuperSparseRegressionDistiller

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    yv = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    one = SuperSparseRegressionDistiller(n_prototypes=3, similarity="rbf", max_iter=0,
                                         random_state=0).fit(X, yv)
    other = clone(one).set_params(**{param: value}).fit(X, yv)
    assert getattr(other.regressor_, param) == value
    assert other.regressor_.objective_ <= one.regressor_.objective_ - drop
    same = (other.initial_prototypes_[:, None] == one.initial_prototypes_[None]).all(-1)
    assert same.any(1).sum() == kept


def test_swaps_keep_a_client_image_so_strangers_stay_out():
    # the client between two impostor subjects: the pair of least training Omega is one
    # impostor of each, a model of "neither of them" that accepts every stranger; the
    # swaps keep one of the client's images, and strangers score below its new images
    import itertools

    from ssgallery.learn.initial import unmoved_omega
    from ssgallery.learn.solvers import beta_step
    from ssgallery.learn.supersparse import balanced_weights

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1.0, size=(6, 2)),
                   *(rng.normal(c, 0.5, size=(5, 2)) for c in ([3, 0], [-3, 0]))])
    y = np.array([1] * 6 + [-1] * 10)
    sim = RBFSimilarity(0.5)
    svm = SimilaritySVM(similarity=sim).fit(X, y)
    d = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=2, similarity=sim,
                             init="genuine", max_iter=0, swap_rounds=3).fit(X, y)
    t, u, lam, G = svm.decision_function(X), balanced_weights(y), d.regressor_.lam_, sim(X, X)
    rows = [int(np.flatnonzero((X == z).all(axis=1))[0]) for z in d.prototypes_]
    assert (t[rows] > 0).any()
    pair = list(min(itertools.combinations(range(len(X)), 2),
                    key=lambda P: unmoved_omega(G[:, list(P)], t, u, lam)))
    assert (y[pair] < 0).all()  # the free swaps' goal: impostors only, lower Omega
    assert unmoved_omega(G[:, pair], t, u, lam) < d.regressor_.objective_ / 3
    probes = rng.normal(0, 1.0, size=(20, 2))
    strangers = np.column_stack([rng.normal(0, 0.5, 20), rng.choice([-3.0, 3.0], 20)])
    beta, b = beta_step(G[:, pair], t, u, lam)
    neither = lambda Z: sim(Z, X[pair]) @ beta + b
    assert neither(strangers).min() > neither(probes).mean()  # every stranger accepted
    assert d.decision_function(strangers).max() < d.decision_function(probes).mean()


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
