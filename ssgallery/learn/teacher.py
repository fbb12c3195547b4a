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
    }

    def __init__(self, similarity="rbf", gamma="median", C="cv", C_grid=C_GRID, cv=5,
                 scoring="balanced_accuracy", random_state=0):
        self.similarity = similarity
        self.gamma = gamma
        self.C = C
        self.C_grid = C_grid
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state

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
                svc, _ = self._svc(C, y[tr])
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
            gi, ci = divmod(best, len(C_values))
        else:
            self.cv_scores_ = None
            gi, ci = 0, 0
        self.gamma_ = None if gammas[gi] is None else float(gammas[gi])
        self.C_ = C_values[ci]
        self.similarity_ = cand.make_similarity(self.gamma_)
        S = cand.gram(self.gamma_)
        svc, cw = self._svc(self.C_, yb)
        svc.fit(0.5 * (S + S.T), yb)  # symmetrised Gram matrix (non-symmetric matchers)
        self.class_weight_ = {_py(self.classes_[1] if k == 1 else self.classes_[0]): v
                              for k, v in cw.items()}
        self.support_ = svc.support_.copy()
        self.support_vectors_ = X[self.support_].copy()
        self.dual_coef_ = svc.dual_coef_[0].copy()  # alpha_i y_i, sign as decision_function
        self.intercept_ = float(svc.intercept_[0])
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
