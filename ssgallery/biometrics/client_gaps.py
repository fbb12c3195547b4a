"""Client model by client model: how far a method's EER is above the same client's EER
under a reference method (the full SVM the method was distilled from).

A mean client EER close to the reference's can hide a few client models that fail
their person; these functions name them. Pure functions on each client's own EER per
repetition and set of claims, ``{(repetition, client, claims): EER}``
(`ssgallery.biometrics.evaluation.client_eers`).
"""

REFERENCE = "svm"
WORSE_BY = 0.05  # EER above the reference's, same client and repetition: a failed model
NAMED = 5  # the worst client models named
DIGITS = 12  # a difference of two EERs, rounded off its float noise: 0.2 - 0.15 is 0.05


def client_gaps(eers, reference, worse_by=WORSE_BY, named=NAMED):
    """Compare one method's client models with the reference method's.

    Parameters
    ----------
    eers, reference : dict
        ``{(repetition, client, claims): EER}`` of the method and of the reference
        (`ssgallery.biometrics.evaluation.client_eers`): a client model is compared with
        the reference's of the same repetition, client and claims.
    worse_by : float
        EER difference above which a client model counts as worse.
    named : int
        How many of the worse client models to name, the worst first.

    Returns
    -------
    dict
        ``compared`` (client models both methods scored on the same claims),
        ``other_claims`` (client models of a repetition and client both scored, but on
        other claims: not compared), ``worse`` (how many are more
        than ``worse_by`` above the reference's EER), ``worse_by``, ``worst``
        (``[repetition, client, EER difference]`` of at most ``named`` of them, largest
        difference first, then by repetition and client) and ``largest`` (the largest
        difference, negative when the method beats the reference on every client
        model; None when none is compared). Each difference is rounded to `DIGITS`
        decimals first: EERs are rates, and 0.2 - 0.15 = 0.05000000000000002 is 5
        points, not more, as is 0.25 - 0.2 = 0.04999999999999999.
    """
    gaps = sorted(((round(eers[k] - reference[k], DIGITS), k)
                   for k in eers if k in reference),
                  key=lambda gk: (-gk[0], gk[1]))
    worse = [(g, k) for g, k in gaps if g > worse_by]
    both = {k[:2] for k in eers} & {k[:2] for k in reference}
    return {"compared": len(gaps), "other_claims": len(both) - len({k[:2] for _, k in gaps}),
            "worse": len(worse), "worse_by": float(worse_by),
            "worst": [[k[0], k[1], float(g)] for g, k in worse[:named]],
            "largest": float(gaps[0][0]) if gaps else None}


def compare_with_reference(eers, reference_method=REFERENCE, worse_by=WORSE_BY):
    """`client_gaps` of every method against ``reference_method``.

    Parameters
    ----------
    eers : dict
        ``{(method, m): {(repetition, client, claims): EER}}``, every method's client
        EERs.

    Returns
    -------
    dict
        ``{(method, m): client_gaps(...)}`` for every method but the reference; empty
        when no method, or more than one entry, is the reference method.
    """
    ref = [e for (method, _), e in eers.items() if method == reference_method]
    if len(ref) != 1:
        return {}
    return {key: client_gaps(e, ref[0], worse_by)
            for key, e in eers.items() if key[0] != reference_method}
