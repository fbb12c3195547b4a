"""The SVM teacher: a one-vs-all SVM on a similarity (paper Sect. IV-A).

One client against everyone else: +1 genuine, -1 impostor. The SVM is scikit-learn's
``SVC(kernel="precomputed")`` on the Gram matrix of a
`ssgallery.learn.similarity.Similarity` (RBF by default), so any similarity works,
including a black-box matcher that is neither symmetric nor positive semi-definite.

Two choices differ from a plain ``GridSearchCV(SVC())``, both measured on AT&T
(README, "The SVM teacher, the baselines and the method registry"):

- **C selection is balanced.** With ~5 % genuine samples, plain CV accuracy ties at the
  reject-everyone classifier and picks the smallest C. We rank C by mean balanced
  accuracy over stratified folds; ties are broken by mean ROC AUC, remaining ties by
  the larger C (``scoring="roc_auc"`` swaps the first two keys).
- **Class weights** (paper Sect. IV-A): each class's C is multiplied by the prior of the
  other class, estimated on the data the SVM is trained on (per fold during CV).
- **A C at which no support vector is free is passed over.** With those weights every
  alpha at its bound satisfies sum_i alpha_i y_i = 0, so at a small C every training
  image is often a bounded SV; the intercept is then anywhere in an interval
  (`ssgallery.learn.svm_bias`), and libsvm returns its middle or, when rounding leaves
  one alpha a hair below its bound, an end of it: the same client's fits disagreed by
  0.75 (sample_data c07), and the CV's balanced accuracy at that C is that of an
  arbitrary intercept. The teacher takes the next C of the CV ranking whose SVM has a
  free SV (``C_passed_`` names the ones passed over); with none in the grid, or at a
  fixed C, b is the middle of the interval, computed, not left to rounding
  (``at_bound``; docs/method.md, "The SVM teacher").

Non-symmetric similarities: SVC needs a symmetric Gram matrix, so training uses
(S + S^T)/2. Predictions use s(x, sv) in the matcher's own orientation (probe first).
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ssgallery.learn.base import BinaryDecisionMixin, binary_classes
from ssgallery.learn.similarity import RBFSimilarity, Similarity, median_gamma
from ssgallery.learn.svm_bias import bias_interval, free_support

C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
GAMMA_CV_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)  # "cv": multiples of the median gamma
_TIE = 1e-9


def prior_class_weight(y):
    """{label: prior of the other class} for binary labels y (paper Sect. IV-A)."""
    classes, counts = np.unique(y, return_counts=True)
    p = counts / counts.sum()
    return {classes[0]: float(p[1]), classes[1]: float(p[0])}


def select_index(primary, secondary=None, tie=_TIE):
    """Index of the best grid point: max ``primary``; ties (within ``tie``) by max
    ``secondary``; remaining ties by the LAST index (the larger C on an increasing grid).

    ``primary`` and ``secondary`` are flat arrays over the grid.
    """
    primary = np.asarray(primary, dtype=float)
    cand = np.flatnonzero(primary >= np.nanmax(primary) - tie)
    if secondary is not None and len(cand) > 1:
        sec = np.asarray(secondary, dtype=float)[cand]
        cand = cand[sec >= np.nanmax(sec) - tie]
    return int(cand[-1])


def select_index_plain(scores):
    """What ``GridSearchCV`` does with plain accuracy: max score, ties -> FIRST index
    (the smallest C). Kept to measure the failure it causes."""
    scores = np.asarray(scores, dtype=float)
    return int(np.flatnonzero(scores >= np.nanmax(scores) - _TIE)[0])


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _balanced_accuracy(y, f):
    pos = y > 0
    return 0.5 * (np.mean(f[pos] > 0) + np.mean(f[~pos] <= 0))


class _GivenGram:
    """A Similarity instance: one candidate, its Gram matrix S(X, X) (given or computed)."""

    def __init__(self, similarity, X, gram=None):
        self.similarity = similarity
        self.S = similarity(X, X) if gram is None else np.asarray(gram, dtype=float)
        if self.S.shape != (len(X), len(X)):
            raise ValueError(f"gram has shape {self.S.shape}, expected {(len(X), len(X))}")
        self.gammas = [getattr(similarity, "gamma", None)]

    def gram(self, gamma):
        return self.S

    def make_similarity(self, gamma):
        return self.similarity


class _RBFGrams:
    """RBF candidates: squared distances D once, then S = exp(-gamma D) per gamma."""

    def __init__(self, X, gamma):
        self.D = RBFSimilarity(1.0).sq_distances(X, X)
        if gamma == "paper":
            self.gammas = [1.0 / X.shape[1]]
        elif gamma == "median":
            self.gammas = [median_gamma(X, self.D)]
        elif gamma == "cv":
            gm = median_gamma(X, self.D)
            self.gammas = [f * gm for f in GAMMA_CV_FACTORS]
        else:
            self.gammas = [float(gamma)]

    def gram(self, gamma):
        return np.exp(-gamma * self.D)

    def make_similarity(self, gamma):
        return RBFSimilarity(gamma)


class SimilaritySVM(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """One-vs-all SVM on a similarity, with balanced C selection and prior class weights.

    Parameters
    ----------
    similarity : "rbf" or Similarity, default="rbf"
        ``"rbf"``: `ssgallery.learn.similarity.RBFSimilarity` with width ``gamma``.
        A Similarity instance is used as given (``gamma`` is then ignored).
    gamma : "median", "paper", "cv" or float, default="median"
        RBF width. ``"paper"``: 1/d. ``"median"``:
        `ssgallery.learn.similarity.median_gamma` of the training rows.
        ``"cv"``: chosen jointly with C over
        ``GAMMA_CV_FACTORS`` x the median gamma.
    C : "cv" or float, default="cv"
        SVM regularisation; ``"cv"`` selects it from ``C_grid`` by ``cv``-fold CV.
    C_grid : tuple of float, default=(0.1, 1, 10, 100, 1000)
        Candidate C values, increasing.
    cv : int, default=5
        Number of stratified folds (reduced to the size of the smaller class if needed;
        with a single sample in a class nothing can be cross-validated, every grid point
        ties and the tie rule takes the largest C).
    scoring : {"balanced_accuracy", "roc_auc"}, default="balanced_accuracy"
        Primary CV criterion; the other one breaks ties, then the larger C wins.
    random_state : int, default=0
        Seed of the fold shuffling.
    at_bound : {"pass", "midpoint", "libsvm"}, default="pass"
        A fit with no free support vector (every alpha within a relative 1e-8 of 0 or of
        its bound) has an intercept the KKT conditions only bound to an interval.
        ``"pass"``: C selection passes over such a C for the next (gamma, C) of the CV
        ranking whose SVM has a free SV (the first choice stays when none has one), and
        the fitted SVM's b, when no SV is free (then, or at a fixed C), is the middle of
        the interval. ``"midpoint"``: that middle, without passing over. ``"libsvm"``:
        libsvm's b as it comes (the middle, or an end when rounding leaves an alpha just
        below its bound); kept to measure what the other two change. The CV folds that
        rank C keep libsvm's b whatever the rule: ``cv_scores_`` are the same, and so
        is every pick whose SVM has a free SV.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; positive decision values mean ``classes_[1]`` (genuine, +1).
    similarity_ : Similarity
        The resolved similarity, e.g. ``RBFSimilarity(gamma_)``.
    gamma_ : float or None
        RBF width used (None for a non-RBF similarity).
    C_ : float
        Selected C (before the class weights).
    class_weight_ : dict
        {label: prior of the other class}, multiplying C per class.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors in the training data.
    support_vectors_ : ndarray of shape (n_SV, d)
    dual_coef_ : ndarray of shape (n_SV,)
        alpha_i y_i.
    intercept_ : float
    n_free_ : int
        Free support vectors (0 < alpha_i < C_i) of the fitted SVM; 0: ``intercept_`` is
        the middle of its KKT interval (`ssgallery.learn.svm_bias.bias_interval`).
    C_passed_ : tuple of float
        The C values the CV ranked above ``C_`` that were passed over because their SVM
        had no free SV (``at_bound="pass"``); empty otherwise.
    n_support_total_ : int
        Number of support vectors = matches per claim of the full SVM.
    cv_scores_ : dict or None
        ``{"C": (n_C,), "gamma": (n_gamma,), "accuracy"|"balanced_accuracy"|"roc_auc":
        (n_gamma, n_C) mean fold scores}``; None when nothing was cross-validated.
    """

    _parameter_constraints: ClassVar[dict] = {
        "similarity": [StrOptions({"rbf"}), Similarity],
        "gamma": [StrOptions({"median", "paper", "cv"}), Interval(Real, 0, None, closed="neither")],
        "C": [StrOptions({"cv"}), Interval(Real, 0, None, closed="neither")],
        "C_grid": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions({"balanced_accuracy", "roc_auc"})],
        "random_state": ["random_state"],
        "at_bound": [StrOptions({"pass", "midpoint", "libsvm"})],
    }

    def __init__(self, similarity="rbf", gamma="median", C="cv", C_grid=C_GRID, cv=5,
                 scoring="balanced_accuracy", random_state=0, at_bound="pass"):
        self.similarity = similarity
        self.gamma = gamma
        self.C = C
        self.C_grid = C_grid
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state
        self.at_bound = at_bound

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # one client against the rest
        return tags

    # ------------------------------------------------------------------ helpers
    def _candidates(self, X, gram=None):
        """The similarities fit tries: ``.gammas`` (None for a given Similarity),
        ``.gram(gamma)`` -> S(X, X) and ``.make_similarity(gamma)``."""
        if isinstance(self.similarity, Similarity):
            return _GivenGram(self.similarity, X, gram)
        return _RBFGrams(X, self.gamma)

    def _svc(self, C, y):
        cw = prior_class_weight(y)
        return SVC(kernel="precomputed", C=C, class_weight=cw), cw

    def _fit_svc(self, K, y, C):
        """SVC on the symmetric Gram matrix K at C: ``(support, dual_coef, b, n_free,
        class_weight)``. With no free SV, b is the middle of its KKT interval
        (`ssgallery.learn.svm_bias.bias_interval`), unless ``at_bound="libsvm"``."""
        svc, cw = self._svc(C, y)
        svc.fit(K, y)
        sup, dual = svc.support_, svc.dual_coef_[0]
        b = float(svc.intercept_[0])
        upper = C * np.where(y > 0, cw[1], cw[-1])
        alpha = np.zeros(len(y))
        alpha[sup] = np.abs(dual)
        n_free = int(free_support(alpha, upper).sum())
        if n_free == 0 and self.at_bound != "libsvm":
            lo, hi = bias_interval(K[:, sup] @ dual, y, alpha, upper)
            b = 0.5 * (lo + hi)
        return sup, dual, b, n_free, cw

    def _choose(self, cand, y, C_values, best, other):
        """Fit at the CV's ``best`` (flat index over (gamma, C)); with ``at_bound="pass"``,
        while that fit has no free SV, at the next (gamma, C) of the same ranking
        (`select_index` without the passed ones); the first choice when none has one.
        Returns (gamma index, C index, fit, C values passed over)."""
        def fit_at(k):
            g = cand.gammas[k // len(C_values)]
            S = cand.gram(g)
            return self._fit_svc(0.5 * (S + S.T), y, C_values[k % len(C_values)])  # symmetrised

        first = fit_at(best)
        if first[3] > 0 or self.at_bound != "pass" or self.cv_scores_ is None:
            return *divmod(best, len(C_values)), first, ()
        primary = self.cv_scores_[self.scoring].ravel().copy()
        tried = [best]
        while len(tried) < primary.size:
            primary[tried] = -np.inf
            k = select_index(primary, self.cv_scores_[other].ravel())
            tried.append(k)
            fit = fit_at(k)
            if fit[3] > 0:
                passed = tuple(C_values[j % len(C_values)] for j in tried[:-1])
                return *divmod(k, len(C_values)), fit, passed
        return *divmod(best, len(C_values)), first, ()

    def _cv_scores(self, S, y, C_values):
        """Mean fold accuracy, balanced accuracy and AUC for each C, shape (n_C,) each."""
        n_min = int(np.min(np.unique(y, return_counts=True)[1]))
        n_splits = min(self.cv, n_min)
        K = 0.5 * (S + S.T)
        out = {k: np.zeros(len(C_values)) for k in ("accuracy", "balanced_accuracy", "roc_auc")}
        if n_splits < 2:  # cannot cross-validate: every C scores the same
            return out
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=self.random_state)
        for tr, te in folds.split(S, y):
            for k, C in enumerate(C_values):
                svc, _ = self._svc(C, y[tr])  # libsvm's b: the scores only rank C
                svc.fit(K[np.ix_(tr, tr)], y[tr])
                f = svc.decision_function(S[np.ix_(te, tr)])
                out["accuracy"][k] += np.mean(np.where(f > 0, 1, -1) == y[te]) / n_splits
                out["balanced_accuracy"][k] += _balanced_accuracy(y[te], f) / n_splits
                out["roc_auc"][k] += roc_auc_score(y[te], f) / n_splits
        return out

    # ------------------------------------------------------------------ API
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, gram=None):
        """Fit on features X (n, d) and binary labels y (n,), e.g. +1 genuine / -1 impostor.

        ``gram``: S(X, X), shape (n, n), when the caller already has it (one matrix
        serves every one-vs-all client on the same training set); only with a
        `ssgallery.learn.similarity.Similarity` instance as ``similarity``.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=float)
        self.classes_, yb = binary_classes(y, "the SVM teacher")
        yb = yb.astype(int)
        if gram is not None and not isinstance(self.similarity, Similarity):
            raise ValueError("gram is only used with a Similarity instance as similarity")
        cand = self._candidates(X, gram)
        gammas = cand.gammas
        C_values = [float(c) for c in self.C_grid] if self.C == "cv" else [float(self.C)]
        if len(gammas) * len(C_values) > 1:
            per_g = [self._cv_scores(cand.gram(g), yb, C_values) for g in gammas]
            self.cv_scores_ = {"C": np.array(C_values), "gamma": np.array(gammas, dtype=float)}
            for key in ("accuracy", "balanced_accuracy", "roc_auc"):
                self.cv_scores_[key] = np.array([s[key] for s in per_g])
            other = "roc_auc" if self.scoring == "balanced_accuracy" else "balanced_accuracy"
            # flattened row-major over (gamma, C): "last index" = larger C, then larger gamma
            best = select_index(self.cv_scores_[self.scoring].ravel(),
                                self.cv_scores_[other].ravel())
        else:
            other, best = None, 0
            self.cv_scores_ = None
        gi, ci, (sup, dual, b, n_free, cw), passed = self._choose(cand, yb, C_values, best,
                                                                  other)
        self.gamma_ = None if gammas[gi] is None else float(gammas[gi])
        self.C_ = C_values[ci]
        self.C_passed_ = passed
        self.n_free_ = n_free
        self.similarity_ = cand.make_similarity(self.gamma_)
        self.class_weight_ = {_py(self.classes_[1] if k == 1 else self.classes_[0]): v
                              for k, v in cw.items()}
        self.support_ = sup.copy()
        self.support_vectors_ = X[self.support_].copy()
        self.dual_coef_ = dual.copy()  # alpha_i y_i, sign as decision_function
        self.intercept_ = b
        self.n_support_total_ = len(self.support_)
        return self

    def decision_function(self, X):
        """g(x) = sum_i dual_coef_i s(x, sv_i) + b, shape (n,); positive = genuine."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, dtype=float, reset=False)
        return self.similarity_(X, self.support_vectors_) @ self.dual_coef_ + self.intercept_


__all__ = [
    "C_GRID",
    "SimilaritySVM",
    "prior_class_weight",
    "select_index",
    "select_index_plain",
]
