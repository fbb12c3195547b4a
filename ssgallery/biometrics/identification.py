"""Identification ("who is this?"): closed-set CMC and open-set detection-and-identification
rates, as pure functions of a probe x client score matrix (the conventions of
bob.measure's ``cmc``/``detection_identification_rate`` and pyeer's ``getcmcinf``), and
open-set FPIR/FNIR with one threshold on the top candidate's score (NIST FRVT 1:N,
ISO/IEC 19795-1).

A *search* scores every probe against every enrolled client. ``true_client[i]`` is the
column of probe i's identity, or -1 for a probe of a person who is not enrolled (an
*unknown*, only meaningful in the open set). Higher scores mean more similar.

- a **non-mated search** (``true_client == -1``) is a false positive at threshold t
  when its best score is >= t: FPIR(t) = #{non-mated searches with max score >= t} /
  #non-mated searches;
- a **mated search** is a false negative when its mate is not the first candidate
  (ties count against it, as in `ranks`) or scores below t: FNIR(t) = 1 - DIR(t).

A search whose best score is shared by two or more clients (a *tie*, `tied_at_top`:
equal within `TIE_RTOL` of the score) identifies nobody, whatever the threshold: it is
neither a false positive (non-mated) nor a hit (mated). ``identify`` answers such a
search "unknown" by the same function, so ``roc`` counts it as ``identify`` answers it.
"""

import numpy as np

from ssgallery.biometrics.ties import TIE_RTOL, search_best, tie_tolerance, tied_at_top
from ssgallery.errors import InputError

__all__ = ["FPIR_TARGETS", "TIE_RTOL", "cmc", "det_curve", "detection_identification_rate",
           "evaluate_identification", "fnir_at_fpir", "fpir_fnir", "normalised_searches",
           "ranks", "score_matrix", "search_best", "tie_tolerance", "tied_at_top",
           "unknown_threshold", "unresolvable_note"]

FPIR_TARGETS = (0.01, 0.001)  # what roc reports: FNIR at FPIR = 1 % and 0.1 %

def _check(scores, true_client):
    scores = np.asarray(scores, dtype=float)
    true_client = np.asarray(true_client, dtype=int)
    if scores.ndim != 2 or true_client.shape != (scores.shape[0],):
        raise InputError(f"expected a (n_probes, n_clients) score matrix and n_probes true "
                         f"columns, got {scores.shape} and {true_client.shape}")
    if np.any(true_client >= scores.shape[1]) or np.any(true_client < -1):
        raise InputError("a true client column is outside the score matrix")
    return scores, true_client


def ranks(scores, true_client):
    """Rank of each known probe's own client among all clients (1 = best).

    Ties are counted pessimistically: a client scoring equal to the true one (within
    `tie_tolerance`) ranks ahead of it.

    Parameters
    ----------
    scores : ndarray, shape (n_probes, n_clients)
    true_client : ndarray of int, shape (n_probes,)
        Column of the probe's identity, -1 for unknown probes.

    Returns
    -------
    ndarray of int, shape (n_known,)
        Ranks of the probes with ``true_client >= 0``, in probe order.
    """
    scores, true_client = _check(scores, true_client)
    known = true_client >= 0
    own = scores[known, true_client[known]]
    others = scores[known]
    # pessimistic: every other client at least as good as the true one ranks before it
    return (others >= (own - tie_tolerance(own))[:, None]).sum(axis=1)


def cmc(scores, true_client, max_rank=10):
    """Closed-set cumulative match characteristic: fraction of known probes whose own
    client is within the first r candidates, for r = 1..max_rank.

    Returns
    -------
    ndarray, shape (min(max_rank, n_clients),)
    """
    r = ranks(scores, true_client)
    if r.size == 0:
        raise InputError("no probe of an enrolled client: the CMC is undefined")
    top = min(int(max_rank), np.asarray(scores).shape[1])
    return np.array([np.mean(r <= k) for k in range(1, top + 1)])


def unknown_threshold(scores, true_client, far):
    """Threshold on the best score at which a fraction ``far`` of unknown probes is
    (wrongly) detected, or None when the unknowns cannot resolve ``far``.

    The threshold is the smallest value t such that at most ``far`` of the unknown
    probes have a best score >= t (bob.measure's open-set convention; a tie,
    `search_best`, never passes).
    """
    scores, true_client = _check(scores, true_client)
    best = np.sort(search_best(scores[true_client < 0]))[::-1] if scores.size else np.array([])
    n = best.size
    if n == 0 or far * n < 1:
        return None
    allowed = int(np.floor(far * n))  # unknowns that may pass
    return float(np.nextafter(best[allowed], np.inf)) if allowed < n else float(best[-1])


def detection_identification_rate(scores, true_client, far=0.01, rank=1):
    """Open-set detection-and-identification rate (DIR) at a false-alarm rate.

    Fraction of known probes whose own client is within the first ``rank`` candidates
    AND scores at or above the threshold at which ``far`` of the unknown probes pass.

    Returns
    -------
    dir : float or None
        None when there are too few unknown probes to resolve ``far``.
    threshold : float or None
    """
    scores, true_client = _check(scores, true_client)
    t = unknown_threshold(scores, true_client, far)
    if t is None:
        return None, None
    known = true_client >= 0
    own = scores[known, true_client[known]]
    detected = (ranks(scores, true_client) <= rank) & (own >= t)
    return float(np.mean(detected)), t


def fpir_fnir(scores, true_client, threshold):
    """FPIR and FNIR at one threshold on the top candidate's score.

    Parameters
    ----------
    scores : ndarray, shape (n_probes, n_clients)
    true_client : ndarray of int, shape (n_probes,)
        Column of the probe's identity, -1 for a non-mated search.
    threshold : float
        A candidate is returned when its score is >= threshold and no other client ties
        with it (`search_best`).

    Returns
    -------
    fpir, fnir : float or None
        None when there is no non-mated (mated) search.
    """
    scores, true_client = _check(scores, true_client)
    unknown, known = true_client < 0, true_client >= 0
    fpir = float(np.mean(search_best(scores[unknown]) >= threshold)) if unknown.any() else None
    fnir = None
    if known.any():
        own = scores[known, true_client[known]]
        fnir = float(np.mean(~((ranks(scores, true_client) == 1) & (own >= threshold))))
    return fpir, fnir


def fnir_at_fpir(scores, true_client, fpir):
    """FNIR at the threshold where a fraction ``fpir`` of the non-mated searches pass
    (`unknown_threshold`).

    Returns
    -------
    fnir, threshold : float or None
        ``(None, None)`` when the non-mated searches cannot resolve ``fpir`` (fewer than
        1 / fpir of them) or there is no mated search.
    """
    scores, true_client = _check(scores, true_client)
    if not np.any(true_client >= 0):
        return None, None
    rate, t = detection_identification_rate(scores, true_client, fpir)
    return (None, None) if rate is None else (1.0 - rate, t)


def unresolvable_note(fpir, n_nonmated):
    """Why FNIR at ``fpir`` is shown as "—" (or None when it is resolved)."""
    if n_nonmated and fpir * n_nonmated >= 1:
        return None
    return (f"FPIR {100 * fpir:g}% is below the resolution of the non-mated searches "
            f"(1/{n_nonmated})")


def det_curve(scores, true_client):
    """FPIR and FNIR at every distinct threshold on the top candidate's score.

    Returns
    -------
    fpir, fnir, thresholds : ndarray, shape (n_t,)
        In order of increasing threshold (FPIR non-increasing, FNIR non-decreasing); the
        thresholds are the distinct best scores of the non-mated searches and the mates'
        scores, then ``+inf``. Empty arrays when there is no mated or no non-mated search.
    """
    scores, true_client = _check(scores, true_client)
    unknown, known = true_client < 0, true_client >= 0
    if not (unknown.any() and known.any()):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    best = np.sort(search_best(scores[unknown]))  # a tie is -inf: never returned
    own = scores[known, true_client[known]]
    # a mate that is not first never counts as found: its score is -inf for the curve
    found = np.sort(np.where(ranks(scores, true_client) == 1, own, -np.inf))
    t = np.append(np.unique(np.concatenate([best[np.isfinite(best)],
                                            found[np.isfinite(found)]])), np.inf)
    fpir = (best.size - np.searchsorted(best, t, side="left")) / best.size
    fnir = np.searchsorted(found, t, side="left") / found.size
    return fpir, fnir, t


def score_matrix(table):
    """Pivot a table of every-probe-against-every-client claims into a score matrix.

    Parameters
    ----------
    table : Scores
        Rows (claimed, real, probe, score); every probe scored against every client.

    Returns
    -------
    clients : ndarray of str, shape (n_clients,)
    probes : ndarray of str, shape (n_probes,)
    scores : ndarray, shape (n_probes, n_clients)
    true_client : ndarray of int, shape (n_probes,)
        -1 for probes whose identity is not among the clients.
    """
    clients, col = np.unique(np.asarray(table.claimed, dtype=str), return_inverse=True)
    rows = {}  # (real id, probe label) -> row, in order of first appearance
    row = np.array([rows.setdefault(key, len(rows))
                    for key in zip(np.asarray(table.real, dtype=str),
                                   np.asarray(table.probe, dtype=str))], dtype=int)
    S = np.full((len(rows), len(clients)), np.nan)
    S[row, col] = table.score
    if np.isnan(S).any():
        raise InputError(f"'{table.label}': not every probe is scored against every client; "
                         "identification needs a full search")
    real = np.array([r for r, _ in rows], dtype=str)
    probes = np.array([q for _, q in rows], dtype=str)
    index = {c: i for i, c in enumerate(clients)}
    true_client = np.array([index.get(r, -1) for r in real], dtype=int)
    return clients, probes, S, true_client


def evaluate_identification(tables, max_rank=10, far=0.01, det_points=41):
    """Identification figures per method from full-search tables.

    Parameters
    ----------
    tables : list of Scores
        One per (method, m, repetition), every probe against every client.
    det_points : int
        FPIR values of the averaged DET (log-spaced from the resolution of the
        repetition with the fewest non-mated searches to 1).

    Returns
    -------
    list of dict
        Per (method, m), in order of first appearance: ``label``, ``cmc`` (mean over
        repetitions, ranks 1..max_rank, on the ``ranking`` scores: "znorm" when the
        tables carry each client's held-out normalisation, `normalised_searches`, else
        "raw"), ``rank1``, and on the ``open_set_score`` scores ("centred" or "raw"):
        ``dir`` (open-set DIR at rank 1, None when the unknowns cannot resolve it),
        ``dir_far`` (the false-alarm rate of the DIR), ``fnir_at_fpir_1pct`` and ``fnir_at_fpir_01pct`` (FNIR at FPIR = 1 % and
        0.1 %, threshold on the top candidate's score, mean over repetitions; None when
        a repetition's non-mated searches cannot resolve it, with the reason in
        ``notes``), ``det`` (``fpir`` grid and the mean over repetitions of the lowest
        ``fnir`` at FPIR <= each), with a gallery's stored 1:N point
        (``table.operating_point``, ``roc --gallery``) ``stored_threshold``,
        ``fpir_at_stored_threshold`` and ``fnir_at_stored_threshold``, ``matches_per_search`` (sum over clients of the
        matches per claim), ``n_known``, ``n_unknown``, ``repetitions``.
    """
    groups = {}
    for t in tables:
        groups.setdefault((t.method, t.m), []).append(t)
    return [_evaluate_method(method, m, group, max_rank, far, det_points)
            for (method, m), group in groups.items()]


def normalised_searches(table, clients, scores):
    """A search's scores as a deployed gallery ranks them, from the per-client held-out
    normalisation its table carries (``clients[c]["norm_mean"]``, ``["norm_std"]``):
    Z-normalised for the closed set, centred on one scale for the open set
    (`ssgallery.biometrics.openset.pooled_scale`).

    Returns
    -------
    closed, open : ndarray, shape (n_probes, n_clients)
        The raw scores twice when some client carries no normalisation.
    kind : (str, str)
        ``("znorm", "centred")`` or ``("raw", "raw")``.
    """
    from ssgallery.biometrics.openset import pooled_scale

    info = [table.clients.get(str(c)) or {} for c in clients]
    mean = np.array([i.get("norm_mean", np.nan) for i in info], dtype=float)
    std = np.array([i.get("norm_std", np.nan) for i in info], dtype=float)
    if not (np.all(np.isfinite(mean)) and np.all(std > 0)):
        return scores, scores, ("raw", "raw")
    return (scores - mean) / std, (scores - mean) / pooled_scale(std), ("znorm", "centred")


def _at_stored(table, clients, raw, true_client):
    """(threshold, FPIR, FNIR) of a gallery's search at its stored 1:N operating point:
    the centred scores (g - mean_c) / the point's scale, thresholded, the top candidate
    returned only when its own verification threshold accepts the probe too (as
    ``identify``: it never accepts what ``verify`` rejects)."""
    point = table.operating_point
    info = [table.clients[str(c)] for c in clients]
    mean = np.array([i["norm_mean"] for i in info], dtype=float)
    own = np.array([i.get("threshold", -np.inf) for i in info], dtype=float)
    centred = (raw - mean) / float(point["scale"])
    top = np.argmax(centred, axis=1)
    rows = np.arange(len(raw))
    centred[raw[rows, top] < own[top]] = -np.inf  # verify would reject: no candidate
    return (float(point["threshold"]),
            *fpir_fnir(centred, true_client, float(point["threshold"])))


def _evaluate_method(method, m, group, max_rank, far, det_points):
    from ssgallery.biometrics.curve_sets import Staircases

    curves, dirs, searches, dets, n_known, n_unknown = [], [], [], [], 0, []
    fnirs = {f: [] for f in FPIR_TARGETS}
    kinds, stored = set(), []
    for t in group:
        clients, _, raw, true_client = score_matrix(t)
        Z, S, kind = normalised_searches(t, clients, raw)
        kinds.add(kind)
        if t.operating_point is not None and kind[0] == "znorm":
            stored.append(_at_stored(t, clients, raw, true_client))
        curves.append(cmc(Z, true_client, max_rank))
        dirs.append(detection_identification_rate(S, true_client, far)[0])
        for f in FPIR_TARGETS:
            fnirs[f].append(fnir_at_fpir(S, true_client, f)[0])
        dets.append(det_curve(S, true_client)[:2])
        matches = [v.get("matches") for v in t.clients.values()]
        if matches and None not in matches:
            searches.append(float(np.sum(matches)))
        n_known += int(np.sum(true_client >= 0))
        n_unknown.append(int(np.sum(true_client < 0)))
    width = min(len(c) for c in curves)
    curve = np.mean([c[:width] for c in curves], axis=0)
    kind = kinds.pop() if len(kinds) == 1 else ("mixed", "mixed")
    out = {"method": method, "m": m, "label": group[0].label, "repetitions": len(group),
           "cmc": [float(v) for v in curve], "rank1": float(curve[0]),
           "dir": None if None in dirs else float(np.mean(dirs)), "dir_far": float(far),
           "matches_per_search": float(np.mean(searches)) if searches else None,
           "n_known": n_known, "n_unknown": int(sum(n_unknown)), "notes": {},
           "ranking": kind[0], "open_set_score": kind[1]}
    if stored:
        out["stored_threshold"] = float(np.mean([v[0] for v in stored]))
        for i, key in ((1, "fpir_at_stored_threshold"), (2, "fnir_at_stored_threshold")):
            values = [v[i] for v in stored]
            out[key] = None if None in values else float(np.mean(values))
    for f, key in zip(FPIR_TARGETS, ("fnir_at_fpir_1pct", "fnir_at_fpir_01pct")):
        out[key] = None if None in fnirs[f] else float(np.mean(fnirs[f]))
        note = unresolvable_note(f, min(n_unknown))
        if out[key] is None and note:
            out["notes"][key] = note
    if all(d[0].size for d in dets):
        grid = np.geomspace(1.0 / max(1, min(n_unknown)), 1.0, int(det_points))
        fnir = Staircases(dets).mean(grid)
        out["det"] = {"fpir": grid.tolist(), "fnir": fnir.tolist()}
    return out
