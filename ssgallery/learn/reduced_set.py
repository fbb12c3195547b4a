"""Reduced-set baselines at equal m (the paper's comparisons, Sect. IV): `SVMSel` and
`SVMRed` approximate the teacher SVM's hyperplane normal by m points, then give them the
optimal coefficients beta = K_zz^-1 K_zx alpha (`optimal_coefficients`).

`ssgallery.learn.baselines` describes every baseline and re-exports these; the shared
fit plumbing (`ReducedModel`) is here because the prototype-selection baselines there
build on it.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

from ssgallery.errors import InputError, SsgalleryError
from ssgallery.learn.base import BinaryDecisionMixin, binary_classes
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.learn.solvers import solve_psd


def optimal_coefficients(sim, Z, SV, alpha):
    """beta = K_zz^-1 K_zx alpha: projection of sum_i alpha_i phi(sv_i) on span phi(Z)
    (K_zz symmetrised: a black-box similarity need not be symmetric)."""
    K = sim(Z, Z)
    return solve_psd(0.5 * (K + K.T), sim(Z, SV) @ alpha)


class ReducedModel(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """Base of the baselines that keep m points and their coefficients: the shared fit
    plumbing (``_setup``: checks, classes, the teacher SVM; ``_finish``: the fitted
    attributes) and the m-match decision function (`SVMSel`, `SVMRed`, and the
    prototype-selection baselines of `ssgallery.learn.baselines`).

    Attributes
    ----------
    prototypes_ : ndarray, shape (m, d)
    beta_ : ndarray, shape (m,)
    intercept_ : float
    n_matches_ : int
        m, the matches per decision.
    teacher_ : SimilaritySVM
        The teacher SVM the baseline approximates.
    """

    def _setup(self, X, y, teacher):
        X, y = check_X_y(X, y, dtype=float)
        self.n_features_in_ = X.shape[1]
        self.classes_, yb = binary_classes(y, type(self).__name__)
        yb = yb.astype(int)
        m = int(self.n_prototypes)
        if m < 1:
            raise ValueError(f"n_prototypes must be >= 1, got {self.n_prototypes}")
        if teacher is None:
            from ssgallery.learn.teacher import SimilaritySVM

            teacher = SimilaritySVM(random_state=self.random_state).fit(X, yb)
        check_is_fitted(teacher, "dual_coef_")
        self.teacher_ = teacher
        self.similarity_ = teacher.similarity_
        return X, yb, m

    def _finish(self, prototypes, beta, intercept):
        self.prototypes_ = np.asarray(prototypes, dtype=float)
        self.beta_ = np.asarray(beta, dtype=float).ravel()
        self.intercept_ = float(intercept)
        self.n_matches_ = len(self.prototypes_)
        return self

    def decision_function(self, X):
        """g(x) = sum_j beta_j s(x, z_j) + b, shape (n,); m matches per row."""
        check_is_fitted(self, "prototypes_")
        X = check_array(X, dtype=float)
        return self.similarity_(X, self.prototypes_) @ self.beta_ + self.intercept_


def _pad_with_training(X, teacher, chosen, m):
    """Indices ``chosen`` (into X) completed to m distinct rows by the training samples
    nearest to the teacher's boundary (m > #SVs only)."""
    if m > len(X):
        raise InputError(f"n_prototypes={m} exceeds the {len(X)} training samples")
    if m <= len(chosen):  # e.g. every training sample is a support vector
        return np.asarray(chosen[:m], dtype=int)
    rest = np.setdiff1d(np.arange(len(X)), chosen)
    order = rest[np.argsort(np.abs(teacher.decision_function(X[rest])), kind="stable")]
    return np.concatenate([chosen, order[: m - len(chosen)]]).astype(int)


class SVMSel(ReducedModel):
    """SVM-sel: drop support vectors one at a time, kernel-PCA-driven (Schölkopf et al. 1999).

    With K = V diag(lam) V^T over the kept SVs, eigenvector v_k gives
    phi(x_j) = -sum_{i != j} (v_ik / v_jk) phi(x_i) + (residual of norm^2 lam_k / v_jk^2),
    so removing x_j and moving its coefficient c_j onto the others costs
    ||delta Psi||^2 = (c_j / v_jk)^2 |lam_k|. Each step removes the (j, k) of least cost
    and updates c_i -= c_j v_ik / v_jk; at m SVs the coefficients are re-optimised
    (beta = K_zz^-1 K_zx alpha). |lam_k| because a non-PSD similarity has lam_k < 0.

    Parameters
    ----------
    n_prototypes : int
    random_state : int, default=0
        Seed of the internally fitted teacher.
    """

    def __init__(self, n_prototypes=2, random_state=0):
        self.n_prototypes = n_prototypes
        self.random_state = random_state

    def fit(self, X, y, teacher=None):
        X, _yb, m = self._setup(X, y, teacher)
        t = self.teacher_
        SV, alpha = t.support_vectors_, t.dual_coef_
        if m >= len(SV):  # nothing to drop: all SVs (+ padding), optimal coefficients
            idx = _pad_with_training(X, t, np.asarray(t.support_), m)
            Z = X[idx]
            return self._finish(Z, optimal_coefficients(self.similarity_, Z, SV, alpha),
                                t.intercept_)
        K = self.similarity_(SV, SV)
        K = 0.5 * (K + K.T)
        keep = np.arange(len(SV))
        c = alpha.astype(float).copy()
        while len(keep) > m:
            lam, V = np.linalg.eigh(K[np.ix_(keep, keep)])
            with np.errstate(divide="ignore", invalid="ignore"):
                cost = (c[:, None] / V) ** 2 * np.abs(lam)[None, :]
            cost[~np.isfinite(cost)] = np.inf
            j, k = np.unravel_index(np.argmin(cost), cost.shape)
            c = c - c[j] * V[:, k] / V[j, k]
            c = np.delete(c, j)
            keep = np.delete(keep, j)
        Z = SV[keep]
        self.kept_support_ = keep
        return self._finish(Z, optimal_coefficients(self.similarity_, Z, SV, alpha), t.intercept_)


class SVMRed(ReducedModel):
    """SVM-red: greedy RBF pre-images by the fixed-point iteration (Burges 1996;
    Schölkopf et al. 1999), then optimal coefficients.

    With the residual Psi = sum_i c_i phi(p_i) (the SVs with alpha, the pre-images so far
    with -beta), the next z maximises (Psi . phi(z))^2 = (sum_i c_i k(p_i, z))^2 (k(z, z)
    = 1 for RBF); its stationary points satisfy
    z = sum_i c_i k(p_i, z) p_i / sum_i c_i k(p_i, z), iterated from several starts. After
    each new z all coefficients are re-optimised: beta = K_zz^-1 K_zx alpha (a solve).

    Parameters
    ----------
    n_prototypes : int
    n_starts : int, default=5
        Starts per pre-image: the support vectors where the residual |Psi . phi(sv)| is
        largest.
    max_iter : int, default=200
    tol : float, default=1e-10
        Stop when ||z_new - z||^2 <= tol (1 + ||z||^2).
    random_state : int, default=0
    """

    def __init__(self, n_prototypes=2, n_starts=5, max_iter=200, tol=1e-10, random_state=0):
        self.n_prototypes = n_prototypes
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _preimage(self, P, c, gamma, starts):
        best_z, best_obj = None, -np.inf
        # start where the residual is largest: |Psi . phi(x)| over the candidate starts
        r = np.abs(np.exp(-gamma * RBFSimilarity(1.0).sq_distances(starts, P)) @ c)
        for s in np.argsort(-r, kind="stable")[: self.n_starts]:
            z = starts[s].copy()
            for _ in range(self.max_iter):
                w = c * np.exp(-gamma * ((P - z) ** 2).sum(1))
                den = w.sum()
                if abs(den) < 1e-300:
                    break
                z_new = w @ P / den  # fixed point of d(Psi . phi(z))/dz = 0
                done = ((z_new - z) ** 2).sum() <= self.tol * (1 + (z * z).sum())
                z = z_new
                if done:
                    break
            obj = float(c @ np.exp(-gamma * ((P - z) ** 2).sum(1))) ** 2
            if np.all(np.isfinite(z)) and obj > best_obj:
                best_z, best_obj = z, obj
        return best_z

    def fit(self, X, y, teacher=None):
        X, _yb, m = self._setup(X, y, teacher)
        sim = self.similarity_
        if not isinstance(sim, RBFSimilarity):
            raise SsgalleryError(
                f"svm-red needs an RBF similarity (fixed-point pre-images), got {sim!r}")
        t = self.teacher_
        SV, alpha = t.support_vectors_, t.dual_coef_
        Z = np.empty((0, SV.shape[1]))
        beta = np.empty(0)
        for _ in range(m):
            P = np.vstack([SV, Z])
            c = np.concatenate([alpha, -beta])
            z = self._preimage(P, c, sim.gamma, SV)
            if z is None:  # degenerate residual: fall back to the largest-|alpha| SV unused
                z = SV[np.argsort(-np.abs(alpha))[len(Z) % len(SV)]]
            Z = np.vstack([Z, z])
            beta = optimal_coefficients(sim, Z, SV, alpha)  # beta = K_zz^-1 K_zx alpha
        return self._finish(Z, beta, t.intercept_)
