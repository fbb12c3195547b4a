"""Choosing the number of prototypes m (paper Eq. 8 (eq:xval-m), incremental CV).

L(m) = l(m) + rho * m, with l(m) a validation loss. For a decreasing grid
m_1 > ... > m_K, each fold fits m_1 prototypes, then repeatedly drops the prototypes
with the smallest |beta| and warm-starts the next smaller m from the survivors.
"""

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold, check_cv

from ssgallery.learn.supersparse import SuperSparseDistiller, SuperSparseRegressor


class MSelection:
    """Result of :func:`select_n_prototypes`.

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


def incremental_fits(regressor, X, y, u, m_grid):
    """Fit the grid m_1 > ... > m_K with warm starts (Eq. 8 (eq:xval-m) procedure).

    Parameters
    ----------
    regressor : SuperSparseRegressor
        Template (cloned; its ``n_prototypes`` is overridden).
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
        Targets and sample weights.
    m_grid : sequence of int

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
        prev = clone(regressor).set_params(**params).fit(X, y, sample_weight=u)
        models[m] = prev
    return models


def _loss(kind, pred, target, labels, u):
    if kind == "mse":
        return float(u @ (pred - target) ** 2 / u.sum())
    if kind == "error":
        return float(u @ (np.sign(pred) != np.sign(labels)) / u.sum())
    raise ValueError(f"loss must be 'mse' or 'error', got {kind!r}")


def select_n_prototypes(estimator, X, y, m_grid=(10, 5, 3, 2, 1), rho=1e-3, cv=5,
                        sample_weight=None, loss="mse", random_state=0, refit=True):
    """Pick m minimising L(m) = l(m) + rho m on validation folds (Eq. 8 (eq:xval-m)).

    Parameters
    ----------
    estimator : SuperSparseRegressor or SuperSparseDistiller
        For a distiller the teacher is fitted once on all of X (unless prefit); its
        decision values are the targets and the class-balancing weights the u_i.
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
    loss : {"mse", "error"}, default="mse"
        Weighted mean squared error against the targets, or weighted sign error
        (against sign(y) for a regressor, the labels for a distiller).
    random_state : int, default=0
        Fold shuffling.
    refit : bool, default=True
        Refit on all data and return it as ``best_estimator_``.

    Returns
    -------
    MSelection
    """
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    grid = sorted({int(v) for v in m_grid}, reverse=True)
    if not grid or grid[-1] < 1:
        raise ValueError(f"m_grid must hold positive integers, got {m_grid!r}")
    if loss not in ("mse", "error"):
        raise ValueError(f"loss must be 'mse' or 'error', got {loss!r}")
    if isinstance(estimator, SuperSparseDistiller):
        dist = clone(estimator)
        if estimator.prefit:  # clone() would drop the fitted teacher: keep the object
            dist.set_params(teacher=estimator.teacher)
        teacher, targets, u, X = dist.teacher_targets(X, y)
        labels = np.where(np.asarray(y) == dist.classes_[1], 1.0, -1.0)
        regressor = dist.make_regressor()
        splitter = StratifiedKFold(cv, shuffle=True, random_state=random_state) \
            if isinstance(cv, int) else check_cv(cv)
    elif isinstance(estimator, SuperSparseRegressor):
        X = np.asarray(X, dtype=float)
        targets = labels = np.asarray(y, dtype=float)
        u = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
        regressor = estimator
        splitter = KFold(cv, shuffle=True, random_state=random_state) \
            if isinstance(cv, int) else check_cv(cv)
    else:
        raise TypeError("estimator must be a SuperSparseRegressor or SuperSparseDistiller")

    losses = {m: [] for m in grid}
    for train, val in splitter.split(X, np.sign(labels)):
        models = incremental_fits(regressor, X[train], targets[train], u[train], grid)
        for m, model in models.items():
            losses[m].append(_loss(loss, model.predict(X[val]), targets[val], labels[val],
                                   u[val]))
    path = {}
    for m in grid:
        mean = float(np.mean(losses[m]))
        path[m] = {"loss": mean, "loss_std": float(np.std(losses[m])), "L": mean + rho * m}
    best_m = min(grid, key=lambda m: (path[m]["L"], m))
    best = None
    if refit:
        model = incremental_fits(regressor, X, targets, u, [m for m in grid if m >= best_m])
        model = model[best_m]
        if isinstance(estimator, SuperSparseDistiller):
            dist.set_params(n_prototypes=best_m)
            dist.teacher_, dist.regressor_ = teacher, model
            best = dist
        else:
            best = model
    return MSelection(best_m, path, rho, loss, best)
