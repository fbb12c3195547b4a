"""The 1:N operating point of open-set search, set from held-out searches: one threshold
on the top candidate's normalised score at a target FPIR (false positive identification
rate, NIST FRVT 1:N, ISO/IEC 19795-1; its evaluation on a score matrix is in
`ssgallery.biometrics.identification`).

The operating point (`search_curve`, `threshold_at_fpir`): a stranger searching N
clients is a false positive when the *largest* of its N normalised scores passes T,
so T must grow with N. From held-out searches (each probe scored by n of the clients'
models that never saw it, ``n`` = the search size) the FPIR of an n-client search is
measured at every threshold; for N clients it is taken as

    FPIR_N(T) = 1 - (1 - FPIR_n(T)) ** (N / n) = 1 - exp(-N H(T)),
    H(T) = -log(1 - FPIR_n(T)) / n      (the hazard per client)

i.e. the dependence between the scores of one search (a face that looks like many
clients) is measured within n clients, and blocks of n clients are taken as
independent beyond that, which overestimates FPIR_N when scores of one stranger are
positively associated (so T errs high). T at a target FPIR f for N clients is the
smallest threshold with H(T) <= -log(1 - f) / N (about f / N). A probe scored by more
than n clients counts as the max of a random n-subset of them (exact: hypergeometric).
A search whose top score two clients share (a tie,
`ssgallery.biometrics.ties.tied_at_top`) identifies nobody, as ``identify``
answers it and ``roc`` counts it: it is no false positive at any threshold.

Beyond the held-out searches the curve is extended by a fitted tail
(`ssgallery.biometrics.openset_tail`). The one scale of every client's centred scores:
`ssgallery.biometrics.openset_scale` (re-exported here).
"""

import numpy as np

from ssgallery.biometrics.calibration import subject_out_normalised
from ssgallery.biometrics.openset_scale import (
    MARGIN_SPREAD,
    pooled_scale,
    pooled_spreads,
    spread_measured,
)
from ssgallery.biometrics.openset_tail import (
    TAIL_MIN_FPIR,
    extend_curve,
    finite_labelled,
    is_extrapolated,
    tail_fit,
)
from ssgallery.biometrics.ties import tie_tolerance
from ssgallery.errors import InputError

__all__ = ["MARGIN_SPREAD", "TAIL_MIN_FPIR", "fpir_at", "is_extrapolated", "merge_curves",
           "pooled_scale", "pooled_spreads", "search_curve", "spread_measured",
           "subject_out_normalised", "tail_fit", "threshold_at_fpir"]

CURVE_POINTS = 200  # hazard levels kept in a stored curve (log-spaced)
CURVE_MAX_FPIR = 0.5  # a stored curve covers FPIR_n up to this


def _log_choose(n, k):
    from scipy.special import gammaln

    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _p_any(k, n_x, n):
    """P(the max of a random n-subset of n_x scores is among the top k) (hypergeometric)."""
    k, n_x = np.asarray(k, dtype=float), np.asarray(n_x, dtype=float)
    rest = n_x - k
    p = np.ones_like(rest)
    ok = rest >= n
    p[ok] = -np.expm1(_log_choose(rest[ok], n) - _log_choose(n_x[ok], n))
    return np.where(k <= 0, 0.0, p)


def _deltas(rank, n_x, n):
    """What each score adds to FPIR_n when the threshold passes below it: P(top rank) -
    P(top rank - 1) of its probe, from one table per distinct search size (a few
    hundred values, not one per score: 6 million scores at 10,000 clients)."""
    sizes, which = np.unique(n_x, return_inverse=True)
    k = np.arange(int(sizes.max()) + 1)
    table = np.stack([_p_any(k, np.full(k.shape, m), n) for m in sizes])
    return table[which, rank] - table[which, rank - 1]


def _tied_after(v, code):
    """How many of the next scores of its search tie with each score (within
    `ssgallery.biometrics.ties.tie_tolerance` of it, the rule of
    `ssgallery.biometrics.ties.tied_at_top`), for scores ``v`` sorted by search
    ``code`` (ascending) and, within a search, descending."""
    floor = v - tie_tolerance(v)
    tied = np.flatnonzero((code[1:] == code[:-1]) & (v[1:] >= floor[:-1]))
    after = np.zeros(v.size, dtype=np.int64)
    if tied.size:  # the end of each tied run: a search over (search, -score) keys
        _, level = np.unique(np.r_[-v, -floor[tied]], return_inverse=True)
        width = np.int64(level.max()) + 1
        key = code.astype(np.int64) * width + level[:v.size]
        end = np.searchsorted(key, code[tied].astype(np.int64) * width + level[v.size:],
                              side="right")
        after[tied] = end - tied - 1
    return after


def _steps(scores, probes, search_size, quantile, people=None):
    """Distinct scores (descending) and FPIR_n when accepting scores >= each; with
    ``people`` (the person of each score's probe) also what `_design_effects` needs:
    the person of each score and its FPIR share in the same descending order, and the
    searches of each person (else None)."""
    s, probes, finite = finite_labelled(scores, probes, "probe")
    if s.size == 0:
        raise InputError("no held-out search scores to set an open-set threshold")
    _, code = np.unique(probes, return_inverse=True)
    del probes
    size = np.bincount(code)
    n = int(search_size) if search_size else max(1, int(np.floor(np.quantile(size, quantile))))
    ok = size >= n
    keep = ok[code]
    who = None
    if people is not None:
        who = np.asarray(people).astype(str).ravel()[finite][keep]
        _, who = np.unique(who, return_inverse=True)
        _, first = np.unique(code[keep], return_index=True)  # one score of each search
        searches_of = np.bincount(who[first])
    s, code = s[keep], code[keep].astype(np.int32)
    by_probe = np.lexsort((-s, code))  # within-probe rank of every score (1 = its best)
    starts = np.r_[0, np.flatnonzero(np.diff(code[by_probe])) + 1]
    rank = np.empty(s.size, dtype=np.int32)
    rank[by_probe] = np.arange(s.size) - np.repeat(starts, np.diff(np.r_[starts, s.size])) + 1
    # a search whose top score another client ties identifies nobody (identify, roc): the
    # score of rank r passes as its n-subset's top only when the t next scores that tie
    # with it are left out too; P(r in, every other rank up to r + t out) = P(the top rank
    # is r + t): both choose the subset's n - 1 others among the ranks after r + t
    rank[by_probe] += _tied_after(s[by_probe], code[by_probe])
    del by_probe, starts
    delta = _deltas(rank, size[code], n)
    del rank, code
    order = np.argsort(-s, kind="stable")
    by_person = None if who is None else (who[order], delta[order], searches_of)
    cum = np.cumsum(delta[order]) / int(ok.sum())
    desc = s[order]
    last = np.r_[np.flatnonzero(np.diff(desc) != 0), desc.size - 1]  # end of each tie group
    return (desc[last], np.clip(cum[last], 0.0, 1.0), n, int(ok.sum()), int((~ok).sum()),
            last, by_person)


def _design_effects(by_person, ends):
    """The design effect by probe person (`ssgallery.biometrics.intervals.design_effect`:
    one person's searches are not independent trials) of FPIR_n at each point that
    accepts the scores up to position ``ends`` (ascending; -1: none) of `_steps`'s
    descending order; all 1 without ``by_person``."""
    from ssgallery.biometrics.intervals import cluster_sums, design_effect

    if by_person is None:
        return np.ones(len(ends))
    who, delta, n = by_person
    n = n.astype(float)
    acc, start, out = np.zeros(n.size), 0, []
    for end in ends:
        acc += np.bincount(who[start:end + 1], delta[start:end + 1], minlength=n.size)
        start = max(start, end + 1)
        out.append(design_effect(cluster_sums(acc, n)))
    return np.array(out)


def _hazard(fpir_n, n):
    with np.errstate(divide="ignore"):
        return -np.log1p(-np.minimum(fpir_n, 1.0)) / n


def _interval(fpir_n, n, searches, deff=1.0, level=0.95):
    """Clopper-Pearson interval of FPIR_n on the effective counts (fractional,
    `ssgallery.biometrics.intervals.beta_interval`): the searches divided by the design
    effect ``deff`` (per point, `_design_effects`), as hazards."""
    from ssgallery.biometrics.intervals import beta_interval

    deff = np.asarray(deff, dtype=float)
    low, high = beta_interval(np.asarray(fpir_n, dtype=float) * searches / deff,
                              searches / deff, level)
    return _hazard(low, n), _hazard(high, n)


def search_curve(scores, probes, n_clients, *, clients=None, people=None, search_size=None,
                 quantile=0.1, points=CURVE_POINTS):
    """The open-set operating curve of a gallery from held-out non-mated searches.

    Parameters
    ----------
    scores : ndarray, shape (M,)
        Normalised held-out impostor scores: each is the score of one probe by one
        client's model that never saw that probe's person.
    probes : ndarray, shape (M,)
        The probe (any id) of each score: the scores of one probe form its search.
    n_clients : int
        N, the clients of the gallery the curve is for.
    clients : ndarray, shape (M,), optional
        The client (any id) that gave each score: the curve is then extended above the
        highest held-out score with the `tail_fit` of the scores (extrapolated points);
        without it the curve ends with a point of hazard 0 above every held-out score.
    people : ndarray, shape (M,), optional
        The person of each score's probe: the hazard bounds take the person as the
        trial (one person's searches are not independent: `_design_effects`), and the
        tail fit's interval counts (person, client) pairs, not scores.
    search_size : int, optional
        n, the clients per search; default the ``quantile`` of the probes' search sizes
        (probes scored by fewer clients are left out).
    points : int
        Hazard levels kept (log-spaced between the data's resolution and
        ``CURVE_MAX_FPIR``).

    Returns
    -------
    dict
        ``thresholds`` (ascending) and, at each, the hazard per client ``hazard`` (an
        upper bound of H(T) for every T at or above the point, 0 at the first point,
        which is above every held-out score; +inf where every search passes) with its
        95 % Clopper-Pearson bounds ``hazard_low``, ``hazard_high`` (with ``people``: by
        probe person, on the searches divided by the design effect, and
        ``interval_people`` their number); ``clients`` (N),
        ``search_size`` (n), ``searches`` (probes used), ``searches_left_out`` and
        ``resolution`` (the smallest nonzero FPIR_N the searches measure, 1 when they
        all tie at their top score); with ``clients``, the points from
        ``extrapolated_above`` (a threshold) up are the tail's and ``tail`` holds its
        fit (`tail_fit`, without the per-client widths).
    """
    values, fpir_n, n, searches, left_out, last, by_person = _steps(
        scores, probes, search_size, quantile, people)
    h = _hazard(fpir_n, n)
    below = np.r_[values[1:], values[-1] - max(1.0, abs(values[-1]))]
    gap = 0.5 * (values + below)  # accept exactly the scores >= values[j]
    top = values[0] + max(1e-9, 1e-6 * abs(values[0]))
    t, hz = np.r_[top, gap], np.r_[0.0, h]
    nonzero = hz[hz > 0]
    cap = _hazard(CURVE_MAX_FPIR, n)
    keep = {0}
    if nonzero.size:
        # from the data's resolution up to the cap; when every search passes at once
        # (all tied at the top score: FPIR_n = 1, H = +inf) that one point
        low = nonzero.min()
        levels = np.geomspace(low, max(cap, low), int(points)) if np.isfinite(low) else [low]
        # the point of smallest T with H <= each level (hz is non-decreasing along t's
        # descending order, so the last index with hz <= level)
        keep.update(np.searchsorted(hz, levels, side="right") - 1)
    idx = np.array(sorted(keep))[::-1]
    up = np.sort(idx)  # point j accepts the scores up to position last[j - 1]
    deff = dict(zip(up, _design_effects(by_person, np.r_[-1, last][up])))
    low, high = _interval(np.r_[0.0, fpir_n][idx], n, searches, [deff[i] for i in idx])
    curve = {"thresholds": t[idx].tolist(), "hazard": hz[idx].tolist(),
             "hazard_low": low.tolist(), "hazard_high": high.tolist(),
             "clients": int(n_clients), "search_size": int(n), "searches": int(searches),
             "searches_left_out": int(left_out),
             **({} if by_person is None else {"interval_people": int(by_person[2].size)}),
             "resolution": float(-np.expm1(-int(n_clients) * nonzero.min()))
             if nonzero.size else None}
    fit = tail_fit(scores, clients, people) if clients is not None else None
    return extend_curve(curve, fit) if fit is not None else curve


def _hazard_at(curve, t, key="hazard"):
    """A curve's hazard at thresholds ``t`` (the point at or below each; +inf below its
    lowest point: beyond what it measured)."""
    th = np.asarray(curve["thresholds"], dtype=float)
    hz = np.asarray(curve[key], dtype=float)
    i = np.searchsorted(th, np.asarray(t, dtype=float), side="right") - 1
    return np.where(i >= 0, hz[np.maximum(i, 0)], np.inf)


def fpir_at(curve, threshold, n_clients=None):
    """Expected FPIR of an N-client search at ``threshold`` (N default the curve's), with
    its 95 % interval: ``(fpir, (low, high))``."""
    n = int(n_clients or curve["clients"])
    vals = [float(-np.expm1(-n * _hazard_at(curve, threshold, k)))
            for k in ("hazard", "hazard_low", "hazard_high")]
    return vals[0], (vals[1], vals[2])


def threshold_at_fpir(curve, fpir, n_clients=None):
    """The smallest stored threshold whose expected FPIR for ``n_clients`` (default the
    curve's N) is at most ``fpir``.

    Returns
    -------
    threshold : float
    resolved : bool
        False when no held-out search passes even the highest threshold the curve
        resolves, i.e. the searches cannot tell ``fpir`` from 0: the threshold is then
        read from the extrapolated tail (`is_extrapolated`; the curve's highest point
        when ``fpir`` lies below its end) or, on a curve without one, the one above
        every held-out score.
    """
    if not 0.0 < float(fpir) < 1.0:
        raise InputError(f"the target FPIR must be in (0, 1), got {fpir}")
    n = int(n_clients or curve["clients"])
    th = np.asarray(curve["thresholds"], dtype=float)
    hz = np.asarray(curve["hazard"], dtype=float)
    ok = np.flatnonzero(hz <= -np.log1p(-float(fpir)) / n)
    i = int(ok[0]) if ok.size else th.size - 1  # beyond an extrapolated curve's end
    return float(th[i]), bool(hz[i] > 0 and not is_extrapolated(curve, th[i]))


def merge_curves(curves):
    """One curve for a gallery made of several blocks of clients (an update: the kept
    clients' stored curve and the new clients' held-out searches): the hazard per
    client is the client-weighted mean of the blocks' (each an upper bound between its
    points), N the sum; ``searches`` summed, ``search_size`` the smallest, ``blocks``
    counted; ``interval_people`` the largest of the blocks' when each has one (their
    bounds by probe person; the same people searched each block)."""
    total = sum(int(c["clients"]) for c in curves)
    t = np.unique(np.concatenate([np.asarray(c["thresholds"], dtype=float) for c in curves]))
    out = {"thresholds": t.tolist(), "clients": total}
    for key in ("hazard", "hazard_low", "hazard_high"):
        out[key] = (sum(int(c["clients"]) * _hazard_at(c, t, key) for c in curves)
                    / total).tolist()
    # the points where some block measured nothing (below its lowest point) or every
    # search passed are +inf; the highest of them is kept, where the finite part starts,
    # as a block's own curve starts (a curve whose first hazard is 0 reads 0 % FPIR
    # down to its lowest point, and a gallery holding one is refused)
    keep = np.isfinite(out["hazard"])
    below = np.flatnonzero(~keep & (np.arange(keep.size) < np.argmax(keep)))
    keep[below[-1:]] = keep.any()
    for key in ("thresholds", "hazard", "hazard_low", "hazard_high"):
        out[key] = np.asarray(out[key])[keep].tolist()
    out["search_size"] = min(int(c["search_size"]) for c in curves)
    out["searches"] = sum(int(c["searches"]) for c in curves)
    out["searches_left_out"] = sum(int(c.get("searches_left_out", 0)) for c in curves)
    out["blocks"] = sum(int(c.get("blocks", 1)) for c in curves)
    people = [c.get("interval_people") for c in curves]
    if all(type(p) is int and p >= 1 for p in people):  # every block's bounds by probe person
        out["interval_people"] = max(people)
    above = [float(c["extrapolated_above"]) for c in curves if "extrapolated_above" in c]
    if above:  # any block's tail makes the merged point extrapolated from its start up
        out["extrapolated_above"] = min(above)
    nonzero = np.asarray(out["hazard"])[np.asarray(out["hazard"]) > 0]
    out["resolution"] = float(-np.expm1(-total * nonzero.min())) if nonzero.size else None
    return out
