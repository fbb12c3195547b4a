"""The one scale of the 1:N scores (`ssgallery.biometrics.openset`, which re-exports
these): client c's score is ``(g_c(x) - mean_c) / scale``, centred on its impostor mean,
with ``scale`` the root mean of the clients' impostor variances (`pooled_scale`); a client
that measured no spread of its own borrows one (`spread_measured`, `pooled_spreads`)."""

import numpy as np

from ssgallery.biometrics.calibration import constant_spread
from ssgallery.errors import InputError
from ssgallery.formats.gallery.header_records import SCALE_FLOOR


def pooled_scale(stds):
    """One impostor-score scale for every client: the root mean of their variances.

    The 1:N score of client c is ``(g_c(x) - mean_c) / scale``: centred on the client's
    impostor mean, on one scale for all. Dividing by each client's own std (Z-norm)
    turns a client whose ~20 held-out people happened to score tightly into a "lamb"
    whose std is too small for new people: a stranger's normalised score on it is
    inflated and the best of N scores comes from it (on LFW/dlib one client with a
    held-out std half its strangers' drew most false alarms).
    """
    v = np.asarray(stds, dtype=float) ** 2
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise InputError("no finite impostor-score spread to scale the 1:N scores with")
    return float(max(np.sqrt(v.mean()), SCALE_FLOOR))


# The std a client takes when no client of its gallery measured one: the unit of the
# models' scores. Every client model is distilled from an SVM, whose decision values put
# its training impostors at -1 and its training images at +1 (the margin).
MARGIN_SPREAD = 1.0


def spread_measured(norm):
    """Whether a client's Z-norm std was measured: from at least 2 impostor scores
    (``n``; absent in galleries written before it: taken as measured) that are not all
    equal (a std above 1e-9 of the mean's size, where calibration calls a client's
    scores constant, `ssgallery.biometrics.calibration.calibrate_thresholds`). A std
    borrowed from other clients (``std_source``) was not."""
    return (int(norm.get("n", 2)) >= 2 and "std_source" not in norm
            and not constant_spread(float(norm["std"]), float(norm["mean"])))


def pooled_spreads(normalizations):
    """Every client's Z-norm, a client without a measured spread (`spread_measured`)
    given one: the `pooled_scale` of the clients that measured theirs, or
    `MARGIN_SPREAD` when none did.

    A client scored by one impostor (``compress --max-impostors 1``), or by impostors
    that all score alike, has no spread of its own: its std would be the floor (1e-12)
    and its normalised scores (g - mean) / std would reach 1e12, above every other
    client's whatever the probe (identify's ranking and its 1:N scale, the root mean
    of the clients' variances, with it).

    Parameters
    ----------
    normalizations : list of dict or None
        Per client ``{"kind": "znorm", "mean", "std", "n"}`` (anything else, e.g. None
        for a client without a normalisation, is left as it is and pools nothing).

    Returns
    -------
    normalizations : list of dict
        The same dicts; a client without a measured spread gets a new one with ``std``
        the borrowed spread and ``std_source`` "pooled" (from the other clients) or
        "margin" (`MARGIN_SPREAD`).
    filled : list of int
        The indexes of those clients.
    """
    znorm = [isinstance(n, dict) and n.get("kind") == "znorm" for n in normalizations]
    measured = [z and spread_measured(n) for n, z in zip(normalizations, znorm)]
    filled = [i for i, (z, ok) in enumerate(zip(znorm, measured)) if z and not ok]
    if not filled:
        return list(normalizations), filled
    stds = [float(n["std"]) for n, ok in zip(normalizations, measured) if ok]
    source, std = ("pooled", pooled_scale(stds)) if stds else ("margin", MARGIN_SPREAD)
    return [dict(n, std=std, std_source=source) if i in filled else n
            for i, n in enumerate(normalizations)], filled
