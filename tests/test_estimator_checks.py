"""scikit-learn API conformance of the super-sparse estimators."""

import numpy as np
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from ssgallery.learn.supersparse import SuperSparseDistiller, SuperSparseRegressor


def test_regressor_passes_check_estimator_with_defaults():
    results = check_estimator(SuperSparseRegressor(), on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])) for r in results
              if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 50


def test_distiller_params_roundtrip_and_clone():
    d = SuperSparseDistiller(n_prototypes=3, lam=1e-3, solver="paper", random_state=1)
    c = clone(d)
    assert c.get_params() == d.get_params()
    reg = d.make_regressor()
    assert isinstance(reg, SuperSparseRegressor)
    assert (reg.n_prototypes, reg.lam, reg.solver, reg.random_state) == (3, 1e-3, "paper", 1)


def test_regressor_is_deterministic_with_seed():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    a = SuperSparseRegressor(3, init="random", random_state=7).fit(X, y)
    b = SuperSparseRegressor(3, init="random", random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.prototypes_, b.prototypes_)
    assert a.n_similarity_evals_ == b.n_similarity_evals_


def test_distiller_passes_check_estimator():
    """Binary-only classifier distilled from a fixed-C SVM teacher (C fixed to keep it fast)."""
    from ssgallery.learn.teacher import SimilaritySVM

    results = check_estimator(SuperSparseDistiller(SimilaritySVM(C=1.0)), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 40
