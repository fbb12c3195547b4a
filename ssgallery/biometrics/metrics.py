"""Biometric verification metrics, pure functions in the style of ``bob.measure``.

Conventions (as in bob.measure): ``negatives`` are impostor scores, ``positives``
are genuine scores, and a claim is accepted when ``score >= threshold``.

- FAR(t) = fraction of negatives accepted = #{neg >= t} / #neg
- FRR(t) = fraction of positives rejected = #{pos < t} / #pos

Failures to acquire (a probe that was not a usable face, never scored) are NaN
scores and are counted as bob.measure counts them: rejected at every threshold, so an
FTA genuine claim is a false rejection and an FTA impostor claim a correct rejection;
`fta_rates` reports both rates separately. Infinite scores are refused.

Curves are returned in order of increasing threshold, so FAR decreases from 1 to 0
and FRR increases from 0 to 1. `average_curves` brings per-client curves
onto a common FAR grid so they can be averaged over clients and repetitions
(paper Sect. IV-A: "by varying each client-specific threshold, and then by
averaging over all clients and repetitions").
"""

import numpy as np

from ssgallery.biometrics.curve_sets import Staircases, step_corners


def _scores(values, name):
    a = np.asarray(values, dtype=float).ravel()
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isinf(a).any():
        raise ValueError(f"{name} contains infinite scores")
    return a


def fta_rates(negatives, positives):
    """Failure-to-acquire rates (NaN scores): (impostor FTA rate, genuine FTA rate)."""
    neg = _scores(negatives, "negatives")
    pos = _scores(positives, "positives")
    return float(np.mean(np.isnan(neg))), float(np.mean(np.isnan(pos)))


def farfrr(negatives, positives, threshold):
    """FAR and FRR at one threshold.

    Parameters
    ----------
    negatives, positives : array-like, shape (n_neg,), (n_pos,)
        Impostor and genuine scores.
        Impostor and genuine scores; NaN is a failure to acquire (never accepted).
    threshold : float
        Claims with ``score >= threshold`` are accepted.

    Returns
    -------
    far, frr : float
    """
    neg = _scores(negatives, "negatives")
    pos = _scores(positives, "positives")
    return float(np.mean(neg >= threshold)), float(np.mean(~(pos >= threshold)))


def roc_curve(negatives, positives):
    """FAR and FRR at every distinct threshold.

    The thresholds are the distinct scores (increasing) followed by ``+inf``, so the
    curve runs from (FAR, FRR) = (1, 0) to (0, 1); with failures to acquire (NaN) from
    (1 - impostor FTA rate, genuine FTA rate).

    Returns
    -------
    far, frr, thresholds : ndarray, shape (n_t,)
    """
    neg_all = _scores(negatives, "negatives")
    pos_all = _scores(positives, "positives")
    neg = np.sort(neg_all[~np.isnan(neg_all)])
    pos = np.sort(pos_all[~np.isnan(pos_all)])
    thresholds = np.append(np.unique(np.concatenate([neg, pos])), np.inf)
    far = (neg.size - np.searchsorted(neg, thresholds, side="left")) / neg_all.size
    frr = (np.searchsorted(pos, thresholds, side="left") + (pos_all.size - pos.size)) \
        / pos_all.size
    return far, frr, thresholds


def curve_eer(far, frr):
    """EER of a curve given as points (far, frr) ordered by increasing threshold
    (FAR non-increasing, FRR non-decreasing), interpolated linearly between the two
    points where FAR - FRR changes sign."""
    far = np.asarray(far, dtype=float)
    frr = np.asarray(frr, dtype=float)
    d = far - frr
    below = np.flatnonzero(d <= 0)
    i = int(below[0]) if below.size else len(d) - 1
    if i == 0 or d[i] == 0 or d[i - 1] == d[i]:
        return float(0.5 * (far[i] + frr[i]))
    t = d[i - 1] / (d[i - 1] - d[i])  # where the segment crosses FAR = FRR
    return float(far[i - 1] + t * (far[i] - far[i - 1]))


def eer(negatives, positives):
    """Equal error rate, interpolated linearly between the two ROC points where
    FAR - FRR changes sign.

    Returns
    -------
    eer : float in [0, 1]
    """
    far, frr, _ = roc_curve(negatives, positives)
    return curve_eer(far, frr)


def eer_threshold(negatives, positives):
    """The threshold (one of the scores) where |FAR - FRR| is smallest; ties go to the
    smallest threshold."""
    far, frr, thresholds = roc_curve(negatives, positives)
    finite = np.isfinite(thresholds)
    gap = np.abs(far - frr)[finite]
    return float(thresholds[finite][int(np.argmin(gap))])


def threshold_at_far(negatives, far):
    """Smallest threshold whose FAR on ``negatives`` is at most ``far``.

    With n impostor scores, at most floor(far * n) of them may be accepted; the
    returned threshold sits just above the next one (``numpy.nextafter``).
    """
    if not 0.0 <= far <= 1.0:
        raise ValueError(f"far must be in [0, 1], got {far}")
    neg_all = _scores(negatives, "negatives")
    neg = np.sort(neg_all[~np.isnan(neg_all)])[::-1]  # failures to acquire: never accepted
    k = int(np.floor(far * neg_all.size + 1e-9))
    if k >= neg.size:
        return float(neg[-1]) if neg.size else -np.inf
    return float(np.nextafter(neg[k], np.inf))


def frr_at_far(negatives, positives, far):
    """FRR at the threshold `threshold_at_far` (no interpolation)."""
    t = threshold_at_far(negatives, far)
    return farfrr(negatives, positives, t)[1]


def hter(negatives, positives, threshold):
    """Half total error rate (FAR + FRR) / 2 at a threshold fixed beforehand
    (e.g. on development data)."""
    far, frr = farfrr(negatives, positives, threshold)
    return 0.5 * (far + frr)


def det(negatives, positives, min_rate=None):
    """DET points: FAR and FRR on normal-deviate axes (``scipy.special.ndtri``).

    Parameters
    ----------
    min_rate : float or None
        If given, rates are clipped into [min_rate, 1 - min_rate] before the
        transform; otherwise rates of exactly 0 or 1 map to -inf / +inf.

    Returns
    -------
    x, y : ndarray, shape (n_t,)
        ndtri(FAR), ndtri(FRR), in the order of `roc_curve`.
    """
    far, frr, _ = roc_curve(negatives, positives)
    return probit(far, min_rate), probit(frr, min_rate)


def probit(rate, min_rate=None):
    """Normal deviate of a rate (``scipy.special.ndtri``), the DET axes' scale; rates are
    first clipped into [min_rate, 1 - min_rate] when ``min_rate`` is given."""
    from scipy.special import ndtri

    rate = np.asarray(rate, dtype=float)
    if min_rate is not None:
        rate = np.clip(rate, min_rate, 1.0 - min_rate)
    return ndtri(rate)


def far_grid(lowest=1e-4, n=401):
    """Common FAR grid: 0, then ``n`` log-spaced values from ``lowest`` to 1."""
    return np.concatenate([[0.0], np.logspace(np.log10(lowest), 0.0, n)])


def frr_on_grid(far, frr, grid):
    """FRR of one curve at each FAR of ``grid``, shape (n_grid,).

    FRR(f) = the lowest FRR among the curve's operating points with FAR <= f: a step
    function, the same operating point `frr_at_far` picks (no interpolation
    between thresholds). 1 where no point has FAR <= f.
    """
    ufar, best = step_corners(far, frr)
    # (a rounding tolerance so that FAR = 1 % picks the point with 2 of 200 accepted)
    idx = np.searchsorted(ufar, np.asarray(grid, dtype=float) + 1e-12, side="right") - 1
    return np.where(idx >= 0, best[np.maximum(idx, 0)], 1.0)


def average_curves(curves, grid=None):
    """Mean FRR of several curves on a common FAR grid (vertical averaging).

    Parameters
    ----------
    curves : list of (far, frr)
        E.g. one `roc_curve` per client (thresholds dropped).
    grid : ndarray or None
        FAR values; default `far_grid`.

    Returns
    -------
    grid, mean_frr : ndarray, shape (n_grid,)
        The mean of `frr_on_grid` over the curves
        (`ssgallery.biometrics.curve_sets.Staircases`: every curve at once).
    """
    grid = far_grid() if grid is None else np.asarray(grid, dtype=float)
    return grid, Staircases(curves).mean(grid)


def average_eer(curves):
    """Exact EER of the vertically averaged curve of several (far, frr) curves.

    The average of the step functions of `frr_on_grid` is a step function with
    breakpoints at the curves' distinct FARs; its EER is where that staircase crosses
    FAR = FRR. For a single curve this equals `eer` (without tied scores).
    """
    return curve_eer(*Staircases(curves).staircase())


def grid_eer(grid, frr):
    """EER of a curve sampled on an increasing FAR grid (FRR non-increasing)."""
    grid = np.asarray(grid, dtype=float)[::-1]  # decreasing FAR = increasing threshold
    frr = np.asarray(frr, dtype=float)[::-1]
    return curve_eer(grid, frr)


def grid_frr_at(grid, frr, far):
    """FRR at ``far`` of a curve sampled on ``grid`` (linear interpolation)."""
    return float(np.interp(far, grid, frr))


def linkability(mated, nonmated, omega=1.0, bins=None):
    """Global linkability D<->sys of ISO/IEC 30136 (Gomez-Barrero, Galbally, Rathgeb,
    Busch, "General framework to evaluate unlinkability in biometric template protection
    systems", IEEE TIFS 13(6), 2018): 0 = the linkage scores of templates of the same
    person (mated) and of different people (non-mated) cannot be told apart, 1 = every
    mated pair is linked with certainty.

    Local measure, per score s: D<->(s) = p(mated | s) - p(non-mated | s) where positive,
    else 0, i.e. (omega LR(s) - 1) / (omega LR(s) + 1) with LR(s) = p(s | mated) /
    p(s | non-mated) from normalised histograms (1 where no non-mated score falls in a
    bin holding mated ones); D<->sys = integral of p(s | mated) D<->(s) ds.

    Parameters
    ----------
    mated, nonmated : array-like, shape (n,), (k,)
        Linkage scores (larger = more alike).
    omega : float
        Prior ratio p(mated) / p(non-mated).
    bins : int, optional
        Histogram bins over the range of all scores; default min(n / 10, 100), at
        least 1 (the paper's choice).

    Returns
    -------
    float
        D<->sys in [0, 1].
    """
    mated, nonmated = _scores(mated, "mated"), _scores(nonmated, "nonmated")
    bins = int(bins or max(1, min(len(mated) // 10, 100)))
    lo = min(mated.min(), nonmated.min())
    hi = max(mated.max(), nonmated.max())
    if hi <= lo:
        return 0.0
    edges = np.linspace(lo, hi, bins + 1)
    p_mated = np.histogram(mated, edges, density=True)[0]
    p_non = np.histogram(nonmated, edges, density=True)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = omega * np.where(p_non > 0, p_mated / p_non, 1.0)
    local = np.where(lr > 1, (lr - 1) / (lr + 1), 0.0)
    local[(p_non == 0) & (p_mated > 0)] = 1.0
    return float(np.clip(np.sum(local * p_mated * np.diff(edges)), 0.0, 1.0))


__all__ = [
    "average_curves",
    "average_eer",
    "curve_eer",
    "det",
    "eer",
    "eer_threshold",
    "far_grid",
    "farfrr",
    "frr_at_far",
    "frr_on_grid",
    "grid_eer",
    "grid_frr_at",
    "hter",
    "linkability",
    "probit",
    "roc_curve",
    "threshold_at_far",
]
