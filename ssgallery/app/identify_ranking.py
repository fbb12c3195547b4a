"""The ranking of ``identify``'s searches (`ssgallery.app.identify`): a candidate
(`Candidate`), what a batch of searches is decided on, computed once (`Decisions`,
`decision_values`), the top candidates of each search (`rank_clients`) and the clients
tied at its top (`tie_at_top`, and the line a tie gets: `tie_text`).

On a light path like ``verify``: numpy only.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass
class Candidate:
    """One client in a probe's ranked list: ``score`` is the raw g_k(x),
    ``ranking_score`` the score the ranking orders (the search's ``ranking``: centred,
    Z-normalised or raw)."""

    client: str
    rank: int
    score: float
    ranking_score: float
    threshold: float
    passes: bool  # the operating point passes it and so does its record (``verified``)
    verified: bool = None  # ``verify`` would accept the probe for this client

    def to_dict(self):
        """The JSON fields; ``normalized`` repeats ``ranking_score`` (its old name,
        deprecated: it is the centred score in the open set, not a normalised one)."""
        return dict(self.__dict__, normalized=self.ranking_score)

    @property
    def normalized(self):
        """Deprecated name of `ranking_score` (read-only; warns with a
        `DeprecationWarning`): it is the centred score in the open set, not a
        normalised one."""
        import warnings

        warnings.warn("Candidate.normalized is deprecated: read Candidate.ranking_score "
                      "(the same value)", DeprecationWarning, stacklevel=2)
        return self.ranking_score



class Decisions(NamedTuple):
    """What a batch of searches is decided on (`decision_values`), computed once and
    read by `rank_clients` and `tie_at_top`: ``scores`` the raw scores g_k(x), (n, N);
    ``ranked`` the scores the ranking orders; ``value >= limit`` passes the operating
    point (the ranking's score against the one 1:N threshold, or the raw score against
    each client's own, ``limit`` shape (N,))."""

    scores: np.ndarray
    ranked: np.ndarray
    value: np.ndarray
    limit: np.ndarray


def decision_values(index, scores, point=None, columns=None):
    """The `Decisions` of a batch of searches.

    Parameters
    ----------
    index : SearchIndex
    scores : ndarray, shape (n, N)
        Raw scores g_k(x) (of the clients ``columns`` of the index, when given).
    point : dict, optional
        The operating point (`ssgallery.app.open_set.resolve`) that decides each
        candidate's ``threshold`` and ``passes``, and with ``score`` "centred" the
        ranking (on ``(g - mean) / scale``); default (or ``kind`` "verification") each
        client's own threshold on its raw score, Z-normalised ranking.
    columns : list of int, optional
        The index's clients ``scores`` are of; default every client.

    Returns
    -------
    Decisions
    """
    scores = np.asarray(scores, dtype=float)
    k = slice(None) if columns is None else np.asarray(columns)
    centred = point is not None and point.get("score") == "centred"
    ranked = (scores - index.norm_mean[k]) / point["scale"] if centred \
        else index.normalize(scores, columns)
    one = point is not None and point["kind"] != "verification"
    value, limit = (ranked, np.full(scores.shape[1], point["threshold"])) if one \
        else (scores, index.threshold[k])
    return Decisions(scores, ranked, value, limit)


def rank_clients(index, decisions, top):
    """Candidates of each probe: the ``top`` best clients on the ranking's scores.

    Parameters
    ----------
    index : SearchIndex
    decisions : Decisions
        The batch's `decision_values`.
    top : int

    Returns
    -------
    list (n) of list of Candidate
    """
    scores, ranked, value, limit = decisions
    top = min(int(top), index.n_clients)
    # candidates listed in client order within a tie (stable sort on the negated scores);
    # a tie at the top identifies nobody, in the closed set too (tie_at_top)
    order = np.argsort(-ranked, axis=1, kind="stable")[:, :top]
    out = []
    for i, row in enumerate(order):
        out.append([Candidate(client=str(index.client_ids[k]), rank=r + 1,
                              score=float(scores[i, k]), ranking_score=float(ranked[i, k]),
                              threshold=float(limit[k]), passes=bool(value[i, k] >= limit[k]))
                    for r, k in enumerate(row)])
    return out


def tie_at_top(index, decisions, open_set=True):
    """The clients tied at each search's best ranking score, else None
    (`ssgallery.biometrics.identification.tied_at_top`, the rule ``roc`` counts searches
    by: its CMC counts a tie against the mate, its open-set figures as no candidate):
    such a search identifies nobody. In the open set only a tie of which one passes the
    operating point (below it the search is unknown anyway); in the closed set every
    tie.

    Parameters
    ----------
    index : SearchIndex
    decisions : Decisions
        The batch's `decision_values`.
    open_set : bool
        Name a tie only when one of its clients passes the operating point.

    Returns
    -------
    list (n) of list of str or None
    """
    from ssgallery.biometrics.identification import tied_at_top

    _, ranked, value, limit = decisions
    top = tied_at_top(ranked)
    named = (top.sum(axis=1) > 1) & ((top & (value >= limit)).any(axis=1) | (not open_set))
    return [[str(index.client_ids[k]) for k in np.flatnonzero(row)] if hit else None
            for row, hit in zip(top, named)]


def tie_text(result):
    """The one line a tie gets: ``tie between c01 and c02 at +S: not identified`` (S the tied
    ranking score)."""
    from ssgallery.errors import printable

    names = [printable(c) for c in result.tie]
    who = ", ".join(names[:-1]) + " and " + names[-1]
    return f"tie between {who} at {result.candidates[0].ranking_score:+.4f}: not identified"
