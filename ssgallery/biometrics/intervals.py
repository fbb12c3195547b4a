"""Binomial intervals of error rates whose trials come in clusters.

A rate counted over claims (a FAR over impostor claims, an FRR over genuine claims, an
FPIR over searches) is a binomial proportion only when the claims are independent.
They are not: the same impostor person's images are claimed against every client, and
one person who looks like a client gives many accepts at once; one client's genuine
images are rejected together when its model is poor. The independent unit is the
cluster (the impostor person, the client), and an interval that counts claims is too
narrow by about the square root of the design effect.

`clustered_interval` widens the exact Clopper-Pearson interval (`beta_interval`,
`clopper_pearson`) by the design effect of the clusters (Kish 1965, *Survey Sampling*,
Sect. 5.4): the counts are divided by it, and the Clopper-Pearson interval of the
effective counts is taken, as Rao & Scott (1992, "A simple method for the analysis of
clustered binary data", *Biometrics* 48(2):577-585) do for tests of clustered
proportions. The design effect is estimated from the spread of the per-cluster counts
around the pooled rate (`design_effect`), from sums that blocks of disjoint clusters can
add (`cluster_sums`, `merged_sums`), so that a gallery's record can be combined with an
update's; impostor scores are clustered by person with `person_counts` / `person_sums`.
"""

import numpy as np

from ssgallery.formats.interval_sums import SUM_KEYS

__all__ = ["SUM_KEYS", "beta_interval", "clopper_pearson", "cluster_sums",
           "clustered_interval", "design_effect", "merged_sums", "person_counts",
           "person_sums", "sums_interval"]


def beta_interval(k, n, level=0.95):
    """Clopper-Pearson interval of a rate ``k / n`` whose counts may be fractional
    (effective counts), elementwise.

    Parameters
    ----------
    k, n : float or ndarray of the same shape (...)
        Successes and trials, 0 <= k <= n.
    level : float

    Returns
    -------
    low, high : ndarray of shape (...)
        0 below when ``k == 0``, 1 above when ``k == n``; ``(0, 1)`` where ``n <= 0``.
    """
    from scipy.stats import beta

    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        low = np.where(k <= 0, 0.0, beta.ppf(a, np.maximum(k, 1e-12),
                                             np.maximum(n - k + 1, 1e-12)))
        high = np.where(k >= n, 1.0, beta.ppf(1.0 - a, k + 1, np.maximum(n - k, 1e-12)))
    empty = n <= 0
    return np.where(empty, 0.0, low), np.where(empty, 1.0, high)


def clopper_pearson(k, n, level=0.95):
    """Exact (Clopper-Pearson) two-sided interval of a binomial rate k / n.

    Returns
    -------
    low, high : float
        ``(0, 1)`` when ``n == 0``.
    """
    low, high = beta_interval(int(k), int(n), level)
    return float(low), float(high)


def cluster_sums(k, n):
    """The sums a clustered rate's interval needs, from per-cluster counts.

    Parameters
    ----------
    k, n : array_like of shape (G,)
        Per cluster: events (accepts, rejects) and trials (claims), 0 <= k <= n.

    Returns
    -------
    dict
        ``clusters`` (G, clusters with at least one trial), ``k`` and ``n`` (the
        totals), ``kk``, ``kn``, ``nn`` (sums of k², k n, n²). Blocks of disjoint
        clusters add up (`merged_sums`).
    """
    k, n = np.asarray(k, dtype=float).ravel(), np.asarray(n, dtype=float).ravel()
    k, n = k[n > 0], n[n > 0]
    return {"clusters": int(n.size), "k": float(k.sum()), "n": float(n.sum()),
            "kk": float(k @ k), "kn": float(k @ n), "nn": float(n @ n)}


def merged_sums(*blocks):
    """`cluster_sums` of several blocks taken as disjoint clusters (their sum)."""
    return {key: (int if key == "clusters" else float)(sum(b[key] for b in blocks))
            for key in SUM_KEYS}


def person_sums(hits, people):
    """`ssgallery.biometrics.intervals.cluster_sums` of accepted impostor scores by
    impostor person: one person's scores against every client form one cluster.

    Parameters
    ----------
    hits : list of array_like of bool
        Per client, whether each impostor score is accepted, shape (n_c,).
    people : list of array_like or None
        Per client, the person of each score; every entry None: no person is known, and
        each score is a person of its own (the plain interval of the scores).

    Returns
    -------
    dict
        The sums (`ssgallery.biometrics.intervals.cluster_sums`).

    Raises
    ------
    ValueError
        The people of some clients but not all: the scores of the others may be the same
        people's, so counting each as a person of its own would claim more people than
        were seen (an interval too narrow, named by person). Give every client's people,
        or none.
    """
    hits = [np.asarray(h, dtype=bool).ravel() for h in hits]
    unknown = [who is None for who in people]
    if any(unknown) and not all(unknown):
        raise ValueError(f"impostor people given for {unknown.count(False)} of "
                         f"{len(unknown)} clients: give every client's people, or none")
    if all(unknown):  # each score a person of its own
        flat = np.concatenate(hits) if hits else np.zeros(0, dtype=bool)
        return cluster_sums(flat, np.ones(flat.size))
    return cluster_sums(*person_counts(hits, people)[1:])


def person_counts(hits, people):
    """Per impostor person: accepted scores and scores, over every client (the clusters
    of `person_sums`).

    Parameters
    ----------
    hits : list of array_like of bool
        Per client, whether each impostor score is accepted.
    people : list of array_like
        Per client, the person of each score (every client's).

    Returns
    -------
    names : ndarray of str, shape (G,)
        The people, sorted.
    k, n : ndarray of shape (G,)
        Accepted scores and scores of each.
    """
    hits = [np.asarray(h, dtype=bool).ravel() for h in hits]
    who = [np.asarray(w).astype(str).ravel() for w in people]
    names, code = np.unique(np.concatenate(who) if who else np.zeros(0, str),
                            return_inverse=True)
    return (names, np.bincount(code, np.concatenate(hits) if hits else None,
                               minlength=names.size).astype(int),
            np.bincount(code, minlength=names.size))


def design_effect(sums):
    """The design effect of a clustered rate: its variance over the binomial variance.

    d = sum_i (k_i - p n_i)² / (p (1 - p) N), p = K / N: the between-cluster
    (ratio-estimator) variance of p over the binomial one, without the G / (G - 1)
    small-sample factor, so that d = 1 exactly when every cluster holds one trial, and
    d = m when G clusters of m trials each are all-or-none. Never below 1: an
    interval is never made narrower than the binomial one. When p is 0 or 1, or there
    is one cluster, the spread between clusters cannot be seen: d = N / G, the
    clusters taken as the trials (the widest).

    Parameters
    ----------
    sums : dict
        `cluster_sums`.

    Returns
    -------
    float
        d >= 1 (1 when there is no trial).
    """
    g, k, n = sums["clusters"], sums["k"], sums["n"]
    if n <= 0 or g <= 0:
        return 1.0
    p = k / n
    if g == 1 or p <= 0.0 or p >= 1.0:
        return max(1.0, n / g)
    spread = sums["kk"] - 2.0 * p * sums["kn"] + p * p * sums["nn"]
    return max(1.0, float(spread / (p * (1.0 - p) * n)))


def sums_interval(sums, level=0.95):
    """`clustered_interval` of `cluster_sums`: ``(low, high, design_effect)``."""
    d = design_effect(sums)
    low, high = beta_interval(sums["k"] / d, sums["n"] / d, level)
    return float(low), float(high), d


def clustered_interval(k, n, level=0.95):
    """Interval of a rate sum(k) / sum(n) whose trials come in clusters.

    The Clopper-Pearson interval (`beta_interval`) of the effective counts K / d of
    N / d, d the `design_effect` of the per-cluster counts (Kish's effective sample
    size; Rao & Scott 1992). With one trial per cluster it is the plain
    Clopper-Pearson interval of K of N; with all-or-none clusters of equal size m it
    is the Clopper-Pearson interval of the clusters (K / m of G). It assumes the
    clusters independent and alike (one rate for all, the spread between them
    measured, not modelled); with few clusters the design effect is itself uncertain,
    and an interval from a handful of clusters is a rough guide.

    Parameters
    ----------
    k, n : array_like of shape (G,)
        Per cluster: events and trials (e.g. per impostor person: accepted claims and
        claims).
    level : float

    Returns
    -------
    low, high : float
    design_effect : float
        d >= 1.
    """
    return sums_interval(cluster_sums(k, n), level)
