"""The FAR interval clustered by impostor person and by client at once (two-way), for
benchmarks/strangers_twoway.py.

`info`'s interval of the expected FAR is clustered by impostor person only
(`ssgallery.biometrics.intervals.clustered_interval`): one person's claims against every
client go together. A client's claims go together too (every person is scored by the
same client model at the same threshold). The two-way cluster-robust variance of
Cameron, Gelbach & Miller (J. Business & Economic Statistics 29(2), 2011) adds both and
takes off their intersection (the person-client cell counted twice):

    V = V_person + V_client - V_person x client,  V_G = sum_g (k_g - p n_g)^2 / N^2

and the interval is, as `info`'s, the Clopper-Pearson interval of the effective counts
K / d of N / d, with d = V / (p (1 - p) / N) the design effect (at least 1; when p is 0
or 1 the by-person d, which then takes the people as the trials).
"""

import numpy as np


def _spread(accepted, p, keys):
    """sum over the clusters ``keys`` of (k_g - p n_g)^2."""
    _, code = np.unique(keys, return_inverse=True)
    k, n = np.bincount(code, accepted), np.bincount(code)
    return float(np.sum((k - p * n) ** 2))


def twoway_interval(hits, people, clients, level=0.95):
    """``([low, high], d)`` of the accepted share of the held-out impostor scores
    ``hits`` (per client: bool array) clustered by their ``people`` (per client: the
    person of each score) and by client (``clients``: the ids, one per entry)."""
    from ssgallery.biometrics.calibration import person_sums
    from ssgallery.biometrics.intervals import beta_interval, design_effect

    a = np.concatenate([np.asarray(h, dtype=float) for h in hits])
    who = np.concatenate([np.asarray(w).astype(str) for w in people])
    client = np.concatenate([np.full(len(h), str(c)) for h, c in zip(hits, clients)])
    n, k = a.size, a.sum()
    p = k / n
    d = design_effect(person_sums(hits, people))
    if 0 < p < 1:
        cell = np.char.add(np.char.add(who, "\x00"), client)
        d = max(1.0, (_spread(a, p, who) + _spread(a, p, client) - _spread(a, p, cell))
                / (p * (1 - p) * n))
    low, high = beta_interval(k / d, n / d, level)
    return [float(low), float(high)], float(d)
