"""One Z-norm: a gallery client's normalisation (``compress``,
`ssgallery.app.client_fit.train_client`) and the held-out normalisation of each method
in ``roc``'s protocol (`ssgallery.biometrics.heldout.heldout_normalisation`) are
`ssgallery.biometrics.heldout.znorm_parameters`. The values are pinned on fixed cases,
measured before the two computations were made one (main at 1625883)."""

import numpy as np
import pytest

from ssgallery.app import client_fit, client_training
from ssgallery.biometrics import heldout


class _Centroids:
    """A linear scorer: the difference of the class means, on the columns ``cols``."""

    def __init__(self, cols):
        self.cols = cols

    def fit(self, X, y):
        X = X[:, self.cols]
        self.w = X[y > 0].mean(axis=0) - X[y < 0].mean(axis=0)
        return self

    def decision_function(self, X):
        return X[:, self.cols] @ self.w


def _case():
    """40 rows of 3 features (seed 7): 10 of the client, 5 of each of 6 impostors."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    X[:10] += 0.8
    y = np.r_[np.ones(10), -np.ones(30)]
    groups = np.r_[["me"] * 10, np.repeat([f"p{i}" for i in range(6)], 5)]
    return X, y, groups


def test_the_held_out_normalisation_of_each_model_is_pinned():
    X, y, groups = _case()

    def fit_fold(train):
        return [_Centroids([0, 1, 2]).fit(X[train], y[train]),
                _Centroids([1]).fit(X[train], y[train])]

    norms = heldout.heldout_normalisation(X, y, groups, fit_fold, 5, 3)
    assert [n["kind"] for n in norms] == ["znorm", "znorm"]
    assert [n["n"] for n in norms] == [30, 30]
    assert [(n["mean"], n["std"]) for n in norms] == [
        pytest.approx((-0.308361168899658, 0.728503213389072), rel=1e-12),
        pytest.approx((0.039447221628881514, 0.09013653833600908), rel=1e-12)]


def test_a_clients_normalisation_is_pinned_and_one_function():
    """What compress stores per client: the mean, the std (ddof 1, floored at 1e-12:
    one score, equal scores) and the count of its held-out impostor scores."""
    assert client_fit.znorm_parameters is heldout.znorm_parameters
    assert client_training.znorm_parameters is heldout.znorm_parameters
    z = heldout.znorm_parameters
    assert z(np.random.default_rng(3).normal(0.4, 2.0, 57)) == {
        "kind": "znorm", "mean": pytest.approx(0.4178891177718204, rel=1e-12),
        "std": pytest.approx(2.1034895946485976, rel=1e-12), "n": 57}
    assert z([0.7]) == {"kind": "znorm", "mean": 0.7, "std": 1e-12, "n": 1}
    assert z([1.5, 1.5, 1.5]) == {"kind": "znorm", "mean": 1.5, "std": 1e-12, "n": 3}
