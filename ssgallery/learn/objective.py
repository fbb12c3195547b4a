"""The objective of the super-sparse learner, its beta-step and its z-gradient (paper
Sect. III; docs/method.md).

Objective (Eq. 2 (eq:objective); Eq. 3 (eq:objective-matrix) in matrix form), with
sample weights u (the estimators normalise them to sum 1):

    Omega(beta, b, Z) = sum_i u_i (g(x_i) - y_i)^2 + lam * beta'beta,
    g(x) = sum_j beta_j s(x, z_j) + b,

plus, optionally, ``lam_sum * (sum_j beta_j)^2`` (`penalty`; 0 by default: the paper).

Functions here work on plain arrays: ``X`` (n, d), ``y`` (n,), ``u`` (n,), prototypes
``Z`` (m, d). Every similarity call goes through `CountingSimilarity`, so that
the solvers can be compared on the number of s(x, z) entries they compute. The solvers
that minimise the objective are in `ssgallery.learn.solvers`.
"""

import warnings

import numpy as np
import scipy.linalg


class CountingSimilarity:
    """Wrap a `ssgallery.learn.similarity.Similarity` and count evaluated entries.

    Gradients are always requested with the similarity matrix ``S`` passed in, so
    they cost no extra evaluation.
    """

    def __init__(self, similarity):
        self.similarity = similarity
        self.n_evals = 0
        self.has_gradient = getattr(similarity, "has_gradient", False)

    def __call__(self, X, Z):
        S = np.asarray(self.similarity(X, Z), dtype=float)
        self.n_evals += S.size
        return S

    def gradient(self, X, Z, S):
        return self.similarity.gradient(X, Z, S)

    def contract_gradient(self, X, Z, W, S):
        return self.similarity.contract_gradient(X, Z, W, S)


def solve_psd(M, rhs):
    """Solve M x = rhs for a symmetric positive semi-definite M, never inverting.

    Cholesky (only the upper triangle of M is read); least squares when M is singular
    or ill-conditioned (e.g. duplicate prototypes with lam = 0). Used for the
    (m+1)x(m+1) system of Eq. 4 (eq:beta) and for the baselines' beta = K_zz^-1 K_zx alpha.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(M, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning, ValueError):
        # singular or ill-conditioned (duplicate prototypes with lam = 0): least squares
        return scipy.linalg.lstsq(M, rhs)[0]


def beta_system(S, y, u, lam, lam_sum=0.0):
    """The (m+1)x(m+1) system of Eq. 4 (eq:beta): returns ``M``, right-hand side, ``A = [S, 1]``.
    ``lam_sum`` > 0 adds the `penalty` on (sum_j beta_j)^2 (lam_sum in every entry of
    the beta block)."""
    n, m = S.shape
    A = np.hstack([S, np.ones((n, 1))])
    UA = u[:, None] * A
    M = A.T @ UA
    M[np.arange(m), np.arange(m)] += lam  # ridge on beta only, bias unpenalised
    if lam_sum:
        M[:m, :m] += lam_sum
    return M, UA.T @ y, A


def penalty(beta, lam, lam_sum=0.0):
    """The penalty of Eq. 2 (eq:objective), lam beta'beta, plus lam_sum (sum_j beta_j)^2.

    The second term (not in the paper; 0 by default) pulls the weights towards the SVM
    teacher's own balance: its dual constraint sum_i alpha_i y_i = 0 makes its genuine
    and impostor weights equal in total, so a probe whose similarities to everyone are
    all lower or higher by one amount scores the same (its impostor terms act as a
    cohort normalisation); a distilled g(x) with sum_j beta_j = 0 has the same
    invariance (docs/benchmarks/ebgm_balance.md)."""
    total = float(np.sum(beta))
    return float(lam * beta @ beta + lam_sum * total * total)


def beta_step(S, y, u, lam, lam_sum=0.0):
    """Eq. 4 (eq:beta): optimal (beta, b) for fixed prototypes.

    Parameters
    ----------
    S : ndarray of shape (n, m)
        Similarities s(x_i, z_j).
    y, u : ndarray of shape (n,)
        Targets and sample weights.
    lam : float
        Ridge penalty on beta.
    lam_sum : float
        Penalty on (sum_j beta_j)^2 (`penalty`).

    Returns
    -------
    beta : ndarray of shape (m,)
    b : float
    """
    M, rhs, _ = beta_system(S, y, u, lam, lam_sum)
    theta = solve_psd(M, rhs)
    return theta[:-1], float(theta[-1])


def objective(S, y, u, beta, b, lam, lam_sum=0.0):
    """Eq. 2 (eq:objective): sum_i u_i (g(x_i) - y_i)^2 + lam beta'beta (+ lam_sum
    (sum_j beta_j)^2, `penalty`)."""
    r = S @ beta + b - y
    return float(u @ (r * r)) + penalty(beta, lam, lam_sum)


def objective_and_gradient(X, y, u, Z, similarity, lam, form="reduced", S=None,
                           lam_sum=0.0):
    """Omega*(Z) = min_{beta,b} Omega and its gradient with respect to every prototype.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
    Z : ndarray of shape (m, d)
    similarity : Similarity or CountingSimilarity
    lam : float
    form : {"reduced", "full"}
        "full": Eq. 5 (eq:gradient-z) with dbeta/dz_j, db/dz_j from Eq. 6
        (eq:final-gradient) (solves with M).
        "reduced": the envelope form 2 beta_j sum_i u_i (g_i - y_i) ds(x_i, z_j)/dz_j
        (the Eq. 6 (eq:final-gradient) terms vanish because the beta-step is exact).
    S : ndarray of shape (n, m), optional
        Precomputed similarity matrix.
    lam_sum : float
        Penalty on (sum_j beta_j)^2 (`penalty`).

    Returns
    -------
    omega : float
    grad : ndarray of shape (m, d)
    beta : ndarray of shape (m,)
    b : float
    """
    if S is None:
        S = similarity(X, Z)
    M, rhs, A = beta_system(S, y, u, lam, lam_sum)
    theta = solve_psd(M, rhs)
    beta, b = theta[:-1], float(theta[-1])
    r = S @ beta + b - y  # g - y
    omega = float(u @ (r * r)) + penalty(beta, lam, lam_sum)
    m, d = Z.shape
    if form == "reduced":
        W = (2.0 * u * r)[:, None] * beta[None, :]
        grad = similarity.contract_gradient(X, Z, W, S)
    elif form == "full":
        G = similarity.gradient(X, Z, S)  # (n, m, d): ds(x_i, z_j)/dz_j
        UG = u[:, None, None] * G
        rUG = np.einsum("i,ijd->jd", r, UG)  # (m, d): (g - y)' U dS_j/dz_j
        # Eq. 6 (eq:final-gradient) right-hand sides for all j at once:
        # beta_j [S'; 1'] U dS_j + [V'; 0'] U dS_j
        R = np.einsum("ik,ijd->kjd", A, UG) * beta[None, :, None]  # (m+1, m, d)
        R[np.arange(m), np.arange(m), :] += rUG
        dtheta = -solve_psd(M, R.reshape(m + 1, m * d)).reshape(m + 1, m, d)
        dbeta, db = dtheta[:-1], dtheta[-1]
        # Eq. 5 (eq:gradient-z): 2 (g-y)' U (beta_j dS_j + S dbeta + 1 db)
        # + 2 (lam beta + lam_sum (1'beta) 1)' dbeta
        Ur = u * r
        grad = 2.0 * (beta[:, None] * rUG
                      + np.einsum("k,kjd->jd", S.T @ Ur, dbeta)
                      + Ur.sum() * db
                      + lam * np.einsum("k,kjd->jd", beta, dbeta)
                      + lam_sum * beta.sum() * dbeta.sum(axis=0))
    else:
        raise ValueError(f"form must be 'reduced' or 'full', got {form!r}")
    return omega, grad, beta, b


def repulsion_gradient(Z, similarity, S_zz=None):
    """d(sum_{k != j} s(z_k, z_j))/dz_j for every j, shape (m, d) (Algorithm 1 penalty)."""
    m = len(Z)
    if S_zz is None:
        S_zz = similarity(Z, Z)
    W = np.ones((m, m)) - np.eye(m)
    return similarity.contract_gradient(Z, Z, W, S_zz)
