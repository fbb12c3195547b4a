"""Face space of the eigenface matcher (`ssgallery.matchers.eigenface`): the PCA of
images (`pca`), a row's distances from and in face space (`face_space_distances`), a
stored variance-ratio check (`shares`), and the failure-to-acquire limits calibrated on
held-out folds (`quality_folds`, `quality_limits`; the matcher's module docstring says
why). Pure numpy (on the ``verify`` path).
"""

import numpy as np

# Failure-to-acquire calibration (see ssgallery.matchers.eigenface's docstring); margins chosen by
# measurement on AT&T and the sample data (docs/security.md gives the command).
QUALITY_FOLDS = 5
QUALITY_MAX_IMAGES = 600
RELATIVE_DFFS_MARGIN = 1.25
RELATIVE_DFFS_CAP = 0.95  # 90 % of the probe's contrast energy outside face space
DIFS_MARGIN = 1.5


def pca(X):
    """Mean (p,), variances (r,) and axes (r, p) of the rows of X (n, p)."""
    mean = X.mean(0)
    # SVD of the (n, p) centred data; n << p for faces, so this is the cheap side.
    _, s, Vt = np.linalg.svd(X - mean, full_matrices=False)
    return mean, s ** 2 / max(len(X) - 1, 1), Vt


def face_space_distances(X, mean, components, variance, each=False):
    """Per row of X (n, p): DFFS relative to the row's contrast (RMS residual / pixel
    standard deviation; inf for a uniform image) and DIFS (RMS of the coefficients
    in units of their training standard deviations). Two arrays of shape (n,). With
    ``each``, every row is projected as it would be alone
    (`ssgallery.learn.similarity.rowwise_matmul`): its distances do not depend on the
    other rows to the last bit."""
    from ssgallery.learn.similarity import rowwise_matmul

    product = rowwise_matmul if each else np.matmul
    Xc = X - mean
    Z = product(Xc, components.T)
    dffs = np.sqrt(np.mean((Xc - product(Z, components)) ** 2, axis=1))
    contrast = X.std(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(contrast > 1e-6, dffs / contrast, np.inf)
    difs = np.sqrt(np.mean(Z ** 2 / variance, axis=1))
    return relative, difs


def difs_ceiling(mean, variance):
    """The largest DIFS (`face_space_distances`) an image of pixels on [0, 255] can have
    in the face space of ``mean`` (p,) and ``variance`` (d,), or a little more: its
    distance from the mean is at most the pixel box's farthest corner's, its
    coefficients' norm at most that distance (orthonormal axes), each divided by at least
    the smallest variance. A ``max_difs`` above it refuses no image for its DIFS:
    `quality_limits` caps the limit there, and a stored one above it is no fit's."""
    mean = np.asarray(mean, dtype=np.float64)
    far = np.linalg.norm(np.maximum(mean, 255.0 - mean))
    return float(far / np.sqrt(len(variance) * np.min(variance)))


def shares(ratio, d):
    """A stored ``explained_variance_ratio`` as a fit gives it: (d,) shares in (0, 1]
    summing to at most 1 (up to rounding)."""
    return bool(ratio.shape == (d,) and np.isfinite(ratio).all() and (ratio > 0).all()
                and (ratio <= 1).all() and ratio.sum() <= 1 + 1e-9)


def quality_folds(idx, groups):
    """The held-out folds (rows of ``idx``) of the failure-to-acquire calibration and
    what they hold out: folds of people (``"people"``) when ``groups`` (the person of
    each image) names two or more (`ssgallery.matchers.eigenface`'s docstring), else
    folds of images (``"images"``)."""
    people = None if groups is None else np.asarray(groups).astype(str)[idx]
    if people is None or len(set(people.tolist())) < 2:
        return np.array_split(idx, min(QUALITY_FOLDS, len(idx))), "images"
    order = list(dict.fromkeys(people.tolist()))  # first seen in the seeded permutation
    return [idx[np.isin(people, part)] for part in
            np.array_split(np.array(order), min(QUALITY_FOLDS, len(order)))], "people"


def quality_limits(X, groups, d, mean_, components_, variance_):
    """The failure-to-acquire limits ``(max_relative_dffs, max_difs, folds)`` of a
    matcher fitted on the rows of ``X`` (n, p) with ``d`` components (``mean_``,
    ``components_``, ``variance_``): from k-fold held-out training images (at most
    `QUALITY_MAX_IMAGES`, seeded; folds of `quality_folds`, ``groups`` the person of
    each row or None), times their margins (the first capped at `RELATIVE_DFFS_CAP`,
    the second at `difs_ceiling`); ``folds`` is what the folds held out (``"people"`` or
    ``"images"``)."""
    idx = np.random.default_rng(0).permutation(len(X))[:QUALITY_MAX_IMAGES]
    relative, difs = [], []
    folds, held_out = quality_folds(idx, groups)
    for fold in folds:
        rest = np.setdiff1d(idx, fold)
        mean, var, Vt = pca(X[rest])
        keep = min(d, int(np.sum(var > var[0] * 1e-10)))
        if keep >= 1:
            r, f = face_space_distances(X[fold], mean, Vt[:keep], var[:keep])
            relative.append(r)
            difs.append(f)
    difs.append(face_space_distances(X, mean_, components_, variance_)[1])
    relative = np.concatenate(relative) if relative else np.empty(0)
    relative = relative[np.isfinite(relative)]  # a uniform training image says nothing
    max_relative_dffs = float(min(RELATIVE_DFFS_MARGIN * relative.max(),
                                  RELATIVE_DFFS_CAP)) if relative.size \
        else RELATIVE_DFFS_CAP
    max_difs = min(DIFS_MARGIN * np.max(np.concatenate(difs)), difs_ceiling(mean_, variance_))
    return max_relative_dffs, float(max_difs), held_out
