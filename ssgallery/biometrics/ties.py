"""The tie rule of a search, one for ``identify``, ``roc`` and the stored 1:N curve: a
search whose best score two or more clients share (equal within `TIE_RTOL` of the
score) identifies nobody, whatever the threshold (re-exported by
`ssgallery.biometrics.identification`, whose functions count searches by it;
`ssgallery.biometrics.openset` sets the operating point by it)."""

import numpy as np

__all__ = ["TIE_RTOL", "search_best", "tie_tolerance", "tied_at_top"]

# Two scores of one search closer than this (relative to max(1, |score|)) are a tie. Scores
# are float64; one client's score computed two ways (identify's stacked index, verify's
# and roc's per-client groups) differed by at most 5 ulps (1.1e-15) on the sample data:
# 1e-9 leaves a wide margin for rounding (larger m and d, other matchers) and is far below
# any difference a face makes (scores are printed to 3-4 decimals).
TIE_RTOL = 1e-9


def tie_tolerance(scores):
    """The distance within which another score ties with ``scores`` (elementwise):
    ``TIE_RTOL * max(1, |score|)``."""
    return TIE_RTOL * np.maximum(1.0, np.abs(np.asarray(scores, dtype=float)))


def tied_at_top(scores):
    """Which clients share each search's best score, within `tie_tolerance`.

    Parameters
    ----------
    scores : ndarray, shape (n_probes, n_clients)

    Returns
    -------
    ndarray of bool, shape (n_probes, n_clients)
        True for every client at the best score; a row with two or more is a tie, and
        that search identifies nobody (``identify`` answers "unknown").
    """
    scores = np.asarray(scores, dtype=float)
    best = scores.max(axis=1, keepdims=True)
    return scores >= best - tie_tolerance(best)


def search_best(scores):
    """Each search's best score as the open set thresholds it: ``-inf`` for a tie
    (`tied_at_top`), which no threshold lets through, shape (n_probes,)."""
    scores = np.asarray(scores, dtype=float)
    if scores.shape[0] == 0:
        return np.zeros(0)
    return np.where(tied_at_top(scores).sum(axis=1) > 1, -np.inf, scores.max(axis=1))
