"""What a distiller fits besides the paper's training points and targets: the class
weights u_i of Eq. 2 (eq:objective), the teacher's outputs at points between the
classes (``between``) and at the training images' mirror images (``mirror``).
"""

import numpy as np
from sklearn.utils import check_random_state

from ssgallery.learn.defaults import MAX_BETWEEN_POINTS

__all__ = ["balanced_weights", "between_points", "with_between", "with_mirrors"]


def balanced_weights(labels):
    """u_i giving each class (labels > 0 vs the rest) a total weight of 1/2."""
    pos = np.asarray(labels) > 0
    u = np.empty(len(pos))
    for mask in (pos, ~pos):
        if mask.any():
            u[mask] = 0.5 / mask.sum()
    return u / u.sum()


def between_points(X, labels, random_state=None, max_points=MAX_BETWEEN_POINTS):
    """Points between the classes, where a look-alike of the positive class lies: each
    negative sample's midpoint with a random positive sample, shape (k, d), k = the
    number of negative samples or ``max_points`` (a seeded sample of them), whichever
    is smaller.

    A distiller fitted on the teacher's outputs at the training points alone matches the
    teacher there; with m prototypes its function may be far from the teacher's between
    the classes, where faces of people it never saw (who look like the client) fall.
    The teacher's outputs at synthetic points are extra targets, as in model compression
    (Bucila et al. 2006, which labels synthetic points with the teacher). Midpoints of
    vectors: for an analytic similarity on a vector space (eigenface, dlib).
    """
    X = np.asarray(X, dtype=float)
    pos = np.flatnonzero(np.asarray(labels) > 0)
    neg = np.flatnonzero(np.asarray(labels) <= 0)
    if pos.size == 0 or neg.size == 0:
        return np.empty((0, X.shape[1]))
    rng = check_random_state(random_state)
    if neg.size > max_points:  # bounded cost: a sample of the impostors
        neg = np.sort(rng.choice(neg, size=max_points, replace=False))
    mate = rng.randint(0, pos.size, size=neg.size)
    return 0.5 * (X[neg] + X[pos[mate]])


def with_between(X, targets, u, labels, teacher, weight, random_state=None):
    """The training points, targets and weights, plus the teacher's outputs at the
    `between_points` with a total weight of ``weight`` times the training points'
    (nothing added at 0).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    targets, u : ndarray, shape (n,)
        The teacher's outputs at X and their weights.
    labels : ndarray, shape (n,)
        +1 for the positive class, -1 for the rest.
    teacher : estimator with ``decision_function``
    weight : float
    random_state : int, RandomState or None

    Returns
    -------
    X, targets, u : ndarray, shapes (n + k, d), (n + k,), (n + k,)
        k = the `between_points` when ``weight`` > 0 and both classes are present, else 0.
    """
    if float(weight) <= 0:
        return X, targets, u
    extra = between_points(X, labels, random_state)
    if extra.shape[0] == 0:
        return X, targets, u
    t = np.asarray(teacher.decision_function(extra), dtype=float).ravel()
    weights = np.full(extra.shape[0], float(weight) * u.sum() / extra.shape[0])
    return np.vstack([X, extra]), np.r_[targets, t], np.r_[u, weights]


def with_mirrors(X, targets, u, teacher, mirror, rows=None):
    """The points, targets and weights, plus the ``teacher``'s outputs at the mirror
    images of the first ``rows`` points (default all) with their weights, and which rows
    prototypes may be made of: every row but the mirror images.

    A start made of training images fits them through their self-similarity; the mirror
    images are faces no start is made of, so the unmoved Omega of Eq. 2 (eq:objective)
    that ranks swaps (`ssgallery.learn.initial.swap_start`) and the beta of Eq. 4
    (eq:beta) see how the start does off its own images.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    targets, u : ndarray, shape (n,)
    teacher : estimator with ``decision_function``
    mirror : callable or None
        Features (k, d) -> their mirror images' features (k, d)
        (`ssgallery.learn.mirror.MirrorImages`); None adds nothing.
    rows : int, optional
        Mirror the first ``rows`` points only (the training images, not the points
        between the classes after them).

    Returns
    -------
    X, targets, u : ndarray, shapes (n + k, d), (n + k,), (n + k,)
    candidates : ndarray of bool, shape (n + k,), or None
        False on the k mirror images; None when nothing was added.
    """
    if mirror is None:
        return X, targets, u, None
    k = len(X) if rows is None else int(rows)
    extra = mirror(X[:k])
    t = np.asarray(teacher.decision_function(extra), dtype=float).ravel()
    candidates = np.r_[np.ones(len(X), bool), np.zeros(k, bool)]
    return np.vstack([X, extra]), np.r_[targets, t], np.r_[u, u[:k]], candidates
