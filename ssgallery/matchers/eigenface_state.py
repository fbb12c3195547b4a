"""An eigenface matcher's state read from a file (`ssgallery.matchers.eigenface`'s
``from_state``): what its failure-to-acquire limits and their folds may be
(`stored_limits`, `stored_folds`), and the values a fit can produce (`state_problem`).
Pure numpy (on the ``verify`` path).
"""

import numpy as np

from ssgallery.errors import SsgalleryError
from ssgallery.matchers.eigenface_space import RELATIVE_DFFS_CAP, difs_ceiling, shares

FTA_FOLDS = ("people", "images")  # what the failure-to-acquire folds held out


def folds_state(folds):
    """``{"fta_folds": folds}`` when the limits' folds are known (``"people"``,
    ``"images"``); nothing for a state read from a file that did not record them."""
    return {"fta_folds": folds} if folds in FTA_FOLDS else {}


def stored_folds(value):
    """What a file's ``fta_folds`` says the limits' folds held out: ``"people"`` or
    ``"images"``, ``"unrecorded"`` when absent (written before 2026-11-28, when stores
    began to record it); anything else is refused (`SsgalleryError`)."""
    if value is None:
        return "unrecorded"
    if isinstance(value, np.ndarray) and value.shape == ():  # np.savez's copy of a state
        value = value.item()
    if not (isinstance(value, str) and value in FTA_FOLDS):
        raise SsgalleryError("eigenface: fta_folds must be 'people' or 'images'")
    return value


def stored_limits(state):
    """The failure-to-acquire limits of a stored ``state``: ``(max_relative_dffs,
    max_difs, fta_folds)``, or None for a file written before failure to acquire (no
    limits). Limits a fit cannot give are refused (`SsgalleryError`): not positive and
    finite, or ``max_relative_dffs`` above `RELATIVE_DFFS_CAP` (``max_difs`` against its
    ceiling: `state_problem`)."""
    if "max_relative_dffs" not in state:
        return None
    relative = float(np.asarray(state["max_relative_dffs"]))
    difs = float(np.asarray(state["max_difs"]))
    if not (0 < relative < np.inf and 0 < difs < np.inf):
        raise SsgalleryError("eigenface: failure-to-acquire limits must be positive and "
                             "finite")
    if relative > RELATIVE_DFFS_CAP:  # the fit caps it there
        raise SsgalleryError(f"eigenface: the failure-to-acquire limit max_relative_dffs "
                             f"{relative:.3g} is above {RELATIVE_DFFS_CAP:g}, where every fit "
                             "caps it (it would acquire images that are no face)")
    return relative, difs, stored_folds(state.get("fta_folds"))


def state_problem(m, ratio_stored=True):
    """Why the fitted attributes of an eigenface matcher ``m`` are no values a fit can
    produce, or None: finite, mean on the pixel scale, explained variances > 0 (DIFS
    divides by them: a negative one made every probe's quality NaN, a zero one 0, every
    probe a failure to acquire), a ``max_difs_`` limit at most `difs_ceiling` and the
    variances' ratios, when ``ratio_stored`` (files written before them hold none: NaN),
    shares of the total, orthonormal axes (row norms and V Vᵀ r ≈ r for a fixed generic
    r: O(d p), not O(d² p))."""
    V = m.components_
    if not (np.isfinite(m.scale_) and np.isfinite(m.gamma_)
            and np.isfinite(m.explained_variance_).all()
            and np.isfinite(V).all() and np.isfinite(m.mean_).all()):
        return "NaN or infinite values"
    if m.mean_.min() < -1.0 or m.mean_.max() > 256.0:
        return "a mean image outside the pixel range"
    if not (m.explained_variance_ > 0).all():  # a fit keeps variances > 0 only
        return "explained variances that are not positive"
    if getattr(m, "max_difs_", 0) > (1 + 1e-9) * (  # the fit caps it there
            top := difs_ceiling(m.mean_, m.explained_variance_)):
        return (f"a failure-to-acquire limit max_difs {m.max_difs_:.3g} above {top:.3g}, "
                "the largest distance in face space of any image, where every fit caps it "
                "(it would acquire images far from every face)")
    if ratio_stored and not shares(m.explained_variance_ratio_, len(V)):
        return ("explained variance ratios that are not one share of the variance per "
                "component (in (0, 1], summing to at most 1)")
    norms = np.sqrt(np.einsum("ij,ij->i", V, V, dtype=np.float64))
    r = np.cos(2.399963 * np.arange(1, len(V) + 1))  # golden angle: no numpy.random
    back = V @ (V.T @ r.astype(np.float32)).astype(np.float64)
    if np.abs(norms - 1).max() > 1e-3 or np.linalg.norm(back - r) > 1e-3 * np.linalg.norm(r):
        return "principal axes that are not orthonormal"
    return None


__all__ = ["FTA_FOLDS", "folds_state", "state_problem", "stored_folds", "stored_limits"]
