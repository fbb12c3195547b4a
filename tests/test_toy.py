"""Paper Fig. 2: two virtual prototypes replicate an RBF SVM with >= 10 support vectors."""

import numpy as np
import pytest

from ssgallery.biometrics.methods import METHOD_NAMES, make_method
from ssgallery.datasets import toy_two_gaussians
from ssgallery.learn.teacher import SimilaritySVM


def dense_grid(X, margin=0.5, steps=100):
    lo, hi = X.min(0) - margin, X.max(0) + margin
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], steps), np.linspace(lo[1], hi[1], steps))
    return np.c_[gx.ravel(), gy.ravel()]


@pytest.fixture(scope="module")
def toy():
    X, y = toy_two_gaussians()
    svm = SimilaritySVM(gamma=0.25, C=1.0).fit(X, y)
    return X, y, svm, dense_grid(X)


def test_ssvm_with_two_prototypes_reproduces_the_svm(toy):
    X, y, svm, G = toy
    assert svm.n_support_total_ >= 10
    ssvm = make_method("ssvm", 2).fit(X, y, teacher=svm)
    assert ssvm.n_matches_ == 2
    agree = np.mean(np.sign(ssvm.decision_function(G)) == np.sign(svm.decision_function(G)))
    assert agree >= 0.97
    # the prototypes moved away from where they started (virtual, not training samples)
    assert np.linalg.norm(ssvm.prototypes_ - ssvm.initial_prototypes_) > 0.1
    assert not any(np.allclose(z, x, atol=1e-3) for z in ssvm.prototypes_ for x in X)


@pytest.mark.parametrize("name", [n for n in METHOD_NAMES if n != "svm"])
def test_every_baseline_returns_exactly_two_prototypes_on_the_toy(toy, name):
    X, y, svm, G = toy
    est = make_method(name, 2).fit(X, y, teacher=svm)
    assert est.n_matches_ == 2 and est.prototypes_.shape == (2, 2)
    assert np.all(np.isfinite(est.decision_function(G)))
