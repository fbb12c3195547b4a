"""The tail of held-out 1:N scores beyond the highest of them: the curve of
`ssgallery.biometrics.openset` extended where its searches cannot resolve a target.

Beyond the held-out searches (`tail_fit`): k searches measure no FPIR below about 1/k
(100 searches of 20 people for 20 clients with 5 images each: 1 % is not resolved), and
a threshold "just above every held-out search" is not a 1 % point: the searches come in
clusters of one person's images, so the chance that a new person passes the highest of
them is about one in the number of *people*, not of searches (45 AT&T splits of 20
clients: 2.2 % of the strangers' searches passed it on average). When the target lies
below the measured curve, the curve is extended above its highest held-out score with a
parametric tail of the held-out scores themselves: each score divided by its client's
spread (the standard deviation of the client's held-out scores, so a client whose
impostors spread wide keeps its wider tail), the pooled top ``TAIL_FRACTION`` of them
(at least ``TAIL_MIN_EXCEEDANCES``) fitted by an exponential (a generalised Pareto tail
of shape 0: P(W > w) = (k / M) exp(-(w - u) / beta) for w > u, beta the mean excess, its
maximum-likelihood estimate), and the hazard per client at T is the clients' mean of
-log(1 - P(W > T / s_c)) (the clients of one search taken as independent, as blocks of n
are above). Those points are *extrapolated* (``extrapolated_above`` in the curve: the
lowest of them); `threshold_at_fpir` never calls them resolved. Their interval comes
from beta's (chi-square with 2 k' degrees of freedom, k' the distinct (person, client)
pairs among the k exceedances: one person's images are not independent).
"""

import numpy as np

from ssgallery.errors import InputError

__all__ = ["extend_curve", "finite_labelled", "is_extrapolated", "tail_fit"]

TAIL_FRACTION = 0.02  # the tail fit's exceedances: this top fraction of the held-out scores
TAIL_MIN_EXCEEDANCES = 20
TAIL_MIN_FPIR = 1e-6  # the extrapolated points reach down to this FPIR_N
TAIL_POINTS = 100  # extrapolated hazard levels kept (log-spaced)


def finite_labelled(scores, labels, what):
    """The finite scores, the label (``what``: probe, client) of each, and the mask."""
    s = np.asarray(scores, dtype=float).ravel()
    labels = np.asarray(labels).ravel()
    if s.shape != labels.shape:
        raise InputError(f"expected one {what} per score, got {s.shape} and {labels.shape}")
    keep = np.isfinite(s)
    return (s, labels, keep) if keep.all() else (s[keep], labels[keep], keep)


def tail_fit(scores, clients, people=None, *, fraction=TAIL_FRACTION,
             minimum=TAIL_MIN_EXCEEDANCES, level=0.95):
    """The exponential tail of held-out scores, each on its client's spread.

    Parameters
    ----------
    scores : ndarray, shape (M,)
        Normalised held-out impostor scores.
    clients : ndarray, shape (M,)
        The client of each score; its spread ``s_c`` is the standard deviation of its
        scores (the pooled one for a client with fewer than 2).
    people : ndarray, shape (M,), optional
        The person of each score's probe.
    fraction, minimum : float, int
        Exceedances fitted: the top ``fraction`` of the M scores, at least ``minimum``.
    level : float
        Confidence of ``beta_ci``.

    Returns
    -------
    dict or None
        ``kind`` ("exponential"), ``u`` (the exceedance threshold on W = score / s_c),
        ``rate`` (k / M), ``beta`` (mean excess over u) with its ``beta_ci``
        (chi-square, 2 k' degrees of freedom), ``exceedances`` (k), ``pairs`` (k': the
        distinct (person, client) pairs among them; k without ``people``), ``scores``
        (M) and ``widths`` (s_c per client, shape (C,)). None when fewer than 3 scores
        or no spread above u.
    """
    from scipy.stats import chi2

    s, clients, keep = finite_labelled(scores, clients, "client")
    if s.size < 3:
        return None
    code = _codes(clients)
    n = np.bincount(code)
    mean = np.bincount(code, s) / n
    dev = s - mean[code]
    dev *= dev
    widths = np.sqrt(np.bincount(code, dev) / np.maximum(n - 1, 1))
    del dev
    spread = s.std(ddof=1)
    widths = np.maximum(np.where(n > 1, widths, spread), max(1e-12, 1e-6 * spread))
    w = widths[code]
    np.divide(s, w, out=w)
    k = int(min(s.size - 1, max(minimum, np.ceil(fraction * s.size))))
    top = np.argpartition(w, w.size - k - 1)[w.size - k - 1:]
    order = top[np.argsort(-w[top], kind="stable")]  # the k + 1 largest, descending
    u = float(w[order[k]])
    beta = float(np.mean(w[order[:k]] - u))
    if not beta > 0:
        return None
    pairs = k
    if people is not None:
        who = np.asarray(people).ravel()[np.flatnonzero(keep)[order[:k]]]
        pairs = len(set(zip(code[order[:k]].tolist(), who.tolist())))
    a = (1.0 - level) / 2.0
    ci = [2 * pairs * beta / chi2.ppf(1 - a, 2 * pairs), 2 * pairs * beta / chi2.ppf(a, 2 * pairs)]
    return {"kind": "exponential", "u": u, "rate": k / s.size, "beta": beta,
            "beta_ci": [float(v) for v in ci], "exceedances": k, "pairs": int(pairs),
            "scores": int(s.size), "widths": widths}


def _codes(labels):
    """0..C-1 for the C distinct labels (small non-negative integers without sorting)."""
    if labels.dtype.kind in "iu" and labels.min() >= 0 and labels.max() < 4 * labels.size:
        present = np.bincount(labels) > 0
        return (np.cumsum(present) - 1)[labels]
    return np.unique(labels, return_inverse=True)[1].ravel()


def _tail_hazard(fit, t, beta):
    """The tail's hazard per client at thresholds ``t``: mean over the clients of
    -log(1 - P(W > t / s_c))."""
    t = np.asarray(t, dtype=float)
    inv = 1.0 / fit["widths"]
    step = max(1, 2 ** 20 // inv.size)  # blocks of about a million (threshold, client)
    out = np.empty(t.size)
    for i in range(0, t.size, step):
        x = t[i:i + step, None] * inv[None, :]
        p = np.minimum(fit["rate"] * np.exp(-(x - fit["u"]) / beta), 1.0 - 1e-12)
        out[i:i + step] = -np.log1p(-p).mean(axis=1)
    return out


def extend_curve(curve, fit):
    """``curve`` with its point above every held-out score replaced by the tail's points
    from there up (to FPIR_N = ``TAIL_MIN_FPIR``), each capped at the lowest measured
    hazard so the curve never rises."""
    t = np.asarray(curve["thresholds"])
    hz = np.asarray(curve["hazard"])
    top, n = t[-1], int(curve["clients"])
    measured = hz[:-1]
    cap = measured[-1] if measured.size else np.inf
    lows = [np.asarray(curve[k])[:-1] for k in ("hazard_low", "hazard_high")]
    floor = -np.log1p(-TAIL_MIN_FPIR) / n
    beta_hi = fit["beta_ci"][1]
    end = fit["widths"].max() * (fit["u"] + beta_hi * np.log(fit["rate"] / floor))
    grid = top + np.linspace(0.0, max(end - top, 0.0), 2000)
    h = np.minimum(_tail_hazard(fit, grid, fit["beta"]), cap)
    levels = np.geomspace(max(h[-1], floor), max(h[0], floor), TAIL_POINTS)
    idx = np.unique(np.r_[0, np.searchsorted(-h, -levels, side="left")])
    idx = idx[idx < grid.size]
    lo = np.minimum(_tail_hazard(fit, grid[idx], fit["beta_ci"][0]), cap)
    hi = np.minimum(_tail_hazard(fit, grid[idx], beta_hi),
                    lows[1][-1] if measured.size else np.inf)
    tail = {k: v for k, v in fit.items() if k != "widths"}
    return dict(curve, thresholds=np.r_[t[:-1], grid[idx]].tolist(),
                hazard=np.r_[measured, h[idx]].tolist(),
                hazard_low=np.r_[lows[0], lo].tolist(),
                hazard_high=np.r_[lows[1], np.maximum(hi, h[idx])].tolist(),
                extrapolated_above=float(top), tail=tail)


def is_extrapolated(curve, threshold):
    """Whether ``threshold`` lies on a curve's extrapolated tail (above every held-out
    score), not on a measured point."""
    above = curve.get("extrapolated_above")
    return above is not None and float(threshold) >= float(above)
