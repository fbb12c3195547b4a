"""Client model by client model: how far a method's EER is above the same client's EER
under a reference method (the full SVM the method was distilled from).

A mean client EER close to the reference's can hide a few client models that fail
their person; these functions name them. Pure functions on each client's own EER per
repetition and set of claims, ``{(repetition, client, claims): EER}``
(`ssgallery.biometrics.evaluation.client_eers`).
"""

from ssgallery.biometrics.scores import method_label

REFERENCE = "svm"
WORSE_BY = 0.05  # EER above the reference's, same client and claims: a failed model
NAMED = 5  # the worst client models named
DIGITS = 12  # a difference of two EERs, rounded off its float noise: 0.2 - 0.15 is 0.05


# Why a method's client models were not compared (``reason`` of `client_gaps`)
OTHER_CLAIMS = "scored on other claims (score files of another run?)"
AMBIGUOUS = ("the svm scored their claims more than once, with different EERs (score files "
             "of two runs of one split?): which svm model is theirs is ambiguous")
NOTHING_IN_COMMON = ("the svm scored no client of the same repetition (score files of other "
                     "repetitions or clients?)")


def several_references(labels):
    """The ``reason`` when the scores hold more than one reference method (``labels``,
    e.g. ``["svm", "svm m=2"]``): none of them is taken as the teacher."""
    return (f"{len(labels)} {REFERENCE} references in the scores ({', '.join(labels)}): which "
            "one the methods were distilled from is ambiguous")


def _pairs(eers, reference):
    """(method key, reference key) of each client model compared, and the method keys
    whose claims the reference scored more than once with different EERs (ambiguous).

    A client model is compared with the reference's of the same repetition, client and
    claims when there is one: the teacher of a model of one run (whose repetitions may
    repeat a client's claims, with other teachers: the other clients' training images
    differ), or a model of the same split (the same teacher). Else with the reference's
    of the same client and claims, whatever its repetition number:
    `ssgallery.biometrics.scores.read_score_files` renumbers the clashing repetitions of
    the files of two runs, so that one run's repetition r may be numbered otherwise
    beside another run's; ambiguous when those models differ in EER.
    """
    by_claims = {}
    for k in reference:
        by_claims.setdefault(k[1:], []).append(k)
    pairs, ambiguous = [], []
    for k in eers:
        refs = [k] if k in reference else by_claims.get(k[1:], [])
        if len({reference[r] for r in refs}) > 1:
            ambiguous.append(k)
        elif refs:
            pairs.append((k, refs[0]))
    return pairs, ambiguous


def not_compared(reason, worse_by=WORSE_BY):
    """`client_gaps`'s record of a method none of whose client models was compared."""
    return {"compared": 0, "other_claims": 0, "ambiguous": 0, "worse": 0,
            "worse_by": float(worse_by), "worst": [], "largest": None, "reason": reason}


def client_gaps(eers, reference, worse_by=WORSE_BY, named=NAMED):
    """Compare one method's client models with the reference method's.

    Parameters
    ----------
    eers, reference : dict
        ``{(repetition, client, claims): EER}`` of the method and of the reference
        (`ssgallery.biometrics.evaluation.client_eers`): a client model is compared with
        the reference's of the same repetition, client and claims, else of the same
        client and claims whatever their repetition numbers
        (`ssgallery.biometrics.scores.read_score_files` renumbers clashing ones), but
        not when the reference scored those claims more than once with different EERs.
    worse_by : float
        EER difference above which a client model counts as worse.
    named : int
        How many of the worse client models to name, the worst first.

    Returns
    -------
    dict
        ``compared`` (client models both methods scored on the same claims),
        ``other_claims`` (client models of a repetition and client both scored, but on
        other claims: not compared), ``ambiguous`` (client models of a repetition the
        reference did not score on their claims, which it scored in other repetitions
        with different EERs, e.g. score files of two runs renumbered: not compared),
        ``worse`` (how many are more
        than ``worse_by`` above the reference's EER), ``worse_by``, ``worst``
        (``[repetition, client, EER difference]`` of at most ``named`` of them, largest
        difference first, then by repetition and client), ``largest`` (the largest
        difference, negative when the method beats the reference on every client
        model; None when none is compared) and ``reason`` (why none is compared:
        `OTHER_CLAIMS`, `AMBIGUOUS` or `NOTHING_IN_COMMON`; None when some are). Each
        difference is rounded to `DIGITS`
        decimals first: EERs are rates, and 0.2 - 0.15 = 0.05000000000000002 is 5
        points, not more, as is 0.25 - 0.2 = 0.04999999999999999.
    """
    pairs, ambiguous = _pairs(eers, reference)
    gaps = sorted(((round(eers[k] - reference[r], DIGITS), k) for k, r in pairs),
                  key=lambda gk: (-gk[0], gk[1]))
    worse = [(g, k) for g, k in gaps if g > worse_by]
    both = {k[:2] for k in eers} & {k[:2] for k in reference}
    other = len(both - {k[:2] for k, _ in pairs} - {k[:2] for k in ambiguous})
    reason = None if gaps else (AMBIGUOUS if ambiguous else OTHER_CLAIMS if other
                                else NOTHING_IN_COMMON)
    return {"compared": len(gaps), "other_claims": other, "ambiguous": len(ambiguous),
            "worse": len(worse), "worse_by": float(worse_by),
            "worst": [[k[0], k[1], float(g)] for g, k in worse[:named]],
            "largest": float(gaps[0][0]) if gaps else None, "reason": reason}


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
        when no method is the reference method; when more than one entry is (``svm``
        and ``svm m=2``), every other method's `not_compared` record, its ``reason``
        naming them (`several_references`).
    """
    ref = [key for key in eers if key[0] == reference_method]
    if not ref:
        return {}
    if len(ref) > 1:
        reason = several_references([method_label(*key) for key in ref])
        return {key: not_compared(reason, worse_by) for key in eers if key not in ref}
    return {key: client_gaps(e, eers[ref[0]], worse_by)
            for key, e in eers.items() if key[0] != reference_method}
