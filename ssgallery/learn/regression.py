"""Regression in similarity spaces (paper Sect. IV-B, Table I; docs page "Super-sparse
regression", docs/regression.md).

- `SimilarityRidge`, `SimilarityLasso`: ridge / LASSO on the full
  similarity representation s(x, X_train) (one feature per training sample), the
  regularisation chosen by cross-validation. They are the *teachers*: every training
  sample with a non-zero coefficient is a prototype (ridge: all of them; LASSO: the
  support of its coefficients).
- `SuperSparseRegressionDistiller`: SRidge / SLASSO. The teacher's predictions on
  the training points are the targets of Eq. 2 (as the SVM's decision values are for
  verification, the paper's footnote), with uniform sample weights; or, with
  ``teacher="labels"``, the labels themselves.

Regression choices that differ from the verification distiller (measured, see
docs/regression.md): prototypes start at target-quantile-stratified medoids
(``init="quantile"``; the class-aware init splits targets by sign, which means nothing
for a continuous target), the weights are uniform, and ``lam`` is in units of the
targets' variance (the learner standardises them, ``normalize_y=True``), so one value
suits ages in years and lighting gradients of a few hundredths alike.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.linear_model import LassoCV, RidgeCV
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ssgallery.learn.similarity import Similarity
from ssgallery.learn.supersparse import LEARNER_CONSTRAINTS, DistillerMixin, resolve_similarity

ALPHAS = tuple(10.0 ** np.arange(-6, 3))  # ridge grid (features are similarities in [0, 1])

# the similarity options of the teachers, as the learner's
SIMILARITY_CONSTRAINTS = {k: LEARNER_CONSTRAINTS[k] for k in ("similarity", "gamma")}


class _SimilarityLinear(RegressorMixin, BaseEstimator):
    """Shared plumbing: S(X, X_train) features, prototypes = training rows in use."""

    def _features(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        if len(X) < 3:
            raise ValueError(f"{type(self).__name__} needs at least 3 samples, "
                             f"got n_samples={len(X)}")
        self.similarity_ = resolve_similarity(self.similarity, self.gamma, X)
        return X, y, self.similarity_(X, X)

    def _finish(self, X, coef, intercept, keep):
        """Keep the training rows ``keep`` (boolean, (n,)) as prototypes."""
        self.prototypes_ = X[keep]
        self.beta_ = np.asarray(coef, dtype=float)[keep]
        self.intercept_ = float(intercept)
        self.n_prototypes_ = int(keep.sum())
        return self

    def predict(self, X):
        """g(x) = s(x, prototypes_) @ beta_ + intercept_, shape (n,); n_prototypes_
        matches per row."""
        check_is_fitted(self, "prototypes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self.n_prototypes_ == 0:
            return np.full(len(X), self.intercept_)
        return self.similarity_(X, self.prototypes_) @ self.beta_ + self.intercept_


class SimilarityRidge(_SimilarityLinear):
    """Ridge regression on the full similarity representation s(x, X_train).

    Parameters
    ----------
    similarity : "rbf" or Similarity, default="rbf"
    gamma : "paper", "median" or float, default="median"
        RBF width (see `ssgallery.learn.initial.resolve_similarity`).
    alphas : sequence of float, default=1e-6 ... 1e2
        Ridge penalties tried; the one with the least leave-one-out squared error
        (efficient generalised CV, ``cv=None``) or ``cv``-fold error is kept.
    cv : None, int or CV splitter, default=None

    Attributes
    ----------
    alpha_ : float
        The chosen penalty.
    prototypes_ : ndarray of shape (n, d)
        All training samples.
    beta_ : ndarray of shape (n,)
    intercept_ : float
    n_prototypes_ : int
        n, the number of matches per prediction.
    similarity_ : Similarity
    n_features_in_ : int
    """

    _parameter_constraints: ClassVar[dict] = {
        **SIMILARITY_CONSTRAINTS,
        "alphas": ["array-like", Interval(Real, 0, None, closed="neither")],
        "cv": ["cv_object"],
    }

    def __init__(self, similarity="rbf", gamma="median", alphas=ALPHAS, cv=None):
        self.similarity = similarity
        self.gamma = gamma
        self.alphas = alphas
        self.cv = cv

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on (X (n, d), y (n,)); returns self."""
        X, y, S = self._features(X, y)
        reg = RidgeCV(alphas=self.alphas, cv=self.cv).fit(S, y)
        self.alpha_ = float(reg.alpha_)
        return self._finish(X, reg.coef_, reg.intercept_, np.ones(len(X), dtype=bool))


class SimilarityLasso(_SimilarityLinear):
    """LASSO on the full similarity representation; its support is the prototype set.

    Parameters
    ----------
    similarity : "rbf" or Similarity, default="rbf"
    gamma : "paper", "median" or float, default="median"
    n_alphas : int, default=30
        Penalties on scikit-learn's LASSO path, chosen by ``cv``-fold squared error.
    cv : int or CV splitter, default=5
    max_iter : int, default=5000
    random_state : int or None, default=0
        Fold shuffling when ``cv`` is an int.

    Attributes
    ----------
    alpha_ : float
    prototypes_ : ndarray of shape (k, d)
        The k training samples with a non-zero coefficient.
    beta_ : ndarray of shape (k,)
    intercept_ : float
    n_prototypes_ : int
        k.
    n_iter_ : int
        Coordinate-descent iterations of the final fit (on all samples at ``alpha_``).
    similarity_ : Similarity
    n_features_in_ : int
    """

    _parameter_constraints: ClassVar[dict] = {
        **SIMILARITY_CONSTRAINTS,
        "n_alphas": [Interval(Integral, 1, None, closed="left")],
        "cv": ["cv_object"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, similarity="rbf", gamma="median", n_alphas=30, cv=5, max_iter=5000,
                 random_state=0):
        self.similarity = similarity
        self.gamma = gamma
        self.n_alphas = n_alphas
        self.cv = cv
        self.max_iter = max_iter
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on (X (n, d), y (n,)); returns self."""
        X, y, S = self._features(X, y)
        cv = self.cv
        if isinstance(cv, Integral):
            from sklearn.model_selection import KFold

            cv = KFold(min(int(cv), len(X)), shuffle=True, random_state=self.random_state)
        # precomputed Gram matrix: n features = n samples, about 5x faster, same path
        reg = LassoCV(alphas=self.n_alphas, cv=cv, max_iter=self.max_iter,
                      precompute=True).fit(S, y)  # refitted on all of S at alpha_
        self.alpha_ = float(reg.alpha_)
        self.n_iter_ = int(reg.n_iter_)
        return self._finish(X, reg.coef_, reg.intercept_, reg.coef_ != 0)


class SuperSparseRegressionDistiller(DistillerMixin, RegressorMixin, BaseEstimator):
    """SRidge / SLASSO: distil a similarity-space regressor into m virtual prototypes.

    Parameters
    ----------
    teacher : regressor, "labels" or None, default=None
        A regressor with ``predict`` (default `SimilarityRidge`; give
        `SimilarityLasso` for SLASSO), whose training predictions are the targets
        of Eq. 2; ``"labels"``: fit y directly.
    n_prototypes : int, default=5
    prefit : bool, default=False
        True: ``teacher`` is already fitted; use it as is.
    similarity : "teacher", "rbf" or Similarity, default="teacher"
        "teacher": the teacher's fitted ``similarity_`` (the same s as the model distilled).
    gamma : "paper", "median" or float, default="median"
        When ``similarity="rbf"`` (or "teacher" with ``teacher="labels"``).
    lam : float, default=1e-6
        Ridge penalty of Eq. 2 on the standardised targets (the paper's 1e-6 for eigenfaces).
    lam_scale : {"none", "gram"}, default="none"
        See `ssgallery.learn.learner.SuperSparseRegressor`; "none": ``lam``
        as is (already relative to the targets' variance).
    init : str, default="quantile"
        See `ssgallery.learn.initial.initial_prototypes`.
    n_init : int, default=1
    solver, bounds, eta, normalize_step, repulsion, max_iter, tol, random_state, refresh_every, \
start_candidates, swap_rounds, lam_sum
        Passed to `ssgallery.learn.learner.SuperSparseRegressor`.

    Attributes
    ----------
    teacher_ : the fitted teacher (None for ``teacher="labels"``)
    regressor_ : SuperSparseRegressor
    prototypes_, initial_prototypes_, beta_, intercept_, similarity_, n_iter_
        ``regressor_``'s.
    n_features_in_ : int
    """

    _parameter_constraints: ClassVar[dict] = {
        **LEARNER_CONSTRAINTS,
        "similarity": [StrOptions({"rbf", "teacher"}), Similarity],
        "teacher": [HasMethods(["fit", "predict"]), StrOptions({"labels"}), None],
        "prefit": ["boolean"],
    }

    def __init__(self, teacher=None, n_prototypes=5, *, prefit=False, similarity="teacher",
                 gamma="median", lam=1e-6, lam_scale="none", solver="varpro",
                 init="quantile", n_init=1,
                 bounds=None, eta=0.5, normalize_step=False, repulsion=True, max_iter=200,
                 tol=1e-6, random_state=None, refresh_every=1, start_candidates=1,
                 swap_rounds=0, lam_sum=0.0):
        self.teacher = teacher
        self.n_prototypes = n_prototypes
        self.prefit = prefit
        self.similarity = similarity
        self.gamma = gamma
        self.lam = lam
        self.lam_sum = lam_sum
        self.lam_scale = lam_scale
        self.solver = solver
        self.init = init
        self.n_init = n_init
        self.bounds = bounds
        self.eta = eta
        self.normalize_step = normalize_step
        self.repulsion = repulsion
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.refresh_every = refresh_every
        self.start_candidates = start_candidates
        self.swap_rounds = swap_rounds

    def teacher_targets(self, X, y):
        """Fit the teacher (unless prefit): (teacher_, targets, weights, X)."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        if isinstance(self.teacher, str) and self.teacher == "labels":
            teacher, targets = None, y
        else:
            if self.prefit:
                if self.teacher is None:
                    raise ValueError("prefit=True needs a fitted teacher")
                teacher = self.teacher
            else:
                teacher = SimilarityRidge() if self.teacher is None else clone(self.teacher)
                teacher.fit(X, y)
            targets = np.asarray(teacher.predict(X), dtype=float).ravel()
        self._teacher_similarity = getattr(teacher, "similarity_", None)
        return teacher, targets, np.full(len(X), 1.0 / len(X)), X

    def make_regressor(self, **overrides):
        """The unfitted learner: the teacher's similarity, standardised targets."""
        sim = self.similarity
        if isinstance(sim, str) and sim == "teacher":
            sim = getattr(self, "_teacher_similarity", None) or "rbf"
        return super().make_regressor(**{"similarity": sim, "normalize_y": True, **overrides})

    @_fit_context(prefer_skip_nested_validation=False)  # a given teacher validates its own
    def fit(self, X, y):
        """Fit the teacher, then m prototypes on its training predictions; returns self."""
        self.teacher_, targets, u, X = self.teacher_targets(X, y)
        self.regressor_ = self.make_regressor().fit(X, targets, sample_weight=u)
        return self

    def predict(self, X):
        """g(x) = s(x, prototypes_) @ beta_ + intercept_, shape (n,): m matches per row."""
        check_is_fitted(self, "regressor_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.regressor_.predict(X)


__all__ = ["ALPHAS", "SimilarityLasso", "SimilarityRidge",
           "SuperSparseRegressionDistiller"]
