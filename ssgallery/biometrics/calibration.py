"""Decision thresholds that keep their false-acceptance promise on unseen people.

A client-specific threshold at a target FAR, estimated from that client's own ~100
held-out impostor scores, cannot pin a 1 % tail (with 95 scores it allows no false
accept at all, and the maximum of a small sample is a poor guide to the tail of the
population). Pooling the clients' held-out impostor scores after a per-client score
normalisation gives one tail estimate from thousands of scores.

Threshold modes (accept when g(x) >= t_c; every mode returns raw per-client t_c, so
verification is unchanged):

``client``
    t_c at the target FAR on client c's own held-out impostor scores.
``znorm-global``
    Z-norm each client's scores with its own impostor mean and std, pool every
    client's normalised held-out impostor scores, take one global threshold T at the
    target FAR on the pool: t_c = mean_c + std_c * T. The pool is normalised out of
    sample (`cross_normalised`: each impostor person with the mean and std of the
    client's other impostor people), so that T accounts for the error of each
    client's estimated mean and std.
``shrink``
    The normalised client threshold shrunk half-way toward T:
    t_c = mean_c + std_c * (w * T_c + (1 - w) * T), w = ``shrink_weight``.

`clopper_pearson` gives the exact binomial interval of an observed FAR;
`accepts_too_many` says when a threshold set on held-out scores does not fit the model
it is applied to.
"""

import numpy as np

from ssgallery.biometrics import metrics
from ssgallery.biometrics.heldout import floored_std
from ssgallery.biometrics.intervals import (  # person_*: re-exported
    clopper_pearson,
    person_counts,
    person_sums,
    sums_interval,
)
from ssgallery.errors import InputError

THRESHOLD_MODES = ("client", "znorm-global", "shrink")
DEFAULT_THRESHOLD_MODE = "znorm-global"
SHRINK_WEIGHT = 0.5


def constant_spread(std, mean):
    """Whether Z-norm spreads ``std`` (any shape, with their ``mean``) are at their floor:
    constant impostor scores, no scale to normalise with (1e-9 of the mean's size)."""
    return np.asarray(std) <= 1e-9 * np.maximum(1.0, np.abs(mean))


def accepts_too_many(hits, target_far, people=None, level=0.95):
    """True when the impostor scores accepted at a threshold (``hits``) are significantly
    more than ``target_far`` allows: the lower end of their interval at ``level`` by
    impostor person (`ssgallery.biometrics.intervals.clustered_interval` of
    `person_sums`) is above it.

    Applied to a model's own training impostors at the threshold its cross-validated
    impostor scores gave: the model was fitted to score those people low, so its
    training scores are optimistic and such a threshold accepts fewer of them than of
    new people. When it accepts significantly more than the target FAR, the
    cross-validation's models scored on another scale than the model that is
    deployed, and their scores cannot set its threshold. One person's images are
    accepted together (one person who looks like the client), so the person is the
    trial: 5 accepted of 140 scores is significant when they are 5 people's and not
    when they are one person's.

    Parameters
    ----------
    hits : array_like of bool, shape (n,)
        Whether each impostor score is accepted.
    target_far : float
    people : array_like of shape (n,), optional
        The person of each score (default: each score its own person, the plain
        Clopper-Pearson interval of the scores).
    level : float

    Returns
    -------
    bool
        False when there is no score.
    """
    low = sums_interval(person_sums([hits], [people]), level)[0]
    return low > target_far


def people_bound(accepted_people, people):
    """The FAR to expect of a threshold set on the scores of ``people`` impostors, of whom
    ``accepted_people`` have a score at or above it: (accepted_people + 1) / (people + 1).

    For a new person exchangeable with those people, the rank of their score among
    theirs is uniform, so a threshold that a person's score must beat is beaten by
    about that share of new people, whatever the scores' distribution (the conformal
    bound). It counts people, not images: one person's images are not independent
    trials, and a threshold at the highest of 2 people's scores accepts about 1 new
    person in 3 however many images they gave."""
    return (int(accepted_people) + 1) / (int(people) + 1)


def _unresolved(scores, accepted, people, fitted, held_out):
    """``{"clients", "people": [min, max], "far", "training"}`` over the clients
    ``fitted`` (their threshold was fitted on their own counted scores, so their count
    says nothing): how many, the range of their impostor people (``people``: per client,
    the subject of each score, or None: each score a person), the mean `people_bound`
    of those whose scores are ``held_out`` (None if none is), and how many are not
    (training scores, which their models were fitted to push down: no bound). None if
    no client is fitted."""
    bounds, sizes, training = [], [], 0
    for s, acc, who, f, h in zip(scores, accepted, people, fitted, held_out):
        if not f:
            continue
        who = np.arange(np.size(s)) if who is None else np.asarray(who).astype(str)
        sizes.append(len(np.unique(who)))
        if h:
            bounds.append(people_bound(len(np.unique(who[acc])), sizes[-1]))
        training += not h
    if not sizes:
        return None
    return {"clients": len(sizes), "people": [min(sizes), max(sizes)],
            "far": float(np.mean(bounds)) if bounds else None, "training": training}


def clustered_record(sums):
    """A rate's interval by cluster as a calibration records it: ``{"ci": [low, high],
    "design_effect", "sums"}`` (`ssgallery.biometrics.intervals.sums_interval` of the
    `ssgallery.biometrics.intervals.cluster_sums` ``sums``, kept so that an update can
    add its clients'); None without trials."""
    if sums["n"] <= 0:
        return None
    low, high, d = sums_interval(sums)
    return {"ci": [low, high], "design_effect": d, "sums": dict(sums)}


def _gap_threshold(scores, far):
    """Threshold at ``far`` in the middle of the gap above the first rejected score.

    The same operating point as `metrics.threshold_at_far` (at most
    floor(far * n) scores accepted), but far enough from every score that mapping it
    back to a client's raw scale (mean + std * T) cannot flip a decision by rounding.
    """
    s = np.sort(np.asarray(scores, dtype=float))[::-1]
    k = int(np.floor(far * s.size + 1e-9))
    if k >= s.size:
        return float(s[-1])
    above = s[s > s[k]]
    if above.size:
        return float(0.5 * (s[k] + above.min()))
    return float(s[k] + 1e-9 * max(1.0, abs(s[k])))


def _halves(n):
    """Two halves of a client's held-out impostor scores: alternate scores."""
    return np.arange(n) % 2 == 0


def cross_fittable(n):
    """Whether `cross_normalised` can normalise ``n`` scores out of sample when their
    people are unknown or too few to leave one out: at least 4 (2 in each half)."""
    return n >= 4


def subject_out_fittable(subjects):
    """Whether `subject_out_normalised` can leave each subject out of ``subjects`` (the
    subject of each score): at least 3 subjects (so that every subject leaves at least
    2 scores of others to take a mean and std of)."""
    return np.unique(np.asarray(subjects).astype(str).ravel()).size >= 3


def subject_out_normalised(scores, subjects, scale=None):
    """A client's held-out impostor scores normalised leave-one-subject-out, shape (n,):
    each score centred on the mean of the client's scores of every *other* subject and
    divided by ``scale`` (default: by their standard deviation, a Z-norm).

    A stranger's score is normalised with parameters estimated from other people; so
    is each of these. Normalised in sample, a client whose mean happens to fit its
    held-out people badly would not show it, yet that client is the one a stranger's
    best score comes from; leaving one person out keeps the parameters' error at that
    of n - 1 people's scores, as deployed. In sample when there are fewer than 3
    subjects (`subject_out_fittable`).
    """
    s = np.asarray(scores, dtype=float).ravel()
    _, code = np.unique(np.asarray(subjects).astype(str).ravel(), return_inverse=True)
    if code.shape != s.shape:
        raise InputError(f"expected one subject per score, got {code.shape} and {s.shape}")
    if not subject_out_fittable(subjects):
        spread = floored_std(s) if scale is None else scale
        return (s - s.mean()) / spread
    n = np.bincount(code)
    rest = s.size - n
    total, squares = np.bincount(code, s), np.bincount(code, s * s)
    mean = (s.sum() - total) / rest
    if scale is not None:
        return (s - mean[code]) / float(scale)
    var = ((s * s).sum() - squares - rest * mean ** 2) / (rest - 1)
    return (s - mean[code]) / np.sqrt(np.maximum(var, 1e-24))[code]


def cross_normalised(scores, people=None):
    """A client's impostor scores Z-normed out of sample, shape (n,).

    Normalising scores with parameters fitted on the same scores makes their pooled
    tail lighter than that of new impostors' (whose Z-norm parameters are estimates);
    cross-fitting keeps the estimation error in the pool, so a threshold set on it
    holds on unseen people. With ``people`` (the person of each score): each person's
    scores with the mean and std of the client's other people's
    (`subject_out_normalised`), as a stranger is normalised with parameters of other
    people. Halves of alternate scores hold the same people, so they carry none of the
    error of a mean and std estimated on a few people, and a T set on them accepts more
    strangers than it promises (docs/benchmarks/strangers.md);
    they are the fallback when the people are unknown or fewer than 3
    (`subject_out_fittable`): each half with the other half's mean and std. In sample
    below 4 scores (`cross_fittable`), people or not.
    """
    s = np.asarray(scores, dtype=float)
    if not cross_fittable(s.size):
        return (s - s.mean()) / floored_std(s)
    if people is not None and subject_out_fittable(people):
        return subject_out_normalised(s, people)
    a = _halves(s.size)
    z = np.empty_like(s)
    for part, other in ((a, ~a), (~a, a)):
        z[part] = (s[part] - s[other].mean()) / floored_std(s[other])
    return z


def calibrate_thresholds(impostors, normalizations, target_far, mode=DEFAULT_THRESHOLD_MODE,
                         shrink_weight=SHRINK_WEIGHT, cross_fit="person",
                         global_threshold=None, people=None, held_out=None):
    """Per-client thresholds of one threshold mode from held-out impostor scores.

    Parameters
    ----------
    impostors : list of ndarray, each of shape (n_c,)
        Per client, impostor scores of people its model did not see (CV folds).
    normalizations : list of dict
        Per client ``{"kind": "znorm", "mean", "std"}`` (ignored by ``client``).
    target_far : float
    mode : {"client", "znorm-global", "shrink"}
    shrink_weight : float
        Weight of the client's own normalised threshold in ``shrink``.
    cross_fit : {"person", "parity", None}
        How the pool is normalised (`cross_normalised`): leaving one person of
        ``people`` out (halves of alternate scores where the people are unknown or
        fewer than 3), halves of alternate scores, or in sample (None).
    global_threshold : float, optional
        A normalised T fixed beforehand (e.g. that of a gallery's existing clients)
        instead of the one at the target FAR of this pool; the counts then say how
        these clients' held-out impostors fare at it.
    people : list of ndarray or None, optional
        Per client, the person (subject) of each impostor score (None: unknown), for
        the cross-fit and ``unresolved`` (unknown: each score a person).
    held_out : list of bool, optional
        Per client, whether its scores are held out (default: all); for ``unresolved``.

    Returns
    -------
    thresholds : ndarray of shape (n_clients,)
        Raw thresholds on each client's g(x) (accept when g(x) >= t). A client whose
        impostor scores are constant (no spread to normalise with) keeps its own
        ``client`` threshold in every mode.
    info : dict
        ``mode``, ``global_threshold`` (normalised T, None for ``client``), and the
        held-out estimate of the FAR: ``accepted`` / ``impostors`` (counts over all
        clients; for the normalised modes counted on the cross-fitted scores of
        `cross_normalised`, on which T is set), ``expected_far`` and its 95 %
        Clopper-Pearson ``expected_far_ci`` (the scores counted as independent trials);
        ``far_by_person`` (`clustered_record`: the interval with the impostor person as
        the trial, `ssgallery.biometrics.intervals.clustered_interval`; None unless
        every client's ``people`` are known: the scores of a client without them may be
        the others' people's, `person_sums`); ``unresolved`` (`_unresolved`, None when
        every client's count is an estimate): the clients whose threshold was fitted on
        the very scores counted, so that the count is 0 or floor(F n) by construction,
        not an estimate: normalised in sample (fewer than 4 scores,
        `cross_fittable`) in the normalised modes, and every client there when the pool
        holds fewer than 1 / target_far scores (T set above all of them), fewer than
        1 / target_far scores (the threshold above all of them) in ``client``; their expected FAR is
        `people_bound`'s, by impostor person, when their scores are held out;
        ``person_counts``: `person_counts` (None without every client's people), what
        ``far_by_person`` sums; ``by_client``: per client, the `person_sums` of its
        own accepted scores (the
        same accepts, its impostor people the clusters), for each client's FAR and
        interval (`ssgallery.biometrics.intervals.sums_interval`); None for a client
        whose threshold was fitted on the scores counted (``unresolved``), and for
        every client in ``client`` mode (each threshold sits at the target on the
        client's own scores: its count is floor(F n) by construction).
    """
    if mode not in THRESHOLD_MODES:
        raise ValueError(f"unknown threshold mode {mode!r}; choose from "
                         f"{', '.join(THRESHOLD_MODES)}")
    if len(impostors) == 0:
        raise ValueError("no clients to calibrate")
    big_t = None
    total = int(sum(np.size(s) for s in impostors))
    people = people if people is not None else [None] * len(impostors)
    if mode == "client":
        t, hits, fitted = _client_thresholds(impostors, target_far)
    else:
        t, hits, fitted, big_t = _normalised_thresholds(
            impostors, normalizations, target_far, mode, (shrink_weight, cross_fit),
            global_threshold, people)
    accepted = int(sum(np.sum(h) for h in hits))
    return t, {"mode": mode, "target_far": float(target_far),
               "global_threshold": None if big_t is None else float(big_t),
               "accepted": accepted, "impostors": total, "expected_far": accepted / total,
               "expected_far_ci": list(clopper_pearson(accepted, total)),
               "far_by_person": clustered_record(person_sums(hits, people))
               if all(who is not None for who in people) else None,
               "person_counts": person_counts(hits, people)
               if all(who is not None for who in people) else None,
               "unresolved": _unresolved(impostors, hits, people, fitted,
                                         held_out or [True] * len(impostors)),
               "by_client": [None if f or mode == "client" else person_sums([h], [who])
                             for h, who, f in zip(hits, people, fitted)]}


def _client_thresholds(impostors, target_far):
    """``client`` mode of `calibrate_thresholds`: each client's threshold at the target
    on its own scores; ``(thresholds, hits per client, fitted per client)`` (fitted:
    fewer than 1 / target_far scores, the threshold above all of them)."""
    t = np.array([metrics.threshold_at_far(s, target_far) for s in impostors])
    hits = [np.asarray(s) >= tc for s, tc in zip(impostors, t)]
    fitted = [np.floor(target_far * np.size(s) + 1e-9) == 0 for s in impostors]
    return t, hits, fitted


def _normalised_thresholds(impostors, normalizations, target_far, mode, how,
                           global_threshold, people):
    """The normalised modes of `calibrate_thresholds` (``how``: its ``shrink_weight``
    and ``cross_fit``): the pool's cross-fitted scores, T at the target on them (or the
    ``global_threshold`` given), each client's normalised threshold and raw one;
    ``(thresholds, hits on the cross-fitted scores, fitted per client, T)``."""
    shrink_weight, cross_fit = how
    if cross_fit is None:
        z = [(np.asarray(s, dtype=float) - n["mean"]) / n["std"]
             for s, n in zip(impostors, normalizations)]
    else:
        z = [cross_normalised(s, who if cross_fit == "person" else None)
             for s, who in zip(impostors, people)]
    pooled = np.concatenate(z)
    fitted = [not cross_fittable(np.size(s)) for s in impostors]
    if global_threshold is None and np.floor(target_far * pooled.size + 1e-9) == 0:
        # fewer than 1 / F pooled scores: T above every one of them, so every count is
        # 0 by construction (as `_client_thresholds`' fitted), not an estimate
        fitted = [True] * len(impostors)
    big_t = _gap_threshold(pooled, target_far) if global_threshold is None \
        else float(global_threshold)
    mu = np.array([n["mean"] for n in normalizations], dtype=float)
    sd = np.array([n["std"] for n in normalizations], dtype=float)
    if mode == "znorm-global":
        tz = np.full(len(z), big_t)
    else:
        own = np.array([_gap_threshold(s, target_far) for s in z])
        tz = shrink_weight * own + (1.0 - shrink_weight) * big_t
    t = mu + sd * tz
    # constant impostor scores (std at its floor) give no scale to normalise with:
    # such a client keeps its own threshold
    flat = constant_spread(sd, mu)
    if flat.any():
        t[flat] = [metrics.threshold_at_far(s, target_far)
                   for s, f in zip(impostors, flat) if f]
    return t, [zc >= tc for zc, tc in zip(z, tz)], fitted, big_t


__all__ = ["DEFAULT_THRESHOLD_MODE", "THRESHOLD_MODES", "accepts_too_many",
           "calibrate_thresholds", "clopper_pearson", "clustered_record", "cross_fittable",
           "cross_normalised", "people_bound", "person_counts", "person_sums",
           "subject_out_fittable", "subject_out_normalised"]
