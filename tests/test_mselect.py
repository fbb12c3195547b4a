"""Incremental selection of the number of prototypes (Eq. 8 (eq:xval-m))."""

import numpy as np
import pytest
from sklearn.svm import SVC

from ssgallery import select_n_prototypes
from ssgallery.learn.mselect import incremental_fits
from ssgallery.learn.supersparse import SuperSparseDistiller, SuperSparseRegressor


def _three_bumps(seed=0, n=150):
    """A target that truly needs 3 RBF bumps (well separated, different heights)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, size=(n, 2))
    centres = np.array([[-2.5, -2.0], [2.5, -1.5], [0.0, 2.5]])
    heights = np.array([1.0, -0.8, 0.6])
    y = np.exp(-0.5 * ((X[:, None] - centres[None]) ** 2).sum(2)) @ heights
    return X, y + 0.01 * rng.normal(size=n)


def test_picks_three_prototypes_for_three_bumps():
    X, y = _three_bumps()
    est = SuperSparseRegressor(gamma=0.5, random_state=0)
    res = select_n_prototypes(est, X, y, m_grid=(6, 4, 3, 2, 1), rho=1e-3, cv=3)
    assert res.best_m_ == 3
    loss = {m: v["loss"] for m, v in res.path_.items()}
    assert loss[3] < 0.1 * loss[2] < loss[1]  # fewer than 3 bumps cannot fit
    assert all(v["L"] == pytest.approx(v["loss"] + 1e-3 * m) for m, v in res.path_.items())
    assert res.best_estimator_.prototypes_.shape == (3, 2)
    assert res.best_estimator_.score(X, y) > 0.99
    # with a high price per prototype, fewer are chosen
    cheap = select_n_prototypes(est, X, y, m_grid=(4, 3, 2, 1), rho=1.0, cv=3, refit=False)
    assert cheap.best_m_ == 1 and cheap.best_estimator_ is None


def test_incremental_fits_drop_smallest_beta_and_warm_start():
    X, y = _three_bumps(1)
    models = incremental_fits(SuperSparseRegressor(gamma=0.5, random_state=0), X, y,
                              np.ones(len(X)), [5, 3])
    assert list(models) == [5, 3]
    big, small = models[5], models[3]
    keep = np.sort(np.argsort(-np.abs(big.beta_))[:3])
    np.testing.assert_array_equal(small.prototypes_init, big.prototypes_[keep])
    assert small.objective_ <= big.objective_ * 1.5 + 1e-3


def test_distiller_selection_with_svm_teacher():
    from sklearn.datasets import make_moons

    X, y = make_moons(80, noise=0.1, random_state=0)
    y = np.where(y == 1, 1, -1)
    dist = SuperSparseDistiller(SVC(gamma=1.0, C=10.0), gamma=1.0, random_state=0)
    res = select_n_prototypes(dist, X, y, m_grid=(6, 3, 1), rho=0.01, cv=3, loss="error")
    assert res.best_m_ in (3, 6)
    assert res.path_[1]["loss"] > res.path_[res.best_m_]["loss"]
    best = res.best_estimator_
    assert best.n_prototypes == res.best_m_ and best.prototypes_.shape == (res.best_m_, 2)
    assert best.score(X, y) > 0.9


def test_bad_arguments():
    X, y = _three_bumps(n=20)
    with pytest.raises(ValueError, match="rho"):
        select_n_prototypes(SuperSparseRegressor(), X, y, rho=-1)
    with pytest.raises(ValueError, match="loss"):
        select_n_prototypes(SuperSparseRegressor(), X, y, loss="hinge")
    with pytest.raises(TypeError):
        select_n_prototypes(SVC(), X, y)


def test_prefit_teacher_is_used_not_refitted():
    from sklearn.datasets import make_moons

    X, y = make_moons(60, noise=0.1, random_state=1)
    y = np.where(y == 1, 1, -1)
    teacher = SVC(gamma=1.0, C=10.0).fit(X, y)
    dist = SuperSparseDistiller(teacher, prefit=True, gamma=1.0, random_state=0)
    res = select_n_prototypes(dist, X, y, m_grid=(3, 2), cv=3)
    assert res.best_estimator_.teacher_ is teacher


def test_selection_of_a_distiller_distils_between_the_classes_as_its_fit():
    """``compress --m auto`` keeps the selection's refit: with ``between`` > 0 it fits
    the teacher's outputs at the between-points too, exactly as the distiller's own fit
    at the chosen m (and the folds choose m with them); between=0: the training points
    alone. A black-box similarity fits no between-points, as in ``fit``."""
    from sklearn.datasets import make_moons

    from ssgallery.learn.similarity import HeuristicGradient, RBFSimilarity

    X, y = make_moons(80, noise=0.1, random_state=0)
    y = np.where(y == 1, 1, -1)
    teacher = SVC(gamma=1.0, C=10.0).fit(X, y)
    kept = {}
    for b in (0.0, 0.5):
        dist = SuperSparseDistiller(teacher, prefit=True, n_prototypes=2, gamma=1.0,
                                    between=b, random_state=0)
        sel = select_n_prototypes(dist, X, y, m_grid=(2,), cv=3, random_state=0)
        own = SuperSparseDistiller(teacher, prefit=True, n_prototypes=2, gamma=1.0,
                                   between=b, random_state=0).fit(X, y)
        np.testing.assert_array_equal(sel.best_estimator_.prototypes_, own.prototypes_)
        kept[b] = sel
    assert not np.array_equal(kept[0.0].best_estimator_.prototypes_,
                              kept[0.5].best_estimator_.prototypes_)
    assert kept[0.0].path_[2]["loss"] != kept[0.5].path_[2]["loss"]  # folds with them
    black = [select_n_prototypes(
        SuperSparseDistiller(teacher, prefit=True, n_prototypes=2, between=b,
                             similarity=HeuristicGradient(RBFSimilarity(1.0)),
                             random_state=0), X, y, m_grid=(2,), cv=3).best_estimator_
        for b in (0.0, 0.5)]
    np.testing.assert_array_equal(black[0].prototypes_, black[1].prototypes_)
