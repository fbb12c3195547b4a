"""Baselines at equal m, the paper's comparisons (Sect. IV).

Every estimator here has ``fit(X, y, teacher=None)`` with y in {-1, +1} (``teacher``: a
fitted `ssgallery.learn.teacher.SimilaritySVM`, fitted on (X, y) when None) and
exposes ``prototypes_`` (exactly m rows), ``beta_``, ``intercept_``, ``n_matches_`` (= m)
and ``decision_function(X) = s(X, prototypes_) @ beta_ + intercept_``.

- `SVMSel`: reduced-set *selection* (Schölkopf et al. 1999, "Input space versus
  feature space in kernel-based methods", Sect. "reduced set selection"): support vectors
  are removed one at a time, each time the one whose feature-space image is best
  expressed by the others through a kernel-PCA eigenvector; then the kept SVs get the
  optimal coefficients beta = K_zz^-1 K_zx alpha.
- `SVMRed`: reduced-set *construction* (Burges 1996; Schölkopf et al. 1999): greedy
  RBF pre-images by the fixed-point iteration, each followed by the optimal
  coefficients over all pre-images so far (solve, never invert). RBF only.
- `PrototypeSelector`: PS-R (random), PS-B (border), PS-S (spanning), PS-KM
  (k-medians) as in Riesen, Neuhaus & Bunke 2007, then ridge or LASSO on
  s(x, prototypes) against the teacher's decision values (the paper's footnote) with
  class-balanced sample weights.
- `NystromLandmarks`: k-means centres as landmarks + the same ridge.
- `PrototypeSelectionRegressor`: the same four selections for regression (paper
  Table I): ridge or LASSO on s(x, prototypes) against the targets themselves.

SVM-sel and SVM-red keep the teacher's intercept (the reduced-set methods approximate
the hyperplane normal only); the threshold is client-specific anyway.
"""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.cluster import KMeans
from sklearn.linear_model import Lasso, LassoCV, Ridge, RidgeCV
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted, validate_data

from ssgallery.errors import InputError
from ssgallery.learn.reduced_set import (  # noqa: F401  (public here too)
    ReducedModel,
    SVMRed,
    SVMSel,
    optimal_coefficients,
)
from ssgallery.learn.regression import ALPHAS
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.learn.supersparse import balanced_weights, resolve_similarity


def dissimilarity(sim, X):
    """(n, n) dissimilarities used to select prototypes: Euclidean distance for an RBF
    similarity (a monotone function of it), else the similarity-induced distance
    sqrt(s_ii + s_jj - 2 s_ij) on the symmetrised matrix (clipped at 0 if non-PSD)."""
    if isinstance(sim, RBFSimilarity):
        return np.sqrt(sim.sq_distances(X, X))
    S = sim(X, X)
    S = 0.5 * (S + S.T)
    d = np.diag(S)
    return np.sqrt(np.maximum(d[:, None] + d[None, :] - 2.0 * S, 0.0))


SELECTIONS = ("random", "border", "spanning", "kmedians")


def select_prototypes(D, m, selection, X=None, random_state=0):
    """Indices of m training samples (Riesen, Neuhaus & Bunke 2007).

    ``D`` (n, n) dissimilarities. random: uniform without replacement. border: the m
    samples with the largest sum of distances to the others (the set's frontier; it
    uses no labels, so it means the same for classification and regression).
    spanning: the set median, then repeatedly the sample farthest from those chosen.
    kmedians: k-means on ``X`` (n, d), then each cluster's set median (the member with
    the least sum of distances to the other members).
    """
    n = len(D)
    if m > n:
        raise InputError(f"n_prototypes={m} exceeds the {n} training samples")
    rng = np.random.default_rng(random_state)
    if selection == "random":
        return np.sort(rng.choice(n, m, replace=False))
    if selection == "border":
        return np.argsort(-D.sum(1), kind="stable")[:m]
    if selection == "spanning":
        chosen = [int(np.argmin(D.sum(1)))]
        while len(chosen) < m:
            far = D[:, chosen].min(1)
            far[chosen] = -np.inf
            chosen.append(int(np.argmax(far)))
        return np.array(chosen)
    if selection == "kmedians":
        lab = KMeans(m, n_init=10, random_state=random_state).fit(X).labels_
        chosen = []
        for k in range(m):
            members = np.flatnonzero(lab == k)
            if len(members) == 0:  # empty cluster (duplicate rows): any unused sample
                members = np.setdiff1d(np.arange(n), chosen)[:1]
            chosen.append(int(members[np.argmin(D[np.ix_(members, members)].sum(1))]))
        return np.array(chosen)
    raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")


def _regressor(regressor, alpha):
    """Ridge or LASSO; ``alpha="cv"``: chosen by cross-validation (ridge: efficient
    leave-one-out over ALPHAS; LASSO: 5-fold over its path)."""
    if alpha == "cv":
        if regressor == "ridge":
            return RidgeCV(alphas=ALPHAS)
        if regressor == "lasso":
            return LassoCV(alphas=30, cv=KFold(5, shuffle=True, random_state=0),
                           max_iter=10000, precompute=True)
    if regressor == "ridge":
        return Ridge(alpha=1e-4 if alpha is None else alpha)
    if regressor == "lasso":
        return Lasso(alpha=1e-3 if alpha is None else alpha, max_iter=10000)
    raise ValueError(f"regressor must be 'ridge' or 'lasso', got {regressor!r}")


class _TargetRegression(ReducedModel):
    def _regress(self, X, Z):
        """Fit beta, b on s(X, Z) against the teacher's decision values (paper footnote)."""
        targets = self.teacher_.decision_function(X)
        u = balanced_weights(self._yb)
        reg = _regressor(self.regressor, self.alpha).fit(self.similarity_(X, Z), targets,
                                                         sample_weight=u)
        return self._finish(Z, reg.coef_, reg.intercept_)


class PrototypeSelector(_TargetRegression):
    """PS-R / PS-B / PS-S / PS-KM prototype selection + ridge or LASSO.

    Parameters
    ----------
    n_prototypes : int
    selection : {"random", "border", "spanning", "kmedians"}, default="kmedians"
    regressor : {"ridge", "lasso"}, default="ridge"
        Fitted on s(x, prototypes) against the teacher's decision values with class-balanced
        sample weights (sum 1). Ridge minimises sum_i u_i r_i^2 + alpha ||beta||^2 (the
        learner's Eq. 2 (eq:objective) with the prototypes fixed); LASSO is scikit-learn's.
    alpha : float, optional
        Regularisation; default 1e-4 (ridge, = the learner's default lambda) or 1e-3 (LASSO).
    random_state : int, default=0
        Seed of random selection, k-means and the internally fitted teacher.

    Attributes
    ----------
    prototype_indices_ : ndarray of shape (m,)
        Rows of the training X used as prototypes.
    """

    def __init__(self, n_prototypes=2, selection="kmedians", regressor="ridge", alpha=None,
                 random_state=0):
        self.n_prototypes = n_prototypes
        self.selection = selection
        self.regressor = regressor
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X, y, teacher=None):
        X, self._yb, m = self._setup(X, y, teacher)
        D = dissimilarity(self.similarity_, X)
        self.prototype_indices_ = select_prototypes(D, m, self.selection, X, self.random_state)
        return self._regress(X, X[self.prototype_indices_])


class NystromLandmarks(_TargetRegression):
    """Nyström-style landmarks: m k-means centres + ridge on s(x, landmarks).

    Parameters
    ----------
    n_prototypes : int
    alpha : float, default=1e-4
    random_state : int, default=0
    """

    regressor = "ridge"

    def __init__(self, n_prototypes=2, alpha=1e-4, random_state=0):
        self.n_prototypes = n_prototypes
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X, y, teacher=None):
        X, self._yb, m = self._setup(X, y, teacher)
        if m > len(X):
            raise InputError(f"n_prototypes={m} exceeds the {len(X)} training samples")
        km = KMeans(m, n_init=10, random_state=self.random_state).fit(X)
        return self._regress(X, km.cluster_centers_)


class PrototypeSelectionRegressor(RegressorMixin, BaseEstimator):
    """PS-R / PS-B / PS-S / PS-KM + ridge or LASSO for regression (paper Table I).

    Selects m training samples with `select_prototypes` on the similarity-induced
    dissimilarities, then fits ridge or LASSO on s(x, prototypes) against y.

    Parameters
    ----------
    n_prototypes : int, default=5
    selection : {"random", "border", "spanning", "kmedians"}, default="kmedians"
    regressor : {"ridge", "lasso"}, default="ridge"
    alpha : "cv" or float, default="cv"
        Regularisation; "cv" chooses it by cross-validation (as for the full models).
    similarity : "rbf" or Similarity, default="rbf"
    gamma : "paper", "median" or float, default="median"
    random_state : int, default=0
        Seed of the random selection and of k-means.

    Attributes
    ----------
    prototype_indices_ : ndarray of shape (m,)
    prototypes_ : ndarray of shape (m, d)
    beta_ : ndarray of shape (m,)
        LASSO may zero some; prototypes are counted all the same (they were selected).
    intercept_ : float
    similarity_ : Similarity
    n_features_in_ : int
    """

    def __init__(self, n_prototypes=5, selection="kmedians", regressor="ridge", alpha="cv",
                 similarity="rbf", gamma="median", random_state=0):
        self.n_prototypes = n_prototypes
        self.selection = selection
        self.regressor = regressor
        self.alpha = alpha
        self.similarity = similarity
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X, y):
        """Select the prototypes and fit beta, b on (X (n, d), y (n,)); returns self."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        self.similarity_ = resolve_similarity(self.similarity, self.gamma, X)
        D = dissimilarity(self.similarity_, X)
        idx = select_prototypes(D, int(self.n_prototypes), self.selection, X,
                                self.random_state)
        self.prototype_indices_ = idx
        self.prototypes_ = X[idx]
        reg = _regressor(self.regressor, self.alpha).fit(self.similarity_(X, X[idx]), y)
        self.beta_ = np.asarray(reg.coef_, dtype=float)
        self.intercept_ = float(reg.intercept_)
        return self

    def predict(self, X):
        """g(x) = s(x, prototypes_) @ beta_ + intercept_, shape (n,); m matches per row."""
        check_is_fitted(self, "prototypes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.similarity_(X, self.prototypes_) @ self.beta_ + self.intercept_
