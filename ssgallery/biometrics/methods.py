"""One registry of every verification method that ``roc`` and the benchmarks compare.

``make_method(name, n_prototypes)`` returns an unfitted object with
``fit(X, y, teacher=None)`` (y in {-1, +1}; ``teacher`` a fitted
`ssgallery.learn.teacher.SimilaritySVM`, fitted on (X, y) when None, so several
methods can share one teacher per client), ``decision_function(X)`` and, once fitted,
``n_matches_``: the matches one claim costs (m, or the number of SVs for the full SVM).
"""

from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ssgallery.errors import InputError
from ssgallery.learn.base import BinaryDecisionMixin, ReadThrough
from ssgallery.learn.baselines import NystromLandmarks, PrototypeSelector, SVMRed, SVMSel

METHODS = (
    ("svm", "the full one-vs-all SVM teacher (one match per support vector)"),
    ("ssvm", "super-sparse SVM: m virtual prototypes distilled from the SVM (varpro solver)"),
    ("ssvm-paper", "super-sparse SVM with the paper's Algorithm 1 (cyclic gradient steps)"),
    ("svm-sel", "SVM-sel: m support vectors kept by kernel-PCA-driven removal (Schoelkopf 1999)"),
    ("svm-red", "SVM-red: m greedy RBF pre-images by fixed-point iteration (RBF only)"),
    ("ps-r", "PS-R: m random training samples + ridge/LASSO on the SVM's outputs"),
    ("ps-b", "PS-B: m border samples (largest sum of distances) + ridge/LASSO"),
    ("ps-s", "PS-S: m spanning samples (set median, then farthest-first) + ridge/LASSO"),
    ("ps-km", "PS-KM: k-means clusters' set medians + ridge/LASSO"),
    ("nystrom", "Nystroem-style: m k-means centres as landmarks + ridge"),
)
METHOD_NAMES = tuple(n for n, _ in METHODS)
_PS = {"ps-r": "random", "ps-b": "border", "ps-s": "spanning", "ps-km": "kmedians"}


def _fit_teacher(X, y, teacher, random_state, teacher_params):
    if teacher is not None:
        return teacher
    from ssgallery.learn.teacher import SimilaritySVM

    params = {"random_state": random_state, **(teacher_params or {})}
    return SimilaritySVM(**params).fit(X, y)


class FullSVM(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """The teacher itself as a method: ``n_matches_`` = number of support vectors.

    Parameters
    ----------
    random_state : int, default=0
    teacher_params : dict, optional
        Passed to `ssgallery.learn.teacher.SimilaritySVM` when it is fitted here.

    Attributes
    ----------
    teacher_ : SimilaritySVM
    classes_, similarity_, intercept_
        ``teacher_``'s.
    prototypes_, beta_
        ``teacher_.support_vectors_`` and ``teacher_.dual_coef_``.
    n_matches_ : int
    """

    classes_ = ReadThrough("teacher_")
    similarity_ = ReadThrough("teacher_")
    intercept_ = ReadThrough("teacher_")
    prototypes_ = ReadThrough("teacher_", "support_vectors_")
    beta_ = ReadThrough("teacher_", "dual_coef_")

    def __init__(self, random_state=0, teacher_params=None):
        self.random_state = random_state
        self.teacher_params = teacher_params

    def fit(self, X, y, teacher=None):
        self.teacher_ = _fit_teacher(X, y, teacher, self.random_state, self.teacher_params)
        self.n_matches_ = self.teacher_.n_support_total_
        return self

    def decision_function(self, X):
        check_is_fitted(self, "teacher_")
        return self.teacher_.decision_function(X)


class SuperSparseSVM(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """The paper's method: `ssgallery.learn.supersparse.SuperSparseDistiller` on a shared teacher.

    The distiller works in the teacher's similarity (``similarity=teacher.similarity_``).

    Parameters
    ----------
    n_prototypes : int
    solver : {"varpro", "paper"}, default="varpro"
    random_state : int, default=0
    teacher_params : dict, optional
    **options
        Further `ssgallery.learn.supersparse.SuperSparseDistiller` parameters
        (``lam``, ``init``, ``n_init``, ``bounds``, ``eta``, ``normalize_step``, ...),
        given as the ``options`` dict. ``init`` defaults to ``"auto"``
        (`ssgallery.learn.initial.resolve_init`: "class" for an analytic similarity,
        "genuine" for a black-box one), as in ``compress``.

    Attributes
    ----------
    teacher_ : SimilaritySVM
    distiller_ : SuperSparseDistiller
        Fitted with ``prefit=True`` on ``teacher_``.
    classes_, prototypes_, initial_prototypes_, beta_, intercept_, similarity_
        ``distiller_``'s.
    n_matches_ : int
        m.
    """

    classes_ = ReadThrough("distiller_")
    prototypes_ = ReadThrough("distiller_")
    initial_prototypes_ = ReadThrough("distiller_")
    beta_ = ReadThrough("distiller_")
    intercept_ = ReadThrough("distiller_")
    similarity_ = ReadThrough("distiller_")

    def __init__(self, n_prototypes=2, solver="varpro", random_state=0, teacher_params=None,
                 options=None):
        self.n_prototypes = n_prototypes
        self.solver = solver
        self.random_state = random_state
        self.teacher_params = teacher_params
        self.options = options

    def fit(self, X, y, teacher=None):
        from ssgallery.learn.supersparse import SuperSparseDistiller, resolve_init

        self.teacher_ = _fit_teacher(X, y, teacher, self.random_state, self.teacher_params)
        opts = {"similarity": self.teacher_.similarity_, **(self.options or {})}
        opts["init"] = resolve_init(opts.get("init", "auto"), opts["similarity"])
        self.distiller_ = SuperSparseDistiller(
            teacher=self.teacher_, n_prototypes=self.n_prototypes, prefit=True,
            solver=self.solver, random_state=self.random_state, **opts).fit(X, y)
        self.n_matches_ = len(self.distiller_.prototypes_)
        return self

    def decision_function(self, X):
        check_is_fitted(self, "distiller_")
        return self.distiller_.decision_function(X)


def make_method(name, n_prototypes, random_state=0, **options):
    """An unfitted method by registry name.

    Parameters
    ----------
    name : str
        One of `METHOD_NAMES` (see `METHODS` for one-line descriptions).
    n_prototypes : int
        m, the matches per claim (ignored by ``"svm"``).
    random_state : int, default=0
    **options
        Method parameters: ``regressor="lasso"``, ``alpha`` (ps-*, nystrom); ``n_starts``,
        ``max_iter`` (svm-red); distiller parameters (ssvm, ssvm-paper: ``lam``, ``init``,
        ``n_init``, ``bounds``, ...); ``teacher_params`` (svm, ssvm*: passed to
        SimilaritySVM when the method fits its own teacher).

    Returns
    -------
    estimator with ``fit(X, y, teacher=None)``, ``decision_function(X)``, ``n_matches_``
    """
    key = str(name).lower()
    teacher_params = options.pop("teacher_params", None)
    if key == "svm":
        return FullSVM(random_state=random_state, teacher_params=teacher_params)
    if key in ("ssvm", "ssvm-paper"):
        solver = options.pop("solver", "paper" if key == "ssvm-paper" else "varpro")
        return SuperSparseSVM(n_prototypes, solver=solver, random_state=random_state,
                              teacher_params=teacher_params, options=options)
    if key == "svm-sel":
        return SVMSel(n_prototypes, random_state=random_state, **options)
    if key == "svm-red":
        return SVMRed(n_prototypes, random_state=random_state, **options)
    if key in _PS:
        return PrototypeSelector(n_prototypes, selection=_PS[key], random_state=random_state,
                                 **options)
    if key == "nystrom":
        return NystromLandmarks(n_prototypes, random_state=random_state, **options)
    raise InputError(f"unknown method '{name}'; choose from {', '.join(METHOD_NAMES)}")


def describe_methods():
    """The ``--help`` text: one line per method."""
    width = max(len(n) for n in METHOD_NAMES)
    return "\n".join(f"{n:<{width}}  {d}" for n, d in METHODS)


__all__ = [
    "METHODS",
    "METHOD_NAMES",
    "FullSVM",
    "SuperSparseSVM",
    "describe_methods",
    "make_method",
]
