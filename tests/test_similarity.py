"""The Similarity interface the learner relies on."""

import numpy as np
import pytest

from ssgallery.learn.similarity import (
    CallableSimilarity,
    HeuristicGradient,
    RBFSimilarity,
    Similarity,
    median_gamma,
)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(7, 3)), rng.normal(size=(4, 3))


def test_rbf_values_and_shape():
    X, Z = _data()
    S = RBFSimilarity(0.3)(X, Z)
    assert S.shape == (7, 4)
    ref = np.exp(-0.3 * ((X[:, None] - Z[None]) ** 2).sum(2))
    np.testing.assert_allclose(S, ref, rtol=1e-12)
    assert np.all(RBFSimilarity().sq_distances(X, X) >= 0)
    np.testing.assert_allclose(np.diag(RBFSimilarity(2.0)(X, X)), 1.0)


def test_rbf_gradient_matches_finite_differences():
    X, Z = _data(1)
    sim = RBFSimilarity(0.4)
    G = sim.gradient(X, Z)  # (n, m, d)
    h = 1e-6
    for j in range(len(Z)):
        for k in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            fd = (sim(X, Zp)[:, j] - sim(X, Zm)[:, j]) / (2 * h)
            np.testing.assert_allclose(G[:, j, k], fd, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("sim", [RBFSimilarity(0.7),
                                 HeuristicGradient(RBFSimilarity(0.7)),
                                 HeuristicGradient(lambda A, B: np.tanh(A @ B.T))])
def test_contract_gradient_equals_summed_gradient(sim):
    X, Z = _data(2)
    W = np.random.default_rng(3).normal(size=(7, 4))
    G = sim.gradient(X, Z)
    np.testing.assert_allclose(sim.contract_gradient(X, Z, W), np.einsum("ij,ijd->jd", W, G),
                               rtol=1e-12, atol=1e-14)
    # precomputed S gives the same result
    S = sim(X, Z)
    np.testing.assert_allclose(sim.contract_gradient(X, Z, W, S), sim.contract_gradient(X, Z, W))


def test_non_symmetric_similarity_is_used_as_given():
    X, Z = _data(4)
    f = CallableSimilarity(lambda A, B: A @ B.T + 0.1 * A.sum(1)[:, None], name="asym")
    S = f(X, Z)
    assert S.shape == (7, 4)
    assert not np.allclose(f(Z, X), S.T)  # not symmetric, and nothing symmetrises it


def test_callable_similarity_checks_shape():
    X, Z = _data()
    bad = CallableSimilarity(lambda A, B: np.zeros((2, 2)), name="broken")
    with pytest.raises(ValueError, match="broken returned shape"):
        bad(X, Z)
    assert repr(bad) == "CallableSimilarity(broken)"


def test_base_similarity_has_no_gradient():
    with pytest.raises(NotImplementedError):
        Similarity().gradient(*_data())
    assert RBFSimilarity(0.5).params() == {"kind": "rbf", "gamma": 0.5}
    assert HeuristicGradient(RBFSimilarity(0.5)).has_gradient is False


def test_median_gamma_one_rule_for_zero_distances_and_large_sets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    D = RBFSimilarity().sq_distances(X, X)[np.triu_indices(6, 1)]
    assert median_gamma(X) == pytest.approx(1 / np.median(D))
    # repeated rows add distance-0 pairs, left out: X plus two copies of X[0] gives the
    # median of D with the 5 distances from X[0] counted three times
    D0 = RBFSimilarity().sq_distances(X[:1], X[1:])[0]
    expected = 1 / np.median(np.concatenate([D, D0, D0]))
    assert median_gamma(np.vstack([X, X[:1], X[:1]])) == pytest.approx(expected)
    assert median_gamma(np.ones((4, 3))) == 1.0  # all rows coincide: any width, 1.0
    # given distances are used as given
    assert median_gamma(X, 4 * RBFSimilarity().sq_distances(X, X)) == pytest.approx(
        median_gamma(X) / 4)
    # above max_samples rows: a seeded subset, the same on every call
    big = rng.normal(size=(50, 3))
    sub = median_gamma(big, max_samples=20)
    assert sub == median_gamma(big, max_samples=20) and sub != median_gamma(big)
