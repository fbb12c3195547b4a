"""The starts and swaps of a black box's prototypes (issue 21): held-out and
least-Omega starts among candidates of training images (repeated only when short, then
jittered), swaps of a prototype for a training image in two calls, never a copy of a
prototype, keeping a client image; how far they give a client its poses back, and that
they reach the regression distiller. The rest of robust black-box training:
tests/test_robust_training.py."""

import numpy as np
import pytest
from sklearn.base import clone

from ssgallery.learn.guard import misranking
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.learn.supersparse import (
    SuperSparseDistiller,
    SuperSparseRegressor,
    balanced_weights,
)
from ssgallery.learn.teacher import SimilaritySVM


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
    from ssgallery.learn.supersparse import gram_scale, start_indices

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
    from ssgallery.learn.supersparse import start_indices

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
