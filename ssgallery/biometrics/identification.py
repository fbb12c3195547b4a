"""Identification ("who is this?"): closed-set CMC and open-set detection-and-identification
rates, as pure functions of a probe x client score matrix (the conventions of
bob.measure's ``cmc``/``detection_identification_rate`` and pyeer's ``getcmcinf``).

A *search* scores every probe against every enrolled client. ``true_client[i]`` is the
column of probe i's identity, or -1 for a probe of a person who is not enrolled (an
*unknown*, only meaningful in the open set). Higher scores mean more similar.
"""

import numpy as np

from ssgallery.errors import InputError

__all__ = ["cmc", "detection_identification_rate", "evaluate_identification", "ranks",
           "score_matrix", "unknown_threshold"]


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

    Ties are counted pessimistically: a client scoring equal to the true one ranks
    ahead of it.

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
    return (others >= own[:, None]).sum(axis=1)


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
    probes have a best score >= t (bob.measure's open-set convention).
    """
    scores, true_client = _check(scores, true_client)
    best = np.sort(scores[true_client < 0].max(axis=1))[::-1] if scores.size else np.array([])
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


def evaluate_identification(tables, max_rank=10, far=0.01):
    """Identification figures per method from full-search tables.

    Parameters
    ----------
    tables : list of Scores
        One per (method, m, repetition), every probe against every client.

    Returns
    -------
    list of dict
        Per (method, m), in order of first appearance: ``label``, ``cmc`` (mean over
        repetitions, ranks 1..max_rank), ``rank1``, ``dir`` (open-set DIR at rank 1, None when the
        unknowns cannot resolve it), ``dir_far`` (the false-alarm rate of the DIR),
        ``matches_per_search`` (sum over clients of the
        matches per claim), ``n_known``, ``n_unknown``, ``repetitions``.
    """
    groups = {}
    for t in tables:
        groups.setdefault((t.method, t.m), []).append(t)
    out = []
    for (method, m), group in groups.items():
        curves, dirs, searches, n_known, n_unknown = [], [], [], 0, 0
        for t in group:
            _, _, S, true_client = score_matrix(t)
            curves.append(cmc(S, true_client, max_rank))
            dirs.append(detection_identification_rate(S, true_client, far)[0])
            matches = [v.get("matches") for v in t.clients.values()]
            if matches and None not in matches:
                searches.append(float(np.sum(matches)))
            n_known += int(np.sum(true_client >= 0))
            n_unknown += int(np.sum(true_client < 0))
        width = min(len(c) for c in curves)
        curve = np.mean([c[:width] for c in curves], axis=0)
        out.append({
            "method": method, "m": m, "label": group[0].label, "repetitions": len(group),
            "cmc": [float(v) for v in curve], "rank1": float(curve[0]),
            "dir": None if None in dirs else float(np.mean(dirs)), "dir_far": float(far),
            "matches_per_search": float(np.mean(searches)) if searches else None,
            "n_known": n_known, "n_unknown": n_unknown,
        })
    return out
