"""A matcher refitted on subsets of one set of images, and every image mapped into each
refit's space (what compress's threshold CV needs: `ssgallery.app.fold_spaces`).

`Refits` fits the matcher on each subset: any matcher. `EigenfaceRefits` gives the same
spaces for eigenface without touching a pixel after its start: the principal axes of
a subset's centred images are ``v_k = A^T u_k / s_k``, where ``u_k, s_k^2`` are the
eigenvectors and eigenvalues of the subset's (n, n) centred Gram matrix ``A A^T``
(the snapshot method of Sirovich 1987, which Turk & Pentland 1991 use to compute
eigenfaces), so the coefficient of any image x is ``(x - mean) A^T u_k / s_k``: a
column of the same Gram matrix. The Gram matrix of all N images is computed once,
O(N^2 p) for p pixels; each refit then costs an (n, n) eigendecomposition and an
(N, n) x (n, d) product instead of an SVD of the (n, p) pixels (p = H W >> n) and
the failure-to-acquire calibration that `EigenfaceMatcher.fit` also does.
"""

import numpy as np

from ssgallery.errors import InputError
from ssgallery.learn.similarity import RBFSimilarity

GRAM_BLOCK = 2048  # pixels per block of the Gram matrix: bounds its float64 temporaries
READ_ROWS = 256  # images read at a time


def subset_refits(cls, config, images):
    """The refits of matcher class ``cls`` with constructor parameters ``config`` on
    subsets of ``images`` (N, H, W): ``cls.subset_refits`` when the class has one (a
    cheaper equivalent of fitting), else `Refits`."""
    hook = getattr(cls, "subset_refits", None)
    return hook(config, images) if hook is not None else Refits(cls, config, images)


def _pixels(images):
    """The images as one (N, p) array, read `READ_ROWS` at a time: uint8 when every
    pixel is an integer on [0, 255] (a quarter of float32), else float32."""
    parts, exact = [], True
    for start in range(0, len(images), READ_ROWS):
        rows = np.asarray(images[start:start + READ_ROWS], dtype=np.float32)
        rows = rows.reshape(len(rows), -1)
        small = np.clip(rows, 0, 255).astype(np.uint8)
        exact = exact and np.array_equal(small, rows)
        parts.append(small if exact else rows)
    if not exact:
        parts = [p.astype(np.float32) for p in parts]
    return np.concatenate(parts)


class Refits:
    """A matcher fitted on subsets of images (any matcher: ``fit`` per subset).

    Parameters
    ----------
    cls : type
        The matcher class.
    config : dict
        Its constructor parameters.
    images : array-like of shape (N, H, W)
        Every image (an array, or rows read on demand: ``images[a:b]``); kept
        (float32) to fit and to map.
    """

    def __init__(self, cls, config, images):
        self.cls, self.config = cls, dict(config)
        self.images = np.asarray(images[0:len(images)], dtype=np.float32)

    def space(self, keep):
        """``(X, similarity, bounds)`` of the matcher fitted on the images ``keep``
        (bool mask (N,) or indices); X has shape (N, d) over every image."""
        matcher = self.cls(**self.config).fit(self.images[keep])
        return matcher.transform(self.images), matcher.similarity(), matcher.bounds()


class EigenfaceRefits:
    """`ssgallery.matchers.eigenface.EigenfaceMatcher` fitted on subsets of images,
    from their Gram matrix (see the module docstring).

    The spaces equal those of ``EigenfaceMatcher(**config).fit(images[keep])`` mapping
    every image, up to floating-point rounding (they are closer to the exact PCA than
    the fitted matcher, whose axes are stored as float32) and the sign of each axis
    (here: the largest-magnitude coefficient over the subset is positive), which no RBF
    distance sees.

    Parameters
    ----------
    cls : type
        ``EigenfaceMatcher`` (or a subclass): its parameter checks, its rule for the
        number of components kept and for gamma.
    config : dict
        Its parameters (variance, n_components, gamma).
    images : array-like of shape (N, H, W)
        Every image, pixels on [0, 255] (an array, or rows read on demand:
        ``images[a:b]``); read once, `READ_ROWS` at a time, not kept.

    Attributes
    ----------
    gram_ : ndarray of shape (N, N)
        ``(X - mean) (X - mean)^T`` of the flattened images, centred on their mean.
    """

    def __init__(self, cls, config, images):
        self.cls, self.config = cls, dict(config)
        cls(**self.config)._check_params()
        X = _pixels(images)
        mean = X.mean(0, dtype=np.float64)
        self.gram_ = np.zeros((len(X), len(X)))
        for b in range(0, X.shape[1], GRAM_BLOCK):
            block = X[:, b:b + GRAM_BLOCK] - mean[b:b + GRAM_BLOCK]  # float64
            self.gram_ += block @ block.T

    def space(self, keep):
        """``(X, similarity, None)`` of eigenface fitted on the images ``keep`` (bool
        mask (N,) or indices); X has shape (N, d): the scaled coefficients of every
        image."""
        rows = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        n = len(rows)
        if n < 2:
            raise InputError(f"eigenface: need at least 2 training images, got {n}")
        C = self.gram_[:, rows]
        inner = C[rows]
        # (x - mean_S) . (a - mean_S) for every image x and subset image a
        C = C - C.mean(1)[:, None] - inner.mean(0)[None, :] + inner.mean()
        w, U = np.linalg.eigh(C[rows])
        w, U = w[::-1], U[:, ::-1]
        var = np.clip(w, 0.0, None) / (n - 1)
        matcher = self.cls(**self.config)
        d = matcher._n_kept(var)
        Z = C @ (U[:, :d] / np.sqrt(w[:d]))
        Z /= np.sqrt(var[:d].mean())  # EigenfaceMatcher.scale_
        top = np.argmax(np.abs(Z[rows]), axis=0)
        Z *= np.sign(Z[rows][top, np.arange(d)])
        matcher.n_components_ = d
        gamma = matcher._resolve_gamma(lambda: Z[rows])
        return Z, RBFSimilarity(gamma), None
