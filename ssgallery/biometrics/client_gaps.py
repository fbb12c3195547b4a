"""Client model by client model: how far a method's EER is above the same client's EER
under a reference method (the full SVM the method was distilled from).

A mean client EER close to the reference's can hide a few client models that fail
their person; these functions name them. Pure functions on score tables
(`ssgallery.biometrics.scores.Scores`), as `ssgallery.biometrics.evaluation`.
"""

from ssgallery.biometrics import metrics
from ssgallery.biometrics.evaluation import client_curves

REFERENCE = "svm"
WORSE_BY = 0.05  # EER above the reference's, same client and repetition: a failed model
NAMED = 5  # the worst client models named


def client_eers(tables):
    """Each client's own EER per repetition, ``{(repetition, client): EER}``, over the
    tables of one method (clients without a genuine or an impostor claim are left
    out, as in `ssgallery.biometrics.evaluation.client_curves`)."""
    return {(int(t.repetition), c): metrics.curve_eer(far, frr)
            for t in tables for c, far, frr in client_curves(t)}


def client_gaps(eers, reference, worse_by=WORSE_BY, named=NAMED):
    """Compare one method's client models with the reference method's.

    Parameters
    ----------
    eers, reference : dict
        ``{(repetition, client): EER}`` of the method and of the reference
        (`client_eers`).
    worse_by : float
        EER difference above which a client model counts as worse.
    named : int
        How many of the worse client models to name, the worst first.

    Returns
    -------
    dict
        ``compared`` (client models both methods scored), ``worse`` (how many are more
        than ``worse_by`` above the reference's EER), ``worse_by``, ``worst``
        (``[repetition, client, EER difference]`` of at most ``named`` of them, largest
        difference first, then by repetition and client) and ``largest`` (the largest
        difference, negative when the method beats the reference on every client
        model; None when none is compared).
    """
    gaps = sorted(((eers[k] - reference[k], k) for k in eers if k in reference),
                  key=lambda gk: (-gk[0], gk[1]))
    worse = [(g, k) for g, k in gaps if g > worse_by]
    return {"compared": len(gaps), "worse": len(worse), "worse_by": float(worse_by),
            "worst": [[k[0], k[1], float(g)] for g, k in worse[:named]],
            "largest": float(gaps[0][0]) if gaps else None}


def compare_with_reference(groups, reference_method=REFERENCE, worse_by=WORSE_BY):
    """`client_gaps` of every method against ``reference_method``.

    Parameters
    ----------
    groups : dict
        ``{(method, m): [Scores, ...]}``, every repetition's tables of each method.

    Returns
    -------
    dict
        ``{(method, m): client_gaps(...)}`` for every method but the reference; empty
        when no group is the reference method.
    """
    ref = [tables for (method, _), tables in groups.items() if method == reference_method]
    if len(ref) != 1:
        return {}
    reference = client_eers(ref[0])
    return {key: client_gaps(client_eers(tables), reference, worse_by)
            for key, tables in groups.items() if key[0] != reference_method}
