"""Eqs. 4 (eq:beta) to 6 (eq:final-gradient): the beta-step and both z-step gradient
forms, against references."""

import numpy as np
import pytest
from helpers import learner_problem

from ssgallery.learn.similarity import HeuristicGradient, RBFSimilarity
from ssgallery.learn.solvers import (
    CountingSimilarity,
    beta_step,
    objective,
    objective_and_gradient,
    repulsion_gradient,
)


def _omega_star(X, y, u, Z, sim, lam):
    S = sim(X, Z)
    beta, b = beta_step(S, y, u, lam)
    return objective(S, y, u, beta, b, lam)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("m", [1, 3, 10])
@pytest.mark.parametrize("lam", [1e-4, 1e-1])
def test_reduced_full_and_finite_differences_agree(seed, m, lam):
    X, y, u, Z = learner_problem(seed, m=m)
    sim = RBFSimilarity(gamma=0.25)
    om_r, g_red, beta_r, _ = objective_and_gradient(X, y, u, Z, sim, lam, form="reduced")
    om_f, g_full, beta_f, _ = objective_and_gradient(X, y, u, Z, sim, lam, form="full")
    assert om_r == pytest.approx(om_f, rel=1e-12)
    np.testing.assert_allclose(beta_r, beta_f)
    assert _rel(g_red, g_full) <= 1e-6
    # central finite differences of Omega*(z) = min_{beta,b} Omega
    h = 1e-5
    g_fd = np.zeros_like(Z)
    for j in range(m):
        for k in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            g_fd[j, k] = (_omega_star(X, y, u, Zp, sim, lam)
                          - _omega_star(X, y, u, Zm, sim, lam)) / (2 * h)
    assert _rel(g_red, g_fd) <= 1e-5
    assert _rel(g_full, g_fd) <= 1e-5


def test_full_form_extra_terms_vanish_only_at_the_beta_optimum():
    """Eq. 5 (eq:gradient-z) in full = the reduced form + 2 c' dtheta/dz_j, with
    c = dOmega/dtheta for theta = (beta, b) and dtheta/dz_j from Eq. 6 (eq:final-gradient).
    c = 0 at the beta-step, so the forms agree there for any gradient model (the
    heuristic one too); away from it c != 0 and theta moves with z: the term is not 0."""
    X, y, u, Z = learner_problem(3, m=3)
    sim, lam = RBFSimilarity(gamma=0.25), 1e-3
    for s in (sim, HeuristicGradient(sim)):
        _, g_full, _, _ = objective_and_gradient(X, y, u, Z, s, lam, form="full")
        _, g_red, _, _ = objective_and_gradient(X, y, u, Z, s, lam, form="reduced")
        assert _rel(g_full, g_red) <= 1e-8

    def theta_star(Z):
        return np.append(*beta_step(sim(X, Z), y, u, lam))

    A = np.hstack([sim(X, Z), np.ones((len(X), 1))])

    def c(theta):  # dOmega/dtheta
        grad = 2 * A.T @ (u * (A @ theta - y))
        grad[:-1] += 2 * lam * theta[:-1]
        return grad

    h, Zp, Zm = 1e-6, Z.copy(), Z.copy()
    Zp[0, 0] += h
    Zm[0, 0] -= h
    dtheta = (theta_star(Zp) - theta_star(Zm)) / (2 * h)  # theta moves with z_0
    assert np.linalg.norm(dtheta) > 1e-2
    assert np.linalg.norm(c(theta_star(Z))) < 1e-10
    away = theta_star(Z) + 0.1
    assert abs(c(away) @ dtheta) > 1e-3
    with pytest.raises(ValueError, match="form"):
        objective_and_gradient(X, y, u, Z, sim, 1e-3, form="other")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [0.0, 1e-6, 1.0])
def test_beta_step_matches_lstsq_on_augmented_system(seed, lam):
    X, y, u, Z = learner_problem(seed, m=5)
    S = RBFSimilarity(gamma=0.25)(X, Z)
    beta, b = beta_step(S, y, u, lam)
    # Eq. 2 (eq:objective) as one least-squares problem: rows sqrt(u_i) [S_i, 1], plus
    # sqrt(lam) I rows
    n, m = S.shape
    A = np.hstack([S, np.ones((n, 1))]) * np.sqrt(u)[:, None]
    R = np.hstack([np.sqrt(lam) * np.eye(m), np.zeros((m, 1))])
    theta = np.linalg.lstsq(np.vstack([A, R]), np.concatenate([np.sqrt(u) * y, np.zeros(m)]),
                            rcond=None)[0]
    np.testing.assert_allclose(beta, theta[:-1], rtol=1e-6, atol=1e-8)
    assert b == pytest.approx(theta[-1], rel=1e-6, abs=1e-8)


def test_beta_step_survives_duplicate_prototypes_without_ridge():
    X, y, u, Z = learner_problem(0, m=2)
    Z[1] = Z[0]
    S = RBFSimilarity(gamma=0.25)(X, Z)
    beta, b = beta_step(S, y, u, 0.0)
    assert np.all(np.isfinite(beta)) and np.isfinite(b)
    # the fit equals the one with a single prototype
    beta1, b1 = beta_step(S[:, :1], y, u, 0.0)
    assert objective(S, y, u, beta, b, 0.0) == pytest.approx(
        objective(S[:, :1], y, u, beta1, b1, 0.0), rel=1e-8)


def test_heuristic_gradient_is_eq9():
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(6, 3)), rng.normal(size=(2, 3))
    base = RBFSimilarity(gamma=0.5)
    h = HeuristicGradient(lambda A, B: base(A, B))
    G = h.gradient(X, Z)
    S = base(X, Z)
    for i in range(6):
        for j in range(2):
            # Eq. 7 (eq:similarity-grad)
            np.testing.assert_allclose(G[i, j], S[i, j] * (X[i] - Z[j]))
    W = rng.normal(size=(6, 2))
    np.testing.assert_allclose(h.contract_gradient(X, Z, W), np.einsum("ij,ijd->jd", W, G))
    # for the RBF, the analytic gradient is 2 gamma times the heuristic one
    np.testing.assert_allclose(base.gradient(X, Z), 2 * 0.5 * G)


def test_repulsion_gradient_points_towards_other_prototypes():
    Z = np.array([[0.0, 0.0], [1.0, 0.0]])
    sim = RBFSimilarity(gamma=1.0)
    R = repulsion_gradient(Z, sim)
    s = np.exp(-1.0)
    np.testing.assert_allclose(R, [[2 * s, 0.0], [-2 * s, 0.0]])


def test_counting_similarity_counts_entries():
    sim = CountingSimilarity(RBFSimilarity(1.0))
    sim(np.zeros((7, 2)), np.zeros((3, 2)))
    sim(np.zeros((3, 2)), np.zeros((3, 2)))
    assert sim.n_evals == 7 * 3 + 9
