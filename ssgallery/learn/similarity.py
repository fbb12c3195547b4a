"""Similarity functions s(x, z) as the learner sees them.

A similarity maps two batches to a matrix, ``S = sim(X, Z)`` with ``S[i, j] =
s(X[i], Z[j])``, shape (n, m). The learner never assumes it is symmetric or positive
semi-definite. Where the similarity is differentiable it also gives the gradient of
s(x_i, z_j) with respect to z_j; a black-box similarity gets the paper's heuristic
gradient (Eq. 7 (eq:similarity-grad)) through `HeuristicGradient`.

Two gradient entry points, both vectorised over all (i, j):

- ``gradient(X, Z, S=None)`` -> (n, m, d): ds(x_i, z_j)/dz_j. Needed by the full
  Eq. 5 (eq:gradient-z) + Eq. 6 (eq:final-gradient) form; memory n*m*d.
- ``contract_gradient(X, Z, W, S=None)`` -> (m, d): sum_i W[i, j] ds(x_i, z_j)/dz_j.
  All the reduced (envelope) gradient needs; memory (n + m) * d.
"""

import numpy as np


def rowwise_matmul(A, B):
    """``A @ B`` for A (n, k) and B (k, m) or (k,), each row of the result computed as
    that row alone would be: one (1, k) @ B product per row (numpy's stacked matmul),
    so its digits never depend on the other rows. One gemm over a block of rows sums in
    an order of its own that depends on the block's size (and a single row goes through
    gemv): a probe's score would change in its last digits with the batch it came in.
    Slower than one gemm when n and k are large: for what ``verify`` prints, not for
    training."""
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    if B.ndim == 1:
        return np.matmul(A[:, None, :], B[:, None])[:, 0, 0]
    return np.matmul(A[:, None, :], B)[:, 0, :]


class Similarity:
    """Base class. Subclasses implement `__call__` and, if they can, `gradient`.

    Attributes
    ----------
    has_gradient : bool
        True when `gradient` is exact (analytic), False when approximated.
    """

    has_gradient = False

    def __call__(self, X, Z):
        """Similarity matrix, shape (n, m), ``S[i, j] = s(X[i], Z[j])``."""
        raise NotImplementedError

    def gradient(self, X, Z, S=None):
        """ds(x_i, z_j)/dz_j for all i, j, shape (n, m, d)."""
        raise NotImplementedError(f"{type(self).__name__} has no gradient")

    def contract_gradient(self, X, Z, W, S=None):
        """sum_i W[i, j] ds(x_i, z_j)/dz_j, shape (m, d). ``W`` has shape (n, m)."""
        G = self.gradient(X, Z, S)
        return np.einsum("ij,ijd->jd", W, G)

    def params(self):
        """Parameters to store with a model (JSON-serialisable dict)."""
        return {"kind": type(self).__name__}


class RBFSimilarity(Similarity):
    """s(x, z) = exp(-gamma ||x - z||^2) with its analytic gradient.

    ds(x, z)/dz = 2 gamma s(x, z) (x - z)  (paper, Sect. III, "Gradient of s").

    Parameters
    ----------
    gamma : float
        Kernel width, > 0.
    rowwise : bool
        Compute each row of ``S`` as that row alone would be (`rowwise_matmul`): the
        scores ``verify`` prints, whatever the batch. Default: one gemm (training).
    """

    has_gradient = True

    def __init__(self, gamma=1.0, rowwise=False):
        self.gamma = float(gamma)
        self.rowwise = bool(rowwise)

    def sq_distances(self, X, Z):
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        if self.rowwise:
            xx = np.matmul(X[:, None, :], X[:, :, None])[:, 0, 0]  # each row's x.x alone
            D = xx[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * rowwise_matmul(X, Z.T)
        else:
            D = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * X @ Z.T
        return np.maximum(D, 0.0)

    def __call__(self, X, Z):
        return np.exp(-self.gamma * self.sq_distances(X, Z))

    def gradient(self, X, Z, S=None):
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        if S is None:
            S = self(X, Z)
        return 2.0 * self.gamma * S[:, :, None] * (X[:, None, :] - Z[None, :, :])

    def contract_gradient(self, X, Z, W, S=None):
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        if S is None:
            S = self(X, Z)
        WS = W * S  # (n, m)
        return 2.0 * self.gamma * (WS.T @ X - WS.sum(0)[:, None] * Z)

    def params(self):
        return {"kind": "rbf", "gamma": self.gamma}

    def __repr__(self):
        return f"RBFSimilarity(gamma={self.gamma:g})"


MEDIAN_GAMMA_MAX_SAMPLES = 2000


def median_gamma(X, D=None, max_samples=MEDIAN_GAMMA_MAX_SAMPLES):
    """The "median" RBF width: 1 / median squared distance between distinct rows of X.

    The one rule used by every ``gamma="median"`` (estimators, SVM teacher, eigenface):
    the median is taken over the pairs (i < j) of rows, leaving out pairs at distance 0
    (repeated rows carry no scale); above ``max_samples`` rows, over a seeded random
    subset of that many rows. When every row coincides, any width gives the same
    similarities and the result is 1.0.

    Parameters
    ----------
    X : array-like of shape (n, d)
    D : ndarray of shape (n, n), optional
        The squared distances between the rows of X, if already computed.
    max_samples : int, default=2000

    Returns
    -------
    float
    """
    n = len(X)
    rows = None
    if n > max_samples:
        rows = np.sort(np.random.default_rng(0).choice(n, max_samples, replace=False))
    if D is None:
        Xs = np.asarray(X, dtype=float) if rows is None else np.asarray(X, dtype=float)[rows]
        D = RBFSimilarity().sq_distances(Xs, Xs)
    elif rows is not None:
        D = D[np.ix_(rows, rows)]
    d = D[np.triu_indices(len(D), k=1)]
    d = d[d > 0]
    return 1.0 / float(np.median(d)) if len(d) else 1.0


class CallableSimilarity(Similarity):
    """Wrap a function ``f(X, Z) -> (n, m)`` (e.g. an external matcher) as a Similarity."""

    def __init__(self, func, name=None):
        self.func = func
        self.name = name or getattr(func, "__name__", "callable")

    def __call__(self, X, Z):
        S = np.asarray(self.func(X, Z), dtype=float)
        n, m = len(X), len(Z)
        if S.shape != (n, m):
            raise ValueError(f"similarity {self.name} returned shape {S.shape}, expected {(n, m)}")
        return S

    def __repr__(self):
        return f"CallableSimilarity({self.name})"


class HeuristicGradient(Similarity):
    """Adapter giving a black-box similarity the paper's heuristic gradient
    (Eq. 7 (eq:similarity-grad)).

    ds(x_i, z_j)/dz_j ~= s(x_i, z_j) (x_i - z_j): moving z_j linearly towards x_i
    raises the similarity, which holds for images (paper, Sect. III).

    Parameters
    ----------
    base : Similarity or callable
        The black-box similarity ``(X, Z) -> (n, m)``.
    """

    has_gradient = False

    def __init__(self, base):
        self.base = base if isinstance(base, Similarity) else CallableSimilarity(base)

    def __call__(self, X, Z):
        return self.base(X, Z)

    def gradient(self, X, Z, S=None):
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        if S is None:
            S = self(X, Z)
        return S[:, :, None] * (X[:, None, :] - Z[None, :, :])  # Eq. 7 (eq:similarity-grad)

    def contract_gradient(self, X, Z, W, S=None):
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        if S is None:
            S = self(X, Z)
        WS = W * S
        return WS.T @ X - WS.sum(0)[:, None] * Z  # Eq. 7 (eq:similarity-grad), summed over i

    def __repr__(self):
        return f"HeuristicGradient({self.base!r})"
