"""The lines and warnings ``compress`` and ``info`` give of a gallery's operating
points: its thresholds and their expected FAR and FRR (`calibration_line`,
`unresolved_warning`, `frr_warning`; per client: `ssgallery.cli.operating_far`) and its
1:N search threshold (`open_set_line`,
`open_set_warning`), read from the records the gallery keeps."""

from ssgallery.checks import is_finite_real, is_int
from ssgallery.errors import printable
from ssgallery.tables import counted

HIGH_FRR = 0.2  # an expected FRR from which compress and info warn
# impostor people behind the thresholds below which compress and info warn: the smallest
# pool of docs/benchmarks/small_galleries.md (AT&T) on which the target FAR held for
# people never seen (docs/operating-points.md, "Small galleries")
MIN_IMPOSTOR_PEOPLE = 20
# compress's expected FRR and the share of new genuine images the shipped models reject,
# pooled over 10 AT&T galleries of eigenface (docs/benchmarks/frr_heldout.md): the
# held-out images lie in the basis (`in_basis_note`); the same on the synthetic faces
# (sample_data's generator), where the two agree
FRR_IN_BASIS = (37.9, 20.9)
FRR_SYNTHETIC = (45.5, 44.5)

# what the expected FPIR does not promise each stranger (docs/identification.md, "A
# rate over strangers' searches"; measured in docs/benchmarks/open_set_strangers.md)
PER_STRANGER = ("; a rate over many strangers' searches, not a bound for each stranger: "
                "one who looks like a client can be returned in many of their searches, "
                "and a few strangers then meet an FPIR above this interval "
                "(docs/benchmarks/open_set_strangers.md)")


def _num(value):
    """A finite float from a calibration record (data from a file: `is_finite_real`),
    else None."""
    return float(value) if is_finite_real(value) else None


def _counted(cal, count, total, what):
    """``k of n held-out <what> scores``; ``training`` instead of ``held-out`` when every
    client's scores are training scores (``training_clients``), and how many are when
    some are (`ssgallery.app.thresholds.training_share`)."""
    from ssgallery.app.thresholds import training_share

    t = cal.get("training_clients")
    kind = {"all": "training", "none": "held-out"}.get(
        training_share(t, cal.get("clients")), f"held-out (training for {counted(t, 'client')})")
    return f"{cal.get(count)} of {counted(cal.get(total), f'{kind} {what} score')}"


def _rate(cal, key, count, total, what):
    """``x% (95% Clopper-Pearson a-b% by <unit>: G <units>, design effect d; k of n
    held-out <what> scores)`` (the interval by cluster, `_by_cluster`), or for a record
    without one (written before it) ``x% (95% Clopper-Pearson a-b%, k of n held-out
    <what> scores, counted as independent)``; None when the rate is not recorded."""
    value, ci = _num(cal.get(key)), cal.get(f"{key}_ci")
    if value is None or not isinstance(ci, list) or len(ci) != 2 or None in map(_num, ci):
        return None
    clustered = _by_cluster(cal, key)
    if clustered is None:
        return (f"{100 * value:.2f}% (95% Clopper-Pearson {100 * ci[0]:.2f}-"
                f"{100 * ci[1]:.2f}%, {_counted(cal, count, total, what)}, counted as "
                "independent)")
    return f"{100 * value:.2f}% (95% Clopper-Pearson {clustered}; " \
        f"{_counted(cal, count, total, what)})"


CLUSTERS = {"expected_far": ("far_by_person", "impostor person", "impostor people"),
            "expected_frr": ("frr_by_client", "client", "clients")}


def _by_cluster(cal, key):
    """``a-b% by <unit>: G <units>, design effect d`` from the record's interval by
    cluster (its sums, `ssgallery.app.thresholds.clustered_sums`, the interval
    computed again from them), or None when it has none."""
    from ssgallery.app.thresholds import clustered_sums
    from ssgallery.biometrics.intervals import sums_interval

    field, unit, units = CLUSTERS[key]
    sums = clustered_sums(cal.get(field))
    if sums is None or sums["n"] <= 0:
        return None
    low, high, d = sums_interval(sums)
    groups = counted(sums["clusters"], unit, units)
    if key == "expected_far" and people_count(cal, sums) != sums["clusters"]:
        groups = (f"{counted(people_count(cal, sums), unit, units)} (counted as "
                  f"{sums['clusters']}: --update's blocks apart)")
    return f"{100 * low:.2f}-{100 * high:.2f}% by {unit}: {groups}, design effect {d:.2f}"


def people_count(cal, sums):
    """How many impostor people a calibration record's thresholds rest on, each once:
    its ``impostor_people`` (`ssgallery.app.thresholds.impostor_people`: fewer than the
    interval's clusters only after ``compress --update`` of a record that did not name
    its people, whose blocks the interval counts apart,
    `ssgallery.app.impostor_people`); in a record written before it, the clusters of its
    interval by person (``sums``, `ssgallery.app.thresholds.clustered_sums` of
    ``far_by_person``)."""
    people = cal.get("impostor_people")
    return people if is_int(people) and people >= 0 else int(sums["clusters"])


def _people(u):
    low, high = u["people"]
    return f"{low}" + (f"-{high}" if high > low else "") + \
        (" impostor person" if high == 1 else " impostor people")


def _unresolved_far(u):
    """What to expect of the thresholds of an ``unresolved`` record: for held-out
    scores, the FAR of a threshold set on so few people; for training scores, only that
    it is higher (their models were fitted to push those very scores down)."""
    bound = f"about {100 * u['far']:.1f}% ((accepted people + 1) / (people + 1))" \
        if u["far"] is not None else None
    if not u["training"]:
        return f"; a new person passes such a threshold {bound} of the time"
    fitted = "whose models were fitted to reject those very people"
    if bound is None:
        return (f", {fitted}: new people pass such thresholds more often than these "
                "scores can tell")
    return (f"; a new person passes those set on held-out scores {bound} of the time, "
            f"those of the {u['training']} clients on training scores more often ({fitted})")


def _expected_far(cal):
    """The expected FAR's text: the Clopper-Pearson estimate, a rate pooled over all
    clients (one client can accept strangers far more often: client_far.md), and for
    the clients whose count is not an estimate (``unresolved``), the FAR to expect of a
    threshold set on the scores of so few people; only that when it is every client."""
    from ssgallery.app.thresholds import unresolved_record

    far = _rate(cal, "expected_far", "accepted", "impostors", "impostor")
    u = unresolved_record(cal.get("unresolved"))
    if far is None:
        return None
    far = f"over all clients {far}"
    if u is None:
        return far
    if u["clients"] >= (cal.get("clients") or 0):
        return (f"not estimated: {_counted(cal, 'accepted', 'impostors', 'impostor')} "
                f"accepted, but each client's threshold sits on those very scores, of "
                f"{_people(u)}{_unresolved_far(u)}")
    return (f"{far}; not estimated for {u['clients']} of "
            f"{counted(cal.get('clients'), 'client')}, whose thresholds sit on the very "
            f"scores counted, of {_people(u)}{_unresolved_far(u)}")


def calibration_line(cal, matcher=None):
    """``thresholds: MODE; expected FAR over all clients x% (95% Clopper-Pearson a-b%, k
    of n held-out impostor scores)`` from a gallery's calibration record (None: not
    recorded), and on
    a second line the expected FRR at those thresholds, when recorded (with
    `in_basis_note` for a ``matcher`` name whose basis holds the held-out images);
    ``not known`` when the record's counts are (``counts_unknown``,
    `ssgallery.app.thresholds.counts_inseparable`)."""
    if not cal:
        return "thresholds: client (per-client; no expected FAR recorded)"
    text = f"thresholds: {printable(cal['mode'])}"
    if _num(cal.get("global_threshold")) is not None:
        text += f" (normalised T = {cal['global_threshold']:.4g})"
    if cal.get("counts_unknown") is True:
        return text + ("; expected FAR and FRR not known: an update trained again (or left "
                       "out) some of the clients the gallery's counts pooled, which cannot "
                       "be taken apart; compress every client again without --update to "
                       "estimate them")
    far = _expected_far(cal)
    text += f"; expected FAR {far}{_fitted(cal)}" if far else "; no expected FAR recorded"
    frr = _rate(cal, "expected_frr", "rejected", "genuine", "genuine")
    return text + (f"\nexpected FRR at these thresholds {frr}{_fitted(cal, True)}"
                   f"{in_basis_note(cal, matcher)}" if frr else "")


def in_basis_note(cal, matcher):
    """The note of an expected FRR counted on held-out genuine images that lie in the
    matcher's basis: a matcher that learns from images (``matcher``, its name: eigenface's
    PCA, fitted at enroll on every stored image) was fitted to them, not to new images:
    on AT&T photos its fold models rejected them far more often than the shipped models
    rejected new images, on the synthetic faces (sample_data's) as often
    (docs/benchmarks/frr_heldout.md: `FRR_IN_BASIS`, `FRR_SYNTHETIC`); "" for another
    matcher, or when every client's scores are training scores (`_fitted` says so)."""
    from ssgallery.app.fold_spaces import learns_from_images
    from ssgallery.app.thresholds import training_share
    from ssgallery.errors import SsgalleryError
    from ssgallery.matchers import get_matcher_class

    if matcher is None or training_share(cal.get("training_clients"),
                                         cal.get("clients")) == "all":
        return ""
    try:
        learns = learns_from_images(get_matcher_class(matcher))
    except SsgalleryError:  # a plug-in not installed here: nothing known of its basis
        return ""
    if not learns:
        return ""
    return (f"; the held-out images lie in the {printable(matcher)} basis, fitted with "
            f"them: on photos new images can be rejected less often (AT&T: "
            f"{FRR_IN_BASIS[0]}% expected, {FRR_IN_BASIS[1]}% of new images rejected), on "
            f"synthetic faces such as sample_data's as often ({FRR_SYNTHETIC[0]}%, "
            f"{FRR_SYNTHETIC[1]}%; docs/operating-points.md)")


def _fitted(cal, genuine=False):
    """The note of an expected FAR (FRR: ``genuine``) counted on training scores
    (``training_clients``, `ssgallery.app.thresholds.fitted_note`), unless the
    ``unresolved`` words already say it of those clients' FAR."""
    from ssgallery.app.thresholds import fitted_note, unresolved_record

    if genuine:
        return fitted_note(cal.get("training_clients"), cal.get("clients"),
                           "genuine scores", "genuine claims are rejected",
                           "accept those very images")
    u = unresolved_record(cal.get("unresolved"))
    if u is not None and u["training"]:
        return ""
    return fitted_note(cal.get("training_clients"), cal.get("clients"), "impostor scores",
                       "strangers are accepted")


def _compress_flag(name, command):
    """How ``command``'s advice names compress's option ``--name``: ``--name`` in
    compress's own output, ``compress --name`` in another command's (``info``)."""
    return f"--{name}" if command == "compress" else f"compress --{name}"


def unresolved_warning(cal, command="compress"):
    """The warning ``compress`` and ``info`` give when some clients' expected FAR is not
    an estimate (``unresolved``), naming what fixes it; None otherwise."""
    from ssgallery.app.thresholds import unresolved_record

    u = unresolved_record((cal or {}).get("unresolved"))
    if u is None:
        return None
    target, scores = _num(cal.get("target_far")) or 0, _num(cal.get("impostors")) or 0
    below = ""
    if 0 < target * scores < 1:  # the pooled count cannot reach one accept
        below = (f"a target below 1 / {scores:g} held-out impostor scores "
                 f"({100 / scores:.3g}%) puts the threshold above all of them: raise "
                 f"{_compress_flag('target-far', command)} to that or more, or ")
    return (f"the target FAR ({100 * target:g}%) cannot be "
            f"estimated for {u['clients']} of {counted(cal.get('clients'), 'client')}: "
            "each one's "
            f"threshold sits on the very impostor scores it is counted on, of "
            f"{_people(u)}{_unresolved_far(u)}; {below}raise "
            f"{_compress_flag('max-impostors', command)} (at least 4 "
            "impostor images per client, of as many people as there are) or enrol more "
            "people (enroll --background)")


def few_people_warning(cal):
    """The warning ``compress`` and ``info`` give when the thresholds rest on the held-out
    scores of fewer than `MIN_IMPOSTOR_PEOPLE` impostor people (`people_count`): too few
    for the target FAR to hold for new people, whatever the expected FAR says; the remedy
    is more people, not another threshold mode.
    None otherwise, and when the record has no interval by person, or every client's
    thresholds are on training scores (compress's warning and the expected FAR say so).
    A FAR not estimated (`unresolved_warning`) does not silence it: a 3-client gallery's
    pooled T sits above all its held-out scores, and what it needs is people."""
    from ssgallery.app.thresholds import clustered_sums, training_share

    cal = cal or {}
    sums = clustered_sums(cal.get("far_by_person"))
    if sums is None or \
            training_share(cal.get("training_clients"), cal.get("clients")) == "all":
        return None
    people = people_count(cal, sums)
    if people >= MIN_IMPOSTOR_PEOPLE:
        return None
    return (f"the thresholds rest on the impostor scores of only "
            f"{counted(people, 'impostor person', 'impostor people')} (fewer than "
            f"{MIN_IMPOSTOR_PEOPLE}): too few for a target FAR of "
            f"{100 * (_num(cal.get('target_far')) or 0):g}% to hold for new people, "
            "whatever the expected FAR says, and another --threshold-mode does not help "
            "(measured on AT&T: docs/benchmarks/small_galleries.md; "
            "docs/operating-points.md, small galleries); enrol people who will never be "
            f"clients as impostors (enroll --background, {MIN_IMPOSTOR_PEOPLE - people} more "
            "people at least) and compress again")


def _share_rejected(frr):
    """``about k in d genuine claims would be rejected`` for a rejected share ``frr`` in
    (0, 1] (the nearest fraction of denominator at most 5), ``nearly every genuine claim
    would be rejected`` when that fraction is 1, ``every ...`` when ``frr`` is 1 (every
    held-out genuine score was rejected)."""
    from fractions import Fraction

    share = Fraction(frr).limit_denominator(5)
    if share.numerator >= share.denominator:
        return f"{'' if frr >= 1 else 'nearly '}every genuine claim would be rejected"
    return f"about {share.numerator} in {share.denominator} genuine claims would be rejected"


def frr_warning(cal, matcher, command="compress"):
    """The warning ``compress`` and ``info`` give when the recorded expected FRR is at
    least `HIGH_FRR` (None otherwise): how many genuine claims that rejects, the clients
    that reject the most of theirs, and what would lower it."""
    frr = _num((cal or {}).get("expected_frr"))
    if frr is None or frr < HIGH_FRR:
        return None
    from ssgallery.app.thresholds import HIGH_CLIENT_FRR

    worst = [w for w in cal.get("frr_worst") or () if isinstance(w, list) and len(w) == 2
             and _num(w[1]) is not None]
    high = cal.get("frr_high_clients")
    if isinstance(high, int) and high:  # name those only, not the next worst below half
        worst = [w for w in worst if _num(w[1]) >= HIGH_CLIENT_FRR]
    named = ", ".join(f"{printable(c)} ({100 * f:.0f}%)" for c, f in worst)
    who = (f"{high} client(s) reject at least half of their own held-out images"
           if isinstance(high, int) and high else "clients rejecting the most")
    fix = [f"a higher target FAR ({_compress_flag('target-far', command)}, now "
           + f"{cal.get('target_far')})"]
    if matcher != "dlib":
        fix.insert(0, "a matcher that tells these faces apart better (enroll --matcher dlib "
                      "for photos in the wild)")
    if named and isinstance(high, int) and high > len(worst):  # frr_worst keeps a few
        named = f"the worst {len(worst)}, {named}"
    return (f"expected FRR {100 * frr:.1f}%: {_share_rejected(frr)} at these thresholds; {who}"
            + (f": {named}" if named else "") + f"; {' or '.join(fix)} would lower it")


def open_set_line(rec):
    """``1:N search: threshold T on the best centred score at target FPIR f for N
    clients; expected FPIR x% (95% Clopper-Pearson a-b%, n held-out searches of k
    clients)`` (after an update, "of k clients or more": k is the smallest search of its
    runs) from a gallery's open-set record (None: not recorded), and what that
    rate does not promise each stranger (`PER_STRANGER`)."""
    from ssgallery.app.open_set import (
        beyond_end,
        interval_kind,
        measured_note,
        no_point_why,
        searches_kind,
        training_note,
    )

    if not rec:
        why = no_point_why(lambda name: "--" + name.replace("_", "-"))
        return (f"1:N search: no operating point recorded ({why}): identify --open-set needs "
                "--threshold or --verification-thresholds until every client is compressed "
                "again without --update")
    low, high, kind = *rec["expected_fpir_ci"], searches_kind(rec)
    people = rec["curve"].get("interval_people")
    by_person = not rec.get("extrapolated") and type(people) is int and people >= 1
    text = (f"1:N search: threshold {rec['threshold']:.4g} on the best centred score at "
            f"target FPIR {100 * rec['target_fpir']:g}% for "
            f"{counted(rec['clients'], 'client')}; "
            f"expected FPIR {100 * rec['expected_fpir']:.2f}% (95% {interval_kind(rec)} "
            f"{100 * low:.2f}-{100 * high:.2f}%"
            + (f" by probe person: {counted(people, 'person', 'people')}; " if by_person
               else ", ")
            + f"{counted(rec['searches'], f'{kind} search', f'{kind} searches')} of "
            f"{counted(rec['search_size'], 'client')}"
            + (f" or more in {rec['blocks']} runs merged by --update"  # the smallest block's
               if rec.get("blocks", 1) > 1 else "")
            + (", counted as independent" if not by_person and not rec.get("extrapolated")
               else "") + ")")
    if rec.get("extrapolated"):
        tail = rec["curve"].get("tail") or {}
        text += ("; too few searches to resolve the target: threshold extrapolated beyond "
                 "every one (exponential tail"
                 + (f" of the top {tail['exceedances']} {kind} scores" if tail else "")
                 + "), not measured")
    elif not rec["resolved"]:
        text += "; too few searches to resolve the target: threshold above every one"
    return (text + beyond_end(rec) + measured_note(rec) + training_note(rec)
            + PER_STRANGER)



def open_set_warning(summary):
    """The warning ``compress --update`` gives when the gallery it updated recorded no
    1:N operating point it could keep (written before --target-fpir, or one that pooled
    the searches of clients trained again or left out,
    `ssgallery.app.open_set.operating_point`): none written (``open_set_dropped``: the
    gallery's point was dropped), or one measured on the clients updates trained only
    (None otherwise)."""
    rec, redo = summary.open_set, "compress every client again without --update"
    if not summary.kept:
        return None
    if rec is None:
        had = ("the gallery's 1:N operating point pooled the held-out searches of clients "
               "this update left out (no longer enrolled), which cannot be taken apart"
               if summary.open_set_dropped else "the gallery records no 1:N operating point")
        return (f"{had}, and this update trained no client to measure one: none recorded "
                "(identify --open-set needs --threshold or --verification-thresholds); "
                f"{redo} to record one")
    measured = rec.get("measured_clients")
    if measured is None or measured >= rec["clients"]:
        return None
    why = ("the gallery's 1:N operating point pooled the held-out searches of clients an "
           "update trained again (or left out), which cannot be taken apart"
           if rec.get("searches_inseparable") else
           "the gallery recorded no 1:N operating point")
    return (f"{why}: set from the held-out searches of the {measured} client(s) trained by "
            f"updates, taken as typical of all {rec['clients']}; {redo} to measure it on "
            "every client")
