"""Choosing the number of prototypes m (paper Eq. 8 (eq:xval-m), incremental CV).

L(m) = l(m) + rho * m, with l(m) a validation loss. For a decreasing grid
m_1 > ... > m_K, each fold fits m_1 prototypes, then repeatedly drops the prototypes
with the smallest |beta| and warm-starts the next smaller m from the survivors.
Any other estimator with an ``n_prototypes`` parameter (the prototype-selection
baselines) goes through the same rule, fitted afresh at every m.
"""

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold, check_cv

from ssgallery.learn.supersparse import DistillerMixin, SuperSparseDistiller, SuperSparseRegressor

LOSSES = ("mse", "mae", "error")


class MSelection:
    """Result of `select_n_prototypes`.

    Attributes
    ----------
    best_m_ : int
        argmin_m L(m) (ties go to the smaller m).
    path_ : dict
        m -> {"loss": mean validation l(m), "loss_std": its std over folds,
        "L": l(m) + rho m}, for every m of the grid.
    rho : float
    loss : str
    best_estimator_ : estimator or None
        The input estimator refitted on all data with ``best_m_`` prototypes (through the
        same incremental path), when ``refit=True``.
    """

    def __init__(self, best_m, path, rho, loss, best_estimator=None):
        self.best_m_ = best_m
        self.path_ = path
        self.rho = rho
        self.loss = loss
        self.best_estimator_ = best_estimator

    def __repr__(self):
        rows = ", ".join(f"{m}: {v['L']:.4g}" for m, v in self.path_.items())
        return f"MSelection(best_m_={self.best_m_}, L={{{rows}}})"


def incremental_fits(regressor, X, y, u, m_grid, candidates=None):
    """Fit the grid m_1 > ... > m_K with warm starts (Eq. 8 (eq:xval-m) procedure).

    Parameters
    ----------
    regressor : SuperSparseRegressor
        Template (cloned; its ``n_prototypes`` is overridden).
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
        Targets and sample weights.
    m_grid : sequence of int
    candidates : ndarray of bool, shape (n,), optional
        The rows starts may be made of (`SuperSparseRegressor.fit`).

    Returns
    -------
    dict m -> fitted SuperSparseRegressor, in decreasing m
    """
    models = {}
    prev = None
    for m in sorted({int(v) for v in m_grid}, reverse=True):
        params = {"n_prototypes": m, "prototypes_init": None}
        if prev is not None:
            keep = np.sort(np.argsort(-np.abs(prev.beta_), kind="stable")[:m])
            params.update(prototypes_init=prev.prototypes_[keep], n_init=1)
        prev = clone(regressor).set_params(**params).fit(X, y, sample_weight=u,
                                                         candidates=candidates)
        models[m] = prev
    return models


def _loss(kind, pred, target, labels, u):
    if kind == "mse":
        return float(u @ (pred - target) ** 2 / u.sum())
    if kind == "mae":
        return float(u @ np.abs(pred - labels) / u.sum())
    if kind == "error":
        return float(u @ (np.sign(pred) != np.sign(labels)) / u.sum())
    raise ValueError(f"loss must be one of {LOSSES}, got {kind!r}")


def _fresh_fits(estimator, X, y, m_grid):
    """m -> estimator fitted afresh with n_prototypes=m (no warm start to exploit)."""
    return {m: clone(estimator).set_params(n_prototypes=m).fit(X, y) for m in m_grid}


def select_n_prototypes(estimator, X, y, m_grid=(10, 5, 3, 2, 1), rho=1e-3, cv=5,
                        sample_weight=None, loss="mse", random_state=0, refit=True,
                        groups=None):
    """Pick m minimising L(m) = l(m) + rho m on validation folds (Eq. 8 (eq:xval-m)).

    Parameters
    ----------
    estimator : SuperSparseRegressor, a distiller, or an estimator with ``n_prototypes``
        For a distiller (`SuperSparseDistiller`, or
        `ssgallery.learn.regression.SuperSparseRegressionDistiller`) the teacher is
        fitted once on all of X (unless prefit); its outputs are the targets and its
        weights the u_i, and each fit (every fold's, the refit) adds the distiller's
        points between the classes and mirror images of its training rows, as its own
        ``fit`` does (`SuperSparseDistiller.distillation_set`). Any other estimator is
        refitted on (X, y) at every m.
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Regression targets, or the two class labels for a distiller.
    m_grid : sequence of int, default=(10, 5, 3, 2, 1)
    rho : float, default=1e-3
        Price of one prototype in units of the loss.
    cv : int or CV splitter, default=5
        int: shuffled KFold (StratifiedKFold on the labels for a distiller).
    sample_weight : array-like of shape (n,), optional
        Regressor only: u_i (also weighting the validation loss).
    loss : {"mse", "mae", "error"}, default="mse"
        Weighted mean squared error against the targets, mean absolute error against y
        (the paper's l(m) for regression, Table I), or weighted sign error (against
        sign(y) for a regressor, the labels for a distiller).
    random_state : int, default=0
        Fold shuffling.
    refit : bool, default=True
        Refit on all data and return it as ``best_estimator_``.
    groups : array-like of shape (n,), optional
        Passed to the splitter's ``split`` (e.g. subjects for ``GroupKFold``).

    Returns
    -------
    MSelection
    """
    grid = _checked_grid(m_grid, rho, loss)
    fits = _Fits(estimator, X, y, sample_weight)
    if not isinstance(cv, int):
        splitter = check_cv(cv)
    elif fits.classify:
        splitter = StratifiedKFold(cv, shuffle=True, random_state=random_state)
    else:
        splitter = KFold(cv, shuffle=True, random_state=random_state)
    losses = {m: [] for m in grid}
    for train, val in splitter.split(fits.X, np.sign(fits.labels), groups):
        for m, model in fits(train, grid).items():
            losses[m].append(_loss(loss, model.predict(fits.X[val]), fits.targets[val],
                                   fits.labels[val], fits.u[val]))
    path = {}
    for m in grid:
        mean = float(np.mean(losses[m]))
        path[m] = {"loss": mean, "loss_std": float(np.std(losses[m])), "L": mean + rho * m}
    best_m = min(grid, key=lambda m: (path[m]["L"], m))
    best = fits.refit(best_m, grid) if refit else None
    return MSelection(best_m, path, rho, loss, best)


def _checked_grid(m_grid, rho, loss):
    """`select_n_prototypes`' ``m_grid`` as distinct integers in decreasing order, after
    checking it, ``rho`` and ``loss``."""
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    grid = sorted({int(v) for v in m_grid}, reverse=True)
    if not grid or grid[-1] < 1:
        raise ValueError(f"m_grid must hold positive integers, got {m_grid!r}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return grid


class _Fits:
    """What `select_n_prototypes` fits at every m of its grid, and on which data.

    For a distiller: its teacher, fitted once on all of ``X`` (n, d) (unless prefit),
    gives the ``targets`` and the weights ``u`` (n,), and a `SuperSparseDistiller`'s fits
    add its points between the classes and mirror images (`distillation_set`). Any other
    estimator: ``y`` (n,) itself, ``sample_weight`` (default 1), fitted afresh at every
    m unless it is a `SuperSparseRegressor` (`incremental_fits`). Calling it with rows
    of ``X`` and a grid returns m -> the model fitted on those rows.
    """

    def __init__(self, estimator, X, y, sample_weight):
        self.classify = isinstance(estimator, SuperSparseDistiller)
        self.fits, self.dist, self.teacher = incremental_fits, None, None
        if isinstance(estimator, DistillerMixin):
            dist = self.dist = clone(estimator)
            if estimator.prefit:  # clone() would drop the fitted teacher: keep the object
                dist.set_params(teacher=estimator.teacher)
            self.teacher, self.targets, self.u, self.X = dist.teacher_targets(X, y)
            self.labels = (np.where(np.asarray(y) == dist.classes_[1], 1.0, -1.0)
                           if self.classify else np.asarray(y, dtype=float))
            self.regressor = dist.make_regressor()
        elif hasattr(estimator, "n_prototypes") and hasattr(estimator, "fit"):
            self.X = np.asarray(X, dtype=float)
            self.targets = self.labels = np.asarray(y, dtype=float)
            self.u = (np.ones(len(self.X)) if sample_weight is None
                      else np.asarray(sample_weight, float))
            self.regressor = estimator
            if not isinstance(estimator, SuperSparseRegressor):
                self.fits = lambda est, X_, y_, _u, ms, _c=None: _fresh_fits(est, X_, y_, ms)
        else:
            raise TypeError("estimator must be a SuperSparseRegressor, a distiller or an "
                            "estimator with an n_prototypes parameter")

    def __call__(self, rows, ms):
        """m -> the model fitted on the rows ``rows`` of X, for every m of ``ms``."""
        X, targets, u = self.X[rows], self.targets[rows], self.u[rows]
        if not self.classify:
            return self.fits(self.regressor, X, targets, u, ms)
        X_, t_, u_, candidates = self.dist.distillation_set(X, targets, u,
                                                            self.labels[rows], self.teacher)
        return self.fits(self.regressor, X_, t_, u_, ms, candidates)

    def refit(self, best_m, grid):
        """The estimator fitted on all of X with ``best_m`` prototypes (through the grid's
        larger m for incremental fits): a distiller with its teacher, or the model."""
        path_ms = [m for m in grid if m >= best_m] if self.fits is incremental_fits \
            else [best_m]
        model = self(np.arange(len(self.X)), path_ms)[best_m]
        if self.dist is None:
            return model
        self.dist.set_params(n_prototypes=best_m)
        self.dist.teacher_, self.dist.regressor_ = self.teacher, model
        return self.dist
