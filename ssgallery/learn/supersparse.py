"""Super-sparse learning in similarity spaces (paper Sect. III; docs/method.md).

`ssgallery.learn.learner.SuperSparseRegressor` fits g(x) = sum_j beta_j s(x, z_j) + b
with m virtual prototypes z_j by minimising Eq. 2 (eq:objective); `SuperSparseDistiller`
distils a teacher classifier (an SVM) into such a function, using the teacher's decision
values as targets (the paper's footnote) and class-balancing weights. This module
re-exports the names of `ssgallery.learn.learner`, `ssgallery.learn.initial` and
`ssgallery.learn.targets`.
"""

from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ssgallery.learn.base import BinaryDecisionMixin, ReadThrough, binary_classes
from ssgallery.learn.defaults import DEFAULT_LAM, DEFAULT_LAM_SCALE, DEFAULT_N_INIT
from ssgallery.learn.initial import (  # noqa: F401  (public here too)
    INITS,
    candidate_starts,
    gram_scale,
    initial_prototypes,
    least_omega_start,
    resolve_init,
    resolve_similarity,
    similarity_scale,
    start_indices,
    swap_start,
    unmoved_omega,
)
from ssgallery.learn.learner import (  # noqa: F401  (public here too)
    LAM_SCALES,
    LEARNER_CONSTRAINTS,
    LEARNER_PARAMS,
    SuperSparseRegressor,
)
from ssgallery.learn.targets import (  # noqa: F401  (public here too)
    balanced_weights,
    between_points,
    with_between,
    with_mirrors,
)


class DistillerMixin:
    """What the distillers share: a `SuperSparseRegressor` made from their learner
    options (``make_regressor``) and fitted on a teacher's outputs (``teacher_targets``)
    into ``regressor_``, whose fitted attributes are read through, not copied."""

    prototypes_ = ReadThrough("regressor_")
    initial_prototypes_ = ReadThrough("regressor_")
    beta_ = ReadThrough("regressor_")
    intercept_ = ReadThrough("regressor_")
    similarity_ = ReadThrough("regressor_")
    n_iter_ = ReadThrough("regressor_")

    def make_regressor(self, **overrides):
        """The unfitted `SuperSparseRegressor` with this distiller's options."""
        params = {k: getattr(self, k) for k in LEARNER_PARAMS}
        params.update(overrides)
        return SuperSparseRegressor(**params)


class SuperSparseDistiller(DistillerMixin, BinaryDecisionMixin, ClassifierMixin,
                           BaseEstimator):
    """Distil a teacher classifier into m virtual prototypes (paper Sect. III, footnote).

    The teacher's decision values on the training points are the regression targets;
    sample weights give genuine and impostor classes half of the total weight each.
    The fitted function is the `SuperSparseRegressor` in ``regressor_``; its
    fitted attributes are read through, not copied.

    Parameters
    ----------
    teacher : classifier with ``decision_function``, optional
        Default: ``ssgallery.learn.teacher.SimilaritySVM()``.
    n_prototypes : int, default=2
    prefit : bool, default=False
        True: ``teacher`` is already fitted; use it as is.
    similarity, gamma, lam, lam_scale, solver, init, n_init, bounds, eta, normalize_step, \
repulsion, max_iter, tol, random_state, refresh_every, start_candidates, \
swap_rounds, lam_sum
        Passed to `SuperSparseRegressor`.
    between : float, default=0.0
        Also fit the teacher's outputs at `between_points` (each impostor's midpoint
        with a random genuine sample), with this total weight relative to the training
        points'; 0 fits the training points only (the paper). Ignored for a similarity
        without a gradient (a black box).
    mirror : callable or None, default=None
        Also fit the teacher's outputs at the training points' mirror images, with the
        training points' weights (`ssgallery.learn.targets.with_mirrors`): a callable
        mapping features (k, d) to their mirror images' (e.g.
        `ssgallery.learn.mirror.MirrorImages` for a matcher whose features are an
        image's pixels). Starts and swaps are never made of a mirror image (of the
        training points, and of the ``between`` points when there are any); the swaps'
        Omega and the beta of Eq. 4 (eq:beta) see the mirror images too. With a
        black-box matcher the teacher's scores and the swaps' similarities at the mirror
        images are new program runs (not in the training Gram matrix). None: the
        training points only (the paper).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The negative (impostor) and positive (genuine) labels.
    teacher_ : the fitted teacher
    regressor_ : SuperSparseRegressor
        The fitted function g(x).
    prototypes_, initial_prototypes_, beta_, intercept_, similarity_, n_iter_
        ``regressor_``'s.
    n_features_in_ : int
    """

    _parameter_constraints: ClassVar[dict] = {
        **LEARNER_CONSTRAINTS,
        "teacher": [HasMethods(["fit", "decision_function"]), None],
        "prefit": ["boolean"],
        "between": [Interval(Real, 0, None, closed="left")],
        "mirror": [callable, None],
    }

    def __init__(self, teacher=None, n_prototypes=2, *, prefit=False, similarity="rbf",
                 gamma="paper", lam=DEFAULT_LAM, lam_scale=DEFAULT_LAM_SCALE, solver="varpro",
                 init="class", n_init=DEFAULT_N_INIT,
                 bounds=None, eta=0.5, normalize_step=False, repulsion=True, max_iter=200,
                 tol=1e-6, random_state=None, refresh_every=1, between=0.0,
                 start_candidates=1, swap_rounds=0, mirror=None, lam_sum=0.0):
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
        self.between = between
        self.start_candidates = start_candidates
        self.swap_rounds = swap_rounds
        self.mirror = mirror

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # one client against the rest
        return tags

    def teacher_targets(self, X, y):
        """Fit the teacher (unless prefit); return (teacher, targets, weights, X).

        Sets ``classes_`` and ``n_features_in_``. ``targets`` are the teacher's decision
        values on X and ``weights`` the class-balanced sample weights, both shape (n,).
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, labels = binary_classes(y, "the distiller")
        if self.prefit:
            if self.teacher is None:
                raise ValueError("prefit=True needs a fitted teacher")
            teacher = self.teacher
        else:
            if self.teacher is None:
                from ssgallery.learn.teacher import SimilaritySVM

                teacher = SimilaritySVM()
            else:
                teacher = clone(self.teacher)
            teacher.fit(X, labels)
        targets = np.asarray(teacher.decision_function(X), dtype=float).ravel()
        return teacher, targets, balanced_weights(labels), X

    @_fit_context(prefer_skip_nested_validation=False)  # a given teacher validates its own
    def fit(self, X, y):
        """Fit the teacher, then the super-sparse regressor on its decision values.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two classes (e.g. -1 impostor, +1 genuine)

        Returns
        -------
        self
        """
        self.teacher_, targets, u, X = self.teacher_targets(X, y)
        labels = np.where(np.asarray(y) == self.classes_[1], 1, -1)
        X, targets, u, candidates = self.distillation_set(X, targets, u, labels,
                                                          self.teacher_)
        self.regressor_ = self.make_regressor().fit(X, targets, sample_weight=u,
                                                    candidates=candidates)
        return self

    def distillation_set(self, X, targets, u, labels, teacher):
        """What the regressor fits: the training points ``X`` (n, d), the ``teacher``'s
        ``targets`` and weights ``u`` (n,), plus its outputs at the `between_points`
        of the ``labels`` (n,) (`with_between`, weight ``between``) and at the training
        points' mirror images (`with_mirrors`, ``mirror``); `fit` and
        `ssgallery.learn.mselect.select_n_prototypes` alike. Returns ``X``, ``targets``,
        ``u`` and the ``candidates`` mask of the regressor's ``fit`` (None: every row)."""
        # a black box's inputs are not vectors to average: no points between the classes
        weight = self.between if getattr(self.similarity, "has_gradient", True) else 0.0
        n = len(X)
        X, targets, u = with_between(X, targets, u, labels, teacher, weight,
                                     self.random_state)
        return with_mirrors(X, targets, u, teacher, self.mirror, rows=n)

    def decision_function(self, X):
        """g(x), shape (n,): > 0 for the positive class."""
        check_is_fitted(self, "regressor_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.regressor_.predict(X)
