"""SuperSparseRegressor behaviour on small synthetic problems: solvers, counted
similarity evaluations, bounds, initial prototypes, the similarity scale. The distiller
of an SVM teacher: tests/test_distiller.py."""

import numpy as np
import pytest

from ssgallery.learn.similarity import HeuristicGradient, RBFSimilarity
from ssgallery.learn.solvers import beta_step, objective
from ssgallery.learn.supersparse import (
    SuperSparseRegressor,
    balanced_weights,
    initial_prototypes,
    similarity_scale,
)


class CountedRBF(RBFSimilarity):
    """An RBF that counts the entries it is asked for, independently of the learner."""

    def __init__(self, gamma=1.0):
        super().__init__(gamma)
        self.count = 0
        self.calls = 0  # one call = one run of an external matcher program

    def __call__(self, X, Z):
        self.count += len(X) * len(Z)
        self.calls += 1
        return super().__call__(X, Z)


def _bumps(seed=0, n=120):
    """y = two RBF bumps of opposite sign in 2-D, plus a little noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    c1, c2 = np.array([-1.0, 0.5]), np.array([1.5, -1.0])
    y = (1.5 * np.exp(-0.5 * ((X - c1) ** 2).sum(1))
         - 1.0 * np.exp(-0.5 * ((X - c2) ** 2).sum(1)) + 0.2)
    return X, y + 0.01 * rng.normal(size=n)


def _omega(est, X, y, u=None):
    u = np.full(len(X), 1 / len(X)) if u is None else u / u.sum()
    S = est.similarity_(X, est.prototypes_)
    return objective(S, y, u, est.beta_, est.intercept_, est.lam_)


@pytest.mark.parametrize("solver", ["varpro", "paper"])
def test_recovers_two_bumps(solver):
    X, y = _bumps()
    est = SuperSparseRegressor(2, gamma=0.5, solver=solver, normalize_step=True,
                               eta=0.05, max_iter=300, tol=1e-9, random_state=0).fit(X, y)
    assert est.score(X, y) > 0.99
    # beta_, intercept_ are the exact beta-step for the final prototypes
    beta, _ = beta_step(est.similarity_(X, est.prototypes_), y, np.full(len(X), 1 / len(X)),
                        est.lam_)
    np.testing.assert_allclose(est.beta_, beta, rtol=1e-8)
    assert est.objective_ == pytest.approx(_omega(est, X, y), rel=1e-10)
    assert est.objective_path_[-1, 1] == pytest.approx(est.objective_, rel=1e-12)


def test_varpro_descends_from_its_start_and_beats_paper_raw_step():
    """The path starts at Omega of the starting prototypes (recomputed here), ends at the
    final Omega, which is well below the start, and below Algorithm 1's with the raw step."""
    X, y = _bumps(1)
    est = SuperSparseRegressor(3, gamma=0.5, init="random", random_state=3).fit(X, y)
    u = np.full(len(X), 1 / len(X))
    S0 = est.similarity_(X, est.initial_prototypes_)
    omega0 = objective(S0, y, u, *beta_step(S0, y, u, est.lam_), est.lam_)
    path = est.objective_path_
    assert np.all(np.diff(path[:, 0]) > 0)  # evaluations strictly accumulate
    assert path[0, 1] == pytest.approx(omega0, rel=1e-10)
    assert est.objective_ == pytest.approx(_omega(est, X, y), rel=1e-10)
    assert est.objective_ < 0.5 * omega0  # 0.067 vs 0.168 with this seed
    paper = SuperSparseRegressor(3, gamma=0.5, init="random", random_state=3,
                                 solver="paper").fit(X, y)
    assert est.objective_ < paper.objective_


@pytest.mark.parametrize("solver", ["varpro", "paper"])
def test_box_bounds_are_respected(solver):
    X, y = _bumps(2)
    lo, hi = np.array([-0.5, -0.2]), np.array([0.5, 0.3])
    est = SuperSparseRegressor(3, gamma=0.5, solver=solver, bounds=(lo, hi),
                               normalize_step=True, random_state=0).fit(X, y)
    Z = est.prototypes_
    assert np.all(Z >= lo - 1e-12) and np.all(Z <= hi + 1e-12)
    # the box binds: at least one coordinate sits on it
    assert np.any(np.isclose(Z, lo) | np.isclose(Z, hi))


def test_n_similarity_evals_counted_exactly_paper():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 2)), rng.normal(size=5)
    sim = CountedRBF(0.5)
    est = SuperSparseRegressor(2, similarity=sim, solver="paper", max_iter=1, tol=0.0,
                               lam_scale="none", random_state=0).fit(X, y)
    # start: 5 x 2; each of the 2 moves: 1 repulsion entry + a new column of 5
    assert est.n_similarity_evals_ == 10 + 2 * (1 + 5) == sim.count
    assert est.n_iter_ == 2
    assert est.objective_path_[:, 0].tolist() == [10, 16, 22]


@pytest.mark.parametrize("repulsion", [True, False])
def test_n_similarity_evals_counted_exactly_varpro(repulsion):
    X, y = _bumps(3, n=30)
    sim = CountedRBF(0.5)
    est = SuperSparseRegressor(3, similarity=sim, repulsion=repulsion, n_init=2,
                               lam_scale="none", random_state=0).fit(X, y)
    assert est.n_similarity_evals_ == sim.count > 0
    relative = SuperSparseRegressor(3, similarity=CountedRBF(0.5), repulsion=repulsion,
                                    n_init=2, lam_scale="gram", random_state=0).fit(X, y)
    assert relative.n_similarity_evals_ == relative.similarity_.count > 30 * 30
    if not repulsion:
        assert est.n_similarity_evals_ % (30 * 3) == 0


def test_varpro_one_similarity_call_per_evaluation_with_repulsion():
    # the repulsion phase needs s(x_i, z_j) and s(z_k, z_j) at the same Z: one call
    X, y = _bumps(3, n=30)
    sim = CountedRBF(0.5)
    est = SuperSparseRegressor(3, similarity=sim, repulsion=True, lam_scale="none",
                               random_state=0).fit(X, y)
    assert sim.calls == len(est.objective_path_) > 5
    assert est.n_similarity_evals_ == sim.count


@pytest.mark.parametrize("repulsion", [True, False])
def test_paper_solver_similarity_calls_per_move(repulsion):
    # Algorithm 1: the repulsion term needs s(z_k, z_j) at the pre-move z_j and the
    # beta-step the column s(x_i, z_j) at the moved z_j, so a move costs 2 calls with
    # repulsion (1 without); merging them would compute extra entries or stale ones
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 2)), rng.normal(size=5)
    sim = CountedRBF(0.5)
    est = SuperSparseRegressor(3, similarity=sim, solver="paper", max_iter=2, tol=0.0,
                               repulsion=repulsion, lam_scale="none", random_state=0).fit(X, y)
    assert est.n_iter_ == 6
    assert sim.calls == 1 + est.n_iter_ * (2 if repulsion else 1)
    assert sim.count == 5 * 3 + est.n_iter_ * (5 + (2 if repulsion else 0))


def test_heuristic_gradient_similarity_learns():
    X, y = _bumps(4)
    base = RBFSimilarity(0.5)
    est = SuperSparseRegressor(2, similarity=HeuristicGradient(lambda A, B: base(A, B)),
                               random_state=0).fit(X, y)
    assert est.score(X, y) > 0.9


def test_sample_weights_zero_equals_removal():
    X, y = _bumps(5, n=60)
    w = np.ones(60)
    w[::3] = 0
    a = SuperSparseRegressor(2, gamma=0.5, random_state=0).fit(X, y, sample_weight=w)
    b = SuperSparseRegressor(2, gamma=0.5, random_state=0).fit(X[w > 0], y[w > 0])
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-8)


def test_class_init_places_genuine_medoid_first():
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(5, 3)) + 4
    neg = rng.normal(size=(40, 3))
    X = np.vstack([pos, neg])
    y = np.r_[np.ones(5), -np.ones(40)]
    u = balanced_weights(y)
    assert u[:5].sum() == pytest.approx(0.5) and u.sum() == pytest.approx(1.0)
    Z = initial_prototypes(X, y, u, 3, "class", np.random.default_rng(0))
    D = np.linalg.norm(pos[:, None] - pos[None], axis=2).sum(1)
    np.testing.assert_array_equal(Z[0], pos[np.argmin(D)])  # genuine medoid
    assert any((Z[1] == x).all() for x in pos)  # 2 genuine of 3 (weights 1/2 each)
    assert any((Z[2] == x).all() for x in neg)
    for init in ("kmeans", "random"):
        assert initial_prototypes(X, y, u, 3, init, np.random.default_rng(0)).shape == (3, 3)


def test_fewer_samples_than_prototypes():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = np.array([1.0, -1.0])
    for init in ("class", "kmeans", "random"):
        est = SuperSparseRegressor(5, init=init, random_state=0).fit(X, y)
        assert est.prototypes_.shape == (5, 2)
        assert len(np.unique(est.prototypes_, axis=0)) == 5
        assert np.all(np.isfinite(est.predict(X)))


def test_invalid_parameters_raise():
    X, y = _bumps(0, n=20)
    for bad in [{"n_prototypes": 0}, {"solver": "sgd"}, {"init": "foo"},
                {"gamma": "auto"}, {"gamma": -1.0}, {"similarity": "cosine"},
                {"lam": -1.0}, {"prototypes_init": np.zeros((3, 2))}]:
        with pytest.raises(ValueError):
            SuperSparseRegressor(**bad).fit(X, y)


def test_gamma_options():
    X, _ = _bumps(0, n=50)
    y = X[:, 0]
    assert SuperSparseRegressor().fit(X, y).similarity_.gamma == pytest.approx(0.5)
    est = SuperSparseRegressor(gamma="median").fit(X, y)
    D = ((X[:, None] - X[None]) ** 2).sum(2)[np.triu_indices(50, 1)]
    assert est.similarity_.gamma == pytest.approx(1 / np.median(D))
    assert SuperSparseRegressor(gamma=2.0).fit(X, y).similarity_.gamma == 2.0


def test_prototypes_init_warm_start():
    X, y = _bumps(0)
    first = SuperSparseRegressor(2, gamma=0.5, random_state=0).fit(X, y)
    warm = SuperSparseRegressor(2, gamma=0.5, prototypes_init=first.prototypes_,
                                repulsion=False).fit(X, y)
    assert warm.objective_ <= first.objective_ * (1 + 1e-9)
    assert warm.n_similarity_evals_ < first.n_similarity_evals_


@pytest.mark.parametrize("solver", ["varpro", "paper"])
def test_max_iter_0_keeps_the_start_with_beta_by_eq4(solver):
    """No move at all (compress --max-iter 0): the start, beta and b by Eq. 4, its Omega;
    varpro used to run its repulsion phase and one L-BFGS-B step anyway."""
    X, y = _bumps(0)
    fit = SuperSparseRegressor(3, gamma=0.5, solver=solver, max_iter=0, random_state=0)
    fit.fit(X, y)
    assert np.array_equal(fit.prototypes_, fit.initial_prototypes_) and fit.n_iter_ == 0
    u = np.full(len(y), 1 / len(y))
    S = fit.similarity_(X, fit.prototypes_)
    beta, b = beta_step(S, y, u, fit.lam_)
    np.testing.assert_allclose(fit.beta_, beta)
    assert fit.objective_ == pytest.approx(objective(S, y, u, beta, b, fit.lam_))


def test_n_init_keeps_lowest_training_objective():
    X, y = _bumps(6)
    single = SuperSparseRegressor(2, gamma=0.5, init="random", random_state=0).fit(X, y)
    best = SuperSparseRegressor(2, gamma=0.5, init="random", n_init=4, random_state=0).fit(X, y)
    # restart 0 is the single run's start; the kept run is never worse
    assert best.objective_ <= single.objective_ * (1 + 1e-9)
    assert best.n_similarity_evals_ > single.n_similarity_evals_


@pytest.mark.slow
def test_att_faces_varpro_and_class_init_beat_paper_and_random(att_faces):
    """Real faces (AT&T, eigenface features, SVM teacher), 3 clients, m = 2."""
    from ssgallery.images.ingest import load_faces
    from ssgallery.learn.teacher import SimilaritySVM
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    root = att_faces
    subjects = [f"s{i}" for i in range(1, 21)]
    faces = load_faces(root, clients=subjects)
    train = np.concatenate([np.flatnonzero(faces.labels == s)[:5] for s in subjects])
    matcher = EigenfaceMatcher().fit(faces.images[train])
    sim, X = matcher.similarity(), matcher.transform(faces.images[train])
    omega = {k: [] for k in ("varpro", "paper", "random")}
    for client in subjects[:3]:
        yb = np.where(faces.labels[train] == client, 1.0, -1.0)
        t = SimilaritySVM(similarity=sim).fit(X, yb).decision_function(X)
        u = balanced_weights(yb)
        for key, params in [("varpro", {}), ("paper", {"solver": "paper"}),
                            ("random", {"init": "random"})]:
            est = SuperSparseRegressor(2, similarity=sim, random_state=0, **params)
            omega[key].append(est.fit(X, t, sample_weight=u).objective_)
    # measured here: varpro ends ~35x lower than Algorithm 1 with the raw step, and
    # class-aware starts ~5x lower than random ones
    assert np.mean(omega["varpro"]) < 0.3 * np.mean(omega["paper"])
    assert np.mean(omega["varpro"]) < 0.5 * np.mean(omega["random"])


class ScaledRBF(RBFSimilarity):
    """a * exp(-gamma ||x - z||^2): the same similarity on another scale."""

    def __init__(self, gamma=1.0, a=1.0):
        super().__init__(gamma)
        self.a = a

    def __call__(self, X, Z):
        return self.a * super().__call__(X, Z)

    def gradient(self, X, Z, S=None):
        return super().gradient(X, Z, None if S is None else S / self.a) * self.a

    def contract_gradient(self, X, Z, W, S=None):
        return super().contract_gradient(X, Z, W, None if S is None else S / self.a) * self.a


def test_similarity_scale_is_the_weighted_column_variance_and_scales_with_a_squared():
    X, _ = _bumps(3, n=60)
    u = np.random.default_rng(0).uniform(0.5, 1.5, 60)
    u /= u.sum()
    S = RBFSimilarity(0.5)(X, X)
    by_hand = sum(u[j] * u @ (S[:, j] - u @ S[:, j]) ** 2 for j in range(60))
    assert similarity_scale(X, u, RBFSimilarity(0.5)) == pytest.approx(by_hand, rel=1e-12)
    assert similarity_scale(X, u, ScaledRBF(0.5, 7.0)) == pytest.approx(49 * by_hand,
                                                                       rel=1e-12)


def test_relative_lam_makes_the_fit_invariant_to_the_similarity_scale():
    X, y = _bumps(4, n=80)
    fits = []
    for a in (1.0, 20.0):
        fits.append(SuperSparseRegressor(3, similarity=ScaledRBF(0.5, a), lam=1e-2,
                                         lam_scale="gram", repulsion=False,
                                         random_state=0).fit(X, y))
    assert fits[1].lam_ == pytest.approx(400 * fits[0].lam_, rel=1e-9)
    np.testing.assert_allclose(fits[1].predict(X), fits[0].predict(X), atol=1e-9)
    # absolute lam: the same ridge bites 400 times harder on the smaller similarity
    absolute = [SuperSparseRegressor(3, similarity=ScaledRBF(0.5, a), lam=fits[0].lam_,
                                     lam_scale="none", repulsion=False,
                                     random_state=0).fit(X, y)
                for a in (1.0, 0.05)]
    assert absolute[0].lam_ == fits[0].lam_
    assert np.abs(absolute[1].predict(X) - absolute[0].predict(X)).max() > 0.1
