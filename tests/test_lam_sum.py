"""lam_sum: a penalty lam_sum (sum_j beta_j)^2 in Omega (Eq. 2 (eq:objective) plus the
balance an SVM teacher has, sum_i alpha_i y_i = 0; docs/benchmarks/ebgm_balance.md).
Eq. 4 (eq:beta) with it, both gradient forms of Eqs. 5-6 against finite differences,
the swaps' Omega, and the option from CompressOptions to the fitted model."""

import numpy as np
import pytest
import scipy.optimize
from helpers import learner_problem

from ssgallery.app.client_fit import train_client
from ssgallery.app.options import CompressOptions
from ssgallery.learn.initial import unmoved_omega
from ssgallery.learn.objective import beta_step, objective, objective_and_gradient, penalty
from ssgallery.learn.similarity import CallableSimilarity, HeuristicGradient, RBFSimilarity
from ssgallery.learn.supersparse import SuperSparseDistiller


def test_the_beta_step_minimises_omega_with_the_penalty():
    X, y, u, Z = learner_problem(0)
    S, lam, lam_sum = RBFSimilarity(gamma=0.25)(X, Z), 1e-3, 0.5
    beta, b = beta_step(S, y, u, lam, lam_sum)
    assert objective(S, y, u, beta, b, lam, lam_sum) == pytest.approx(
        objective(S, y, u, beta, b, lam) + lam_sum * beta.sum() ** 2, rel=1e-12)
    found = scipy.optimize.minimize(
        lambda th: objective(S, y, u, th[:-1], th[-1], lam, lam_sum),
        np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(np.append(beta, b), found, atol=1e-5)
    plain, _ = beta_step(S, y, u, lam)
    assert abs(beta.sum()) < abs(plain.sum())
    big, _ = beta_step(S, y, u, lam, 1e6)  # the penalty's limit: weights summing to 0
    assert abs(big.sum()) < 1e-4 * np.abs(big).sum()
    assert penalty(beta, lam, lam_sum) == pytest.approx(lam * beta @ beta
                                                        + lam_sum * beta.sum() ** 2)


@pytest.mark.parametrize("seed", [0, 1])
def test_both_gradient_forms_match_finite_differences_with_the_penalty(seed):
    X, y, u, Z = learner_problem(seed)
    sim, lam, lam_sum = RBFSimilarity(gamma=0.25), 1e-3, 0.3

    def omega_star(Z):
        S = sim(X, Z)
        beta, b = beta_step(S, y, u, lam, lam_sum)
        return objective(S, y, u, beta, b, lam, lam_sum)

    om, g_red, _, _ = objective_and_gradient(X, y, u, Z, sim, lam, lam_sum=lam_sum)
    om_f, g_full, _, _ = objective_and_gradient(X, y, u, Z, sim, lam, form="full",
                                                lam_sum=lam_sum)
    assert om == pytest.approx(omega_star(Z), rel=1e-12)
    assert om_f == pytest.approx(om, rel=1e-12)
    h, g_fd = 1e-5, np.zeros_like(Z)
    for j in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            g_fd[j, k] = (omega_star(Zp) - omega_star(Zm)) / (2 * h)
    for g in (g_red, g_full):
        assert np.linalg.norm(g - g_fd) <= 1e-5 * np.linalg.norm(g_fd)


def test_the_swaps_omega_counts_the_penalty():
    X, y, u, Z = learner_problem(2)
    S, lam = RBFSimilarity(gamma=0.25)(X, Z), 1e-3
    beta, b = beta_step(S, y, u, lam, 0.4)
    assert unmoved_omega(S, y, u, lam, 0.4) == objective(S, y, u, beta, b, lam, 0.4)
    assert unmoved_omega(S, y, u, lam, 0.4) > unmoved_omega(S, y, u, lam)


def _faces(seed=0, n=36):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[: n // 3] += 1.5
    return X, np.where(np.arange(n) < n // 3, 1, -1)


def test_the_distiller_scales_lam_sum_as_lam_and_balances_its_weights():
    X, y = _faces()
    plain = SuperSparseDistiller(n_prototypes=3, random_state=0, max_iter=5).fit(X, y)
    zero = SuperSparseDistiller(n_prototypes=3, random_state=0, max_iter=5,
                                lam_sum=0.0).fit(X, y)
    np.testing.assert_array_equal(zero.beta_, plain.beta_)  # 0: the paper's Eq. 2
    bal = SuperSparseDistiller(n_prototypes=3, random_state=0, max_iter=5,
                               lam_sum=10.0).fit(X, y)
    reg = bal.regressor_
    assert reg.lam_sum_ == pytest.approx(10.0 * reg.lam_ / bal.lam)
    assert abs(bal.beta_.sum()) / np.abs(bal.beta_).sum() < \
        abs(plain.beta_.sum()) / np.abs(plain.beta_).sum()


def test_compress_options_carry_lam_sum_to_the_black_box_model():
    """A black box's default training (genuine start, swaps, no move) with lam_sum: the
    model the client gets is balanced, and the provenance and digest name the option
    only when it is not 0."""
    X, y = _faces(1)
    rbf = RBFSimilarity(gamma=0.2)
    box = HeuristicGradient(CallableSimilarity(rbf, name="box"))
    fits = {ls: train_client(X, y, box, CompressOptions(m=4, cv_folds=0, lam_sum=ls))
            for ls in (0.0, 5.0)}
    assert fits[5.0].options.lam_sum == 5.0
    assert fits[5.0].distiller.regressor_.lam_sum_ > 0
    assert fits[0.0].distiller.regressor_.lam_sum_ == 0.0
    imbalance = {ls: abs(f.distiller.beta_.sum()) / np.abs(f.distiller.beta_).sum()
                 for ls, f in fits.items()}
    assert imbalance[5.0] < imbalance[0.0]
    assert "lam_sum" not in fits[0.0].options.provenance()
    assert fits[5.0].options.provenance()["lam_sum"] == 5.0
    assert "lam_sum" not in fits[0.0].options.digest_dict()
