"""The super-sparse learner (paper Sect. III; docs/method.md): `SuperSparseRegressor`
fits g(x) = sum_j beta_j s(x, z_j) + b with m virtual prototypes z_j by minimising
Eq. 2 (eq:objective); its options and their valid values (`LEARNER_CONSTRAINTS`) are
shared with the distillers (`ssgallery.learn.supersparse`), which fit it on a teacher's
outputs. `ssgallery.learn.supersparse` re-exports every name.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ssgallery.learn.defaults import DEFAULT_LAM, DEFAULT_LAM_SCALE, DEFAULT_N_INIT
from ssgallery.learn.initial import (
    INITS,
    candidate_starts,
    initial_prototypes,
    least_omega_start,
    resolve_similarity,
    similarity_scale,
    swap_start,
)
from ssgallery.learn.similarity import Similarity
from ssgallery.learn.solvers import CountingSimilarity, solve_paper, solve_varpro

LAM_SCALES = ("gram", "none")


# The learner options shared by SuperSparseRegressor and the distillers (which pass
# them on to their regressor), with their valid values.
LEARNER_CONSTRAINTS = {
    "n_prototypes": [Interval(Integral, 1, None, closed="left")],
    "similarity": [StrOptions({"rbf"}), Similarity],
    "gamma": [StrOptions({"paper", "median"}), Interval(Real, 0, None, closed="neither")],
    "lam": [Interval(Real, 0, None, closed="left")],
    "lam_sum": [Interval(Real, 0, None, closed="left")],
    "lam_scale": [StrOptions(set(LAM_SCALES))],
    "solver": [StrOptions({"varpro", "paper"})],
    "init": [StrOptions(set(INITS))],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "bounds": ["array-like", None],
    "eta": [Interval(Real, 0, None, closed="neither")],
    "normalize_step": ["boolean"],
    "repulsion": ["boolean"],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "random_state": ["random_state"],
    "refresh_every": [Interval(Integral, 1, None, closed="left")],
    "start_candidates": [Interval(Integral, 1, None, closed="left")],
    "swap_rounds": [Interval(Integral, 0, None, closed="left")],
}
LEARNER_PARAMS = tuple(LEARNER_CONSTRAINTS)


class SuperSparseRegressor(RegressorMixin, BaseEstimator):
    """g(x) = sum_j beta_j s(x, z_j) + b with m jointly learned virtual prototypes.

    Minimises Eq. 2 (eq:objective), Omega = sum_i u_i (g(x_i) - y_i)^2 + lam beta'beta, over beta, b
    and the prototypes z_j. Sample weights are normalised to sum 1, so Omega is a
    weighted mean squared error plus the ridge term.

    Parameters
    ----------
    n_prototypes : int, default=2
        m, the number of virtual prototypes.
    similarity : "rbf" or Similarity, default="rbf"
    gamma : "paper", "median" or float, default="paper"
        RBF width when ``similarity="rbf"``: 1/d, 1/median squared distance, or a value.
    lam : float, default=DEFAULT_LAM
        Ridge penalty on beta (bias unpenalised), relative to
        `ssgallery.learn.initial.similarity_scale` (``lam_scale="gram"``) or absolute
        (``lam_scale="none"``).
    lam_scale : {"gram", "none"}, default=DEFAULT_LAM_SCALE
        "gram": the penalty of Eq. 2 (eq:objective) is ``lam * similarity_scale(X, u)``,
        the same relative strength whatever the similarity's spread; "none": ``lam``.
        ``lam_sum`` is scaled the same way.
    lam_sum : float, default=0.0
        A penalty ``lam_sum (sum_j beta_j)^2`` added to Omega, relative like ``lam``
        (`ssgallery.learn.objective.penalty`): it pulls the weights towards the balance
        an SVM teacher has (sum_i alpha_i y_i = 0: its impostor terms act as a cohort
        normalisation). 0: the paper's Eq. 2. docs/benchmarks/ebgm_balance.md measures it.
    solver : {"varpro", "paper"}, default="varpro"
        "varpro": beta, b eliminated in closed form, all prototypes jointly by L-BFGS-B.
        "paper": Algorithm 1 (cyclic gradient moves, beta-step after each move).
    init : {"class", "genuine", "quantile", "kmeans", "random"}, default="class"
        Starting prototypes (see `ssgallery.learn.initial.initial_prototypes`).
    prototypes_init : array of shape (n_prototypes, d), optional
        Explicit starting prototypes (warm start); overrides ``init``,
        ``start_candidates`` and ``swap_rounds``.
    n_init : int, default=DEFAULT_N_INIT
        Restarts; the one with the lowest training Omega is kept.
    bounds : None or (lo, hi), default=None
        Box constraint on the prototypes (scalars or arrays of shape (d,)).
    eta : float, default=0.5
        Algorithm 1 step size.
    normalize_step : bool, default=False
        Algorithm 1: step eta * g / ||g|| instead of eta * g.
    repulsion : bool, default=True
        Penalty pushing prototypes apart (1/t^2 decay in Algorithm 1, a short first
        phase in varpro).
    max_iter : int, default=200
        varpro: L-BFGS-B iterations; paper: sweeps over all prototypes.
    tol : float, default=1e-6
        varpro: L-BFGS-B ``ftol``; paper: stop when |Delta Omega| < tol.
    random_state : int, RandomState or None, default=None
    refresh_every : int, default=1
        ``solver="paper"``: p, the moves of a prototype between exact evaluations of its
        similarities; in between, the first-order model of the paper's closing section
        (`ssgallery.learn.solvers.solve_paper_refresh`). 1: exact after every move.
    start_candidates : int, default=1
        Above 1, the first run starts from the least-Omega unmoved start among this many
        (`ssgallery.learn.initial.candidate_starts`, `least_omega_start`: one similarity
        call for all of them) instead of the ``init`` rule's start. The starts are made
        of the rows of ``X`` of positive weight among ``fit``'s ``candidates``; Omega is
        on every row.
    swap_rounds : int, default=0
        Above 0, the first run's start is then improved by up to this many swaps of a
        prototype for a row of ``X`` of positive weight among ``fit``'s ``candidates``
        (the distiller's ``X`` holds its `between_points` too), each the one that lowers
        the unmoved Omega, on every row, most
        (`ssgallery.learn.initial.swap_start`: one similarity call of every row to
        every row, memory n x n; with a black-box matcher, the Gram matrix its cache
        already holds). A start holding a row of positive target keeps one. For a
        matcher whose moves gain little (a black box, Eq. 7 (eq:similarity-grad)), the
        choice of real images does most of the work.
    normalize_y : bool, default=False
        Standardise y (weighted mean 0, variance 1) before fitting; ``beta_`` and
        ``intercept_`` are mapped back to the units of y. Then ``lam`` is relative to the
        targets' variance and ``tol`` (L-BFGS-B's ftol, relative to max(Omega, 1)) still
        means something for targets of small variance. Regression uses it; the SVM
        distillation (decision values of order 1) does not.

    Attributes
    ----------
    prototypes_ : ndarray of shape (m, d)
    initial_prototypes_ : ndarray of shape (m, d)
        Where the kept run started.
    beta_ : ndarray of shape (m,)
    intercept_ : float
    lam_ : float
        The absolute ridge penalty of Eq. 2 (eq:objective) used in the fit.
    lam_sum_ : float
        The absolute penalty on (sum_j beta_j)^2 used in the fit.
    objective_ : float
        Final training Omega (on the standardised targets when ``normalize_y``).
    objective_path_ : ndarray of shape (k, 2)
        Rows (cumulative similarity evaluations, Omega) for the kept run (varpro: the
        best Omega so far at each objective evaluation; paper: Omega after each move).
    n_similarity_evals_ : int
        Every s(x, z) entry computed over all restarts, z-z repulsion entries and the
        similarity scale (``lam_scale="gram"``) included.
    n_iter_ : int
    similarity_ : Similarity
        The resolved similarity.
    n_features_in_ : int
    """

    _parameter_constraints: ClassVar[dict] = {**LEARNER_CONSTRAINTS,
                                              "prototypes_init": ["array-like", None],
                                              "normalize_y": ["boolean"]}

    def __init__(self, n_prototypes=2, *, similarity="rbf", gamma="paper", lam=DEFAULT_LAM,
                 lam_scale=DEFAULT_LAM_SCALE, solver="varpro", init="class",
                 prototypes_init=None, n_init=DEFAULT_N_INIT, bounds=None,
                 eta=0.5, normalize_step=False, repulsion=True, max_iter=200, tol=1e-6,
                 random_state=None, normalize_y=False, refresh_every=1, start_candidates=1,
                 swap_rounds=0, lam_sum=0.0):
        self.n_prototypes = n_prototypes
        self.similarity = similarity
        self.gamma = gamma
        self.lam = lam
        self.lam_sum = lam_sum
        self.lam_scale = lam_scale
        self.solver = solver
        self.init = init
        self.prototypes_init = prototypes_init
        self.n_init = n_init
        self.bounds = bounds
        self.eta = eta
        self.normalize_step = normalize_step
        self.repulsion = repulsion
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.normalize_y = normalize_y
        self.refresh_every = refresh_every
        self.start_candidates = start_candidates
        self.swap_rounds = swap_rounds

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, candidates=None):
        """Fit prototypes, beta and b.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
        sample_weight : array-like of shape (n,), optional
            u_i of Eq. 2 (eq:objective), normalised to sum 1.
        candidates : array-like of bool, shape (n,), optional
            The rows starts and swaps may be made of (default: every row); Omega is on
            every row (`ssgallery.learn.targets.with_mirrors`).

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        u = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if u.sum() <= 0:
            raise ValueError("sample_weight must have a positive sum")
        u = u / u.sum()
        u_start = _start_weights(u, candidates)
        y_mean, y_scale = 0.0, 1.0
        if self.normalize_y:
            y_mean = float(u @ y)
            y_scale = float(np.sqrt(u @ (y - y_mean) ** 2)) or 1.0
            y = (y - y_mean) / y_scale
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))
        self.similarity_ = resolve_similarity(self.similarity, self.gamma, X)
        counter = CountingSimilarity(self.similarity_)
        self.lam_, self.lam_sum_ = float(self.lam), float(self.lam_sum)
        if self.lam_scale == "gram" and (self.lam_ > 0 or self.lam_sum_ > 0):
            scale = similarity_scale(X, u, counter)  # its entries count as evaluations
            self.lam_, self.lam_sum_ = self.lam_ * scale, self.lam_sum_ * scale
        best = None
        for restart in range(self.n_init):
            Z0 = self._start(X, y, u, u_start, counter, rng, restart)
            start = counter.n_evals
            out = self._solve(X, y, u, Z0, counter)
            if best is None or out[3] < best[0][3]:
                best = (out, start, Z0)
        self._keep(best, y_mean, y_scale, counter.n_evals)
        return self

    def _start(self, X, y, u, u_start, similarity, rng, restart):
        """Where restart ``restart`` starts, shape (m, d): the first from
        ``prototypes_init`` as given, or from the ``init`` rule's start (the least-Omega
        of ``start_candidates`` starts above 1) improved by ``swap_rounds`` swaps; the
        others from the ``init`` rule's restarts. Starts and swaps are made of the rows
        of positive ``u_start`` (n,); Omega is on every row, with weights ``u`` (n,)."""
        m, d = self.n_prototypes, X.shape[1]
        if restart > 0:
            return initial_prototypes(X, y, u_start, m, self.init, rng, restart)
        if self.prototypes_init is not None:
            Z0 = np.array(self.prototypes_init, dtype=float)
            if Z0.shape != (m, d):
                raise ValueError(f"prototypes_init has shape {Z0.shape}, expected {(m, d)}")
            return Z0
        if self.start_candidates > 1:
            starts = candidate_starts(X, y, u_start, m, self.init, rng, self.start_candidates)
            Z0, _ = least_omega_start(X, y, u, starts, similarity, self.lam_,
                                      self.lam_sum_)
        else:
            Z0 = initial_prototypes(X, y, u_start, m, self.init, rng, restart)
        return swap_start(X, y, u, Z0, similarity, self.lam_, self.swap_rounds,
                          rows=np.flatnonzero(u_start > 0), lam_sum=self.lam_sum_)

    def _solve(self, X, y, u, Z0, similarity):
        """One run of the ``solver`` from the prototypes ``Z0`` (m, d): its
        ``(Z, beta, b, omega, n_iter, path)`` (`ssgallery.learn.solvers.solve_varpro`,
        `ssgallery.learn.solvers.solve_paper`)."""
        bounds = None
        if self.bounds is not None:
            bounds = (np.asarray(self.bounds[0], float), np.asarray(self.bounds[1], float))
        if self.solver == "paper":
            return solve_paper(X, y, u, Z0, similarity, self.lam_, eta=self.eta,
                               normalize_step=self.normalize_step, repulsion=self.repulsion,
                               bounds=bounds, max_iter=self.max_iter, tol=self.tol,
                               refresh_every=self.refresh_every, lam_sum=self.lam_sum_)
        return solve_varpro(X, y, u, Z0, similarity, self.lam_, repulsion=self.repulsion,
                            bounds=bounds, max_iter=self.max_iter, tol=self.tol,
                            lam_sum=self.lam_sum_)

    def _keep(self, best, y_mean, y_scale, n_evals):
        """Set the fitted attributes from the kept run ``best``: ``(run, start, Z0)``, the
        solver's output, the similarity evaluations counted before it and its start;
        ``beta_`` and ``intercept_`` back in the units of y (``y_mean``, ``y_scale``)."""
        (Z, beta, b, omega, n_iter, path), start, Z0 = best
        self.initial_prototypes_ = Z0
        self.prototypes_ = _dead_at_start(Z, beta, Z0)
        self.beta_ = np.asarray(beta, dtype=float) * y_scale
        self.intercept_ = float(b) * y_scale + y_mean
        self.objective_ = float(omega)
        path = np.array(path, dtype=float)
        path[:, 0] -= start
        self.objective_path_ = path
        self.n_similarity_evals_ = int(n_evals)
        self.n_iter_ = int(n_iter)

    def predict(self, X):
        """g(x) = S(X, Z) beta + b, shape (n,).

        (No ``decision_function``: scikit-learn requires regressors not to have one;
        `SuperSparseDistiller` has it.)
        """
        check_is_fitted(self, "prototypes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.similarity_(X, self.prototypes_) @ self.beta_ + self.intercept_


# |beta_k| below this share of the largest |beta|: a prototype with no say in g(x)
DEAD_BETA = 1e-100


def _dead_at_start(Z, beta, Z0):
    """``Z`` (m, d) with each prototype of no weight (|beta_k| <= `DEAD_BETA` max |beta|)
    back at its start ``Z0``. Eq. 1 gives such a prototype no say, so nothing holds it
    where the data are: the repulsion term alone can throw it far outside the images'
    space (eigenface: beyond the ball `check_prototypes` allows, and compress refused
    its own model). Its start is a training row; g(x) moves by at most |beta_k| times
    the similarity's range."""
    weight = np.abs(np.asarray(beta, dtype=float))
    dead = weight <= DEAD_BETA * weight.max() if weight.size and weight.max() > 0 else []
    if not np.any(dead):
        return Z
    Z = np.array(Z, dtype=float)
    Z[dead] = Z0[dead]
    return Z


def _start_weights(u, candidates):
    """``u`` (n,) with 0 on the rows that are not ``candidates`` (what the start rules
    and swaps choose among: rows of positive weight)."""
    if candidates is None:
        return u
    candidates = np.asarray(candidates)
    if candidates.dtype != bool or candidates.shape != u.shape:
        raise ValueError(f"candidates must be a boolean mask of shape {u.shape}")
    u_start = np.where(candidates, u, 0.0)
    if not np.any(u_start > 0):
        raise ValueError("candidates holds no row of positive weight")
    return u_start
