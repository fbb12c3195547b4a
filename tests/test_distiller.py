"""SuperSparseDistiller on small synthetic problems: an SVM teacher's decisions
reproduced (fitted or prefit), the initial prototypes it resolves (genuine, auto from
the gradient or the teacher's similarity, half weights rounded up), and the points
half-way between the classes it also distils (``between``). The regressor underneath:
tests/test_learner.py."""

import numpy as np
import pytest
from sklearn.svm import SVC

from ssgallery.learn.similarity import HeuristicGradient, RBFSimilarity
from ssgallery.learn.supersparse import SuperSparseDistiller, balanced_weights


def _two_moons(seed=0):
    from sklearn.datasets import make_moons

    X, y = make_moons(80, noise=0.15, random_state=seed)
    return X, np.where(y == 1, 1, -1)


def test_distiller_reproduces_svm_decisions():
    X, y = _two_moons()
    teacher = SVC(kernel="rbf", gamma=1.0, C=10.0)
    dist = SuperSparseDistiller(teacher, n_prototypes=4, gamma=1.0, random_state=0).fit(X, y)
    assert dist.teacher_ is not teacher  # cloned, not mutated
    assert len(dist.teacher_.support_) > 10
    grid = np.stack(np.meshgrid(np.linspace(-1.5, 2.5, 60), np.linspace(-1, 1.5, 60)), -1)
    grid = grid.reshape(-1, 2)
    agree = np.mean(np.sign(dist.decision_function(grid))
                    == np.sign(dist.teacher_.decision_function(grid)))
    assert agree >= 0.9
    assert set(dist.predict(X)) <= {-1, 1}
    assert dist.score(X, y) >= 0.9
    assert dist.prototypes_.shape == (4, 2) and dist.beta_.shape == (4,)
    # genuine and impostor prototypes: the betas take both signs
    assert (dist.beta_ > 0).any() and (dist.beta_ < 0).any()


def test_distiller_prefit_teacher_and_labels():
    X, y = _two_moons(1)
    teacher = SVC(kernel="rbf", gamma=1.0).fit(X, y)
    labels = np.where(y > 0, "genuine", "impostor")  # classes_ sorted: genuine < impostor
    dist = SuperSparseDistiller(teacher, prefit=True, random_state=0).fit(X, labels)
    assert dist.teacher_ is teacher
    assert list(dist.classes_) == ["genuine", "impostor"]
    assert set(dist.predict(X)) <= {"genuine", "impostor"}
    with pytest.raises(ValueError, match="two classes"):
        SuperSparseDistiller(SVC()).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="prefit"):
        SuperSparseDistiller(prefit=True).fit(X, y)


def test_genuine_init_and_half_weight_rounding():
    """init="genuine": min(m - 1, #genuine) starts on genuine samples; init="class"
    rounds a class weight of one half up even when it is 0.4999999999999999."""
    from ssgallery.learn.supersparse import initial_prototypes

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.r_[np.ones(5), -np.ones(35)]
    u = np.where(y > 0, 0.5 / 5, 0.5 / 35)
    u_noisy = u.copy()
    u_noisy[:5] *= 1 - 1e-15  # genuine weight a hair under one half
    genuine = {tuple(x) for x in X[:5]}

    def n_genuine(Z):
        return sum(tuple(z) in genuine for z in Z)

    for weights in (u, u_noisy):
        Z = initial_prototypes(X, y, weights, 5, "class", np.random.default_rng(0))
        assert n_genuine(Z) == 3
        Z = initial_prototypes(X, y, weights, 5, "genuine", np.random.default_rng(0))
        assert n_genuine(Z) == 4 and len(Z) == 5
    Z = initial_prototypes(X, y, u, 8, "genuine", np.random.default_rng(0))
    assert n_genuine(Z) == 5  # all genuine samples, the other 3 on impostors


def test_compress_auto_init_follows_the_gradient():
    from ssgallery.app.compress import resolve_init
    from ssgallery.learn.similarity import CallableSimilarity, HeuristicGradient, RBFSimilarity

    black_box = HeuristicGradient(CallableSimilarity(lambda X, Z: X @ Z.T))
    assert resolve_init("auto", RBFSimilarity(1.0)) == "class"
    assert resolve_init("auto", black_box) == "genuine"
    assert resolve_init("kmeans", black_box) == "kmeans"


def test_ssvm_method_resolves_auto_init_from_the_teacher_similarity():
    from ssgallery.biometrics.methods import make_method
    from ssgallery.learn.similarity import CallableSimilarity, HeuristicGradient
    from ssgallery.learn.teacher import SimilaritySVM

    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 1, (30, 3)), rng.normal(2, 1, (6, 3))])
    y = np.r_[-np.ones(30), np.ones(6)]
    black_box = HeuristicGradient(CallableSimilarity(
        lambda A, B: np.exp(-np.abs(A[:, None, :] - B[None, :, :]).sum(-1))))
    for similarity, expected in (("rbf", "class"), (black_box, "genuine")):
        teacher = SimilaritySVM(similarity=similarity, C=1.0).fit(X, y)
        est = make_method("ssvm", 3).fit(X, y, teacher=teacher)
        assert est.distiller_.init == expected
    assert make_method("ssvm", 3, init="kmeans").fit(X, y, teacher=teacher).distiller_.init == "kmeans"


def _client_among_impostors(seed=0):
    """5 genuine points near the origin, 60 impostors on a ring around them."""
    rng = np.random.default_rng(seed)
    genuine = rng.normal(0, 0.4, size=(5, 2))
    angle, radius = rng.uniform(0, 2 * np.pi, 60), rng.uniform(1.2, 3.0, 60)
    X = np.r_[genuine, np.c_[radius * np.cos(angle), radius * np.sin(angle)]]
    return X, np.r_[np.ones(5), -np.ones(60)]


def test_between_points_are_each_impostor_s_midpoint_with_a_genuine_sample():
    from ssgallery.learn.supersparse import between_points

    X, y = _client_among_impostors()
    B = between_points(X, y, random_state=0)
    assert B.shape == (60, 2)
    mates = 2 * B - X[y < 0]  # the genuine sample of each midpoint
    assert np.all(np.isclose(mates[:, None, :], X[y > 0][None]).all(-1).any(1))
    assert np.array_equal(B, between_points(X, y, random_state=0))  # seeded
    assert between_points(X[y < 0], y[y < 0]).shape == (0, 2)  # one class: none
    # more impostors than max_points: a seeded sample of them, each once
    few = between_points(X, y, random_state=0, max_points=25)
    assert few.shape == (25, 2)
    mates = 2 * few[:, None, :] - X[y > 0][None]  # each point's impostor, for some mate
    used = [np.flatnonzero(np.isclose(mates[i][:, None, :], X[y < 0][None]).all(-1).any(0))
            for i in range(25)]
    assert all(u.size == 1 for u in used) and len({int(u[0]) for u in used}) == 25
    assert np.array_equal(few, between_points(X, y, random_state=0, max_points=25))


def test_between_fits_the_teacher_closer_between_the_classes():
    """With the teacher's scores at midpoints among the targets, the distilled model
    follows the teacher closer at other midpoints (where look-alikes of the client
    lie); between=0 is the fit on the training points alone."""
    from ssgallery.learn.supersparse import between_points

    X, y = _client_among_impostors()
    teacher = SVC(kernel="rbf", gamma=1.0, C=10.0).fit(X, y)
    probe = between_points(X, y, random_state=123)  # other mates than the fit's
    fits = {b: SuperSparseDistiller(teacher, prefit=True, n_prototypes=2, gamma=1.0,
                                    between=b, random_state=0).fit(X, y) for b in (0.0, 0.5)}
    off = {b: np.mean(np.abs(d.decision_function(probe) - teacher.decision_function(probe)))
           for b, d in fits.items()}
    assert off[0.0] == pytest.approx(0.195, abs=0.005)
    assert off[0.5] == pytest.approx(0.155, abs=0.005)
    plain = fits[0.0].make_regressor().fit(X, teacher.decision_function(X),
                                           sample_weight=balanced_weights(y))
    np.testing.assert_array_equal(fits[0.0].prototypes_, plain.prototypes_)
    # a black-box similarity (no midpoints of its inputs): between is ignored
    black = {b: SuperSparseDistiller(teacher, prefit=True, n_prototypes=2, random_state=0,
                                     similarity=HeuristicGradient(RBFSimilarity(1.0)),
                                     between=b).fit(X, y) for b in (0.0, 0.5)}
    np.testing.assert_array_equal(black[0.0].prototypes_, black[0.5].prototypes_)
    with pytest.raises(ValueError, match="between"):
        SuperSparseDistiller(teacher, prefit=True, between=-1.0).fit(X, y)
