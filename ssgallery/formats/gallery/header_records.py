"""A gallery's header (`gallery_header`: its root attributes as Python values, checked)
and the records ``compress`` writes in it beside the models, checked as they are read:
the threshold calibration (`header_calibration`) and the 1:N operating point
(`header_open_set`). A record that is malformed, or that does not describe the
gallery it sits in (copied from another gallery into a re-hashed file), is refused as a
corrupt header."""

import json

import numpy as np

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, shown, stored_flag
from ssgallery.errors import FormatError
from ssgallery.formats.gallery.client_far_checks import client_far_problem, far_worst_clients
from ssgallery.formats.hdf5 import attr_str
from ssgallery.tables import counted

CALIBRATION_ATTR = "calibration"


def gallery_header(attrs, path):
    """A gallery's header and matcher configuration, from its root attributes, checked.

    Parameters
    ----------
    attrs : dict
        The root attributes as h5py reads them (after the root digest was checked:
        `ssgallery.formats.gallery.checked_reads.open_verified`).
    path : str
        The gallery's path, for messages.

    Returns
    -------
    header : dict
        Numpy values as Python ones, ``image_shape`` a list, ``basis_stale`` a flag
        (`ssgallery.checks.stored_flag`), ``target_far`` and ``threshold_mode`` checked.
    config : dict
        The matcher configuration (a JSON object).

    Raises
    ------
    FormatError
        ``corrupt gallery header: ...``: a bad image shape, matcher name or config, or a
        value that is not what compress writes.
    """
    header = {}
    for name, value in attrs.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        header[name] = attr_str(value) if isinstance(value, bytes) else value
    try:
        shape = tuple(int(v) for v in header["image_shape"])
        config = json.loads(header["matcher_config"])
        if len(shape) != 2 or min(shape) < 1 or not isinstance(config, dict) \
                or not isinstance(header["matcher"], str):
            raise ValueError("bad image_shape, matcher or matcher_config")
        if "basis_stale" in header:  # absent in galleries written before it: False
            header["basis_stale"] = stored_flag("basis_stale", header["basis_stale"])
        _header_values(header)
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery header: {exc}", path=path) from None
    header["image_shape"] = list(shape)
    return header, config


def _header_values(header):
    """Refuse (ValueError) a ``target_far`` that is not a number in [0, 1) (what
    compress's option takes) and a ``threshold_mode`` that is not a name, both absent in
    galleries written before them: ``info`` prints them as read."""
    far = header.get("target_far")
    if far is not None and not (is_finite_real(far) and 0 <= far < 1):
        raise ValueError(f"target_far must be a number in [0, 1), found "
                         f"{shown(far, typed=True)}")
    mode = header.get("threshold_mode")
    if mode is not None and not isinstance(mode, str):
        raise ValueError(f"threshold_mode must be a name, found {shown(mode, typed=True)}")



def header_calibration(header, clients, path=None):
    """The ``calibration`` header attribute, checked (JSON; absent in galleries written
    before threshold modes: None): `_calibration_ok`. ``clients``: the ids of the
    gallery's clients, which the record must describe (`_describes_gallery`: their
    number). A ``frr_worst`` entry naming a client the gallery does not hold, or one
    named before, is left out, not refused: an ``--update`` that left clients out kept
    theirs before 21a5f6a, and one that trained a client again named it twice (the
    names only say which clients to look at).

    Raises
    ------
    FormatError
        Not a JSON object with a string ``mode``, or a value `_calibration_ok` refuses,
        or per-client FAR fields
        `ssgallery.formats.gallery.client_far_checks.client_far_problem` refuses; or a
        record of another gallery (`_describes_gallery`: its number of clients, a
        ``far_worst`` client it does not hold).
    """
    raw = header.get(CALIBRATION_ATTR)
    if raw is None:
        return None
    try:
        cal = json.loads(attr_str(raw))
        if not isinstance(cal, dict) or not isinstance(cal.get("mode"), str):
            raise TypeError("not a calibration record")
        if not _calibration_ok(cal):
            raise ValueError("inconsistent counts or values")
        _clustered_ok(cal)
        why = client_far_problem(cal)
        if why is not None:
            raise ValueError(why)
    except (ValueError, TypeError, RecursionError) as exc:  # nested past the stack
        raise FormatError(f"corrupt gallery header: {CALIBRATION_ATTR}: {exc}",
                          path=path) from None
    held = [str(c) for c in clients]
    _describes_gallery(CALIBRATION_ATTR, cal, far_worst_clients(cal), held, path)
    kept = frozenset(held)
    if cal.get("frr_worst"):
        named = set()  # each client once: an update before 21a5f6a that trained a client
        cal["frr_worst"] = [w for w in cal["frr_worst"]  # again added it twice
                            if w[0] in kept and not (w[0] in named or named.add(w[0]))]
    return cal


CLUSTERED = ("far_by_person", "frr_by_client")  # a calibration's intervals by cluster
# the pooled counts each interval's sums add up to (k of n), when the record has them
CLUSTER_COUNTS = {"far_by_person": ("accepted", "impostors"),
                  "frr_by_client": ("rejected", "genuine")}


def _clustered_ok(cal):
    """Refuse (ValueError naming it) an interval by cluster of ``cal`` (`CLUSTERED`:
    absent or null in records written before it) that is not an object whose ``sums``
    counts can give (`ssgallery.formats.interval_sums.sums_problem`): ``info`` prints the
    interval and its design effect from them; per-person counts (``people``, absent in
    records written before them) that are not what the sums were made of, or a salt of
    their ids that is not one (`ssgallery.formats.interval_sums.people_problem`):
    ``--update`` adds them; sums whose k of n are not the record's pooled counts
    (`CLUSTER_COUNTS`: an edited interval far from its own estimate); and an
    ``impostor_people`` (a whole number
    >= 0: `_calibration_ok`) above the people ``far_by_person`` counts (its clusters,
    which an update counts block by block: never fewer,
    `ssgallery.app.thresholds.impostor_people`) or without one: 10**6 was printed by
    info ('1000000 impostor people (counted as 20 ...)') and silenced the small-gallery
    warning."""
    from ssgallery.formats.interval_sums import people_problem, sums_problem

    for field in CLUSTERED:
        value = cal.get(field)
        if value is None:
            continue
        why = sums_problem(value.get("sums")) if isinstance(value, dict) else \
            f"expected an object, got {shown(value, typed=True)}"
        if why is not None:
            raise ValueError(f"{field} sums: {why}")
        why = people_problem(value.get("people"), value["sums"], value.get("salt"))
        if why is not None:
            raise ValueError(f"{field}: {why}")
        k, n = (cal.get(c) for c in CLUSTER_COUNTS[field])  # both whole or both None
        if n is not None and (value["sums"]["k"], value["sums"]["n"]) != (k, n):
            raise ValueError(f"{field} sums: k {value['sums']['k']:.6g} of n "
                             f"{value['sums']['n']:.6g}, where the record counts {k} of {n}")
    people, far = cal.get("impostor_people"), cal.get("far_by_person")
    clusters = far["sums"]["clusters"] if far is not None else None
    if people is not None and (clusters is None or people > clusters):  # whole, >= 0
        raise ValueError(f"impostor_people {people} is more than the {clusters} people "
                         "far_by_person counts" if clusters is not None else
                         "impostor_people without far_by_person, whose people it counts")


def _calibration_ok(cal):
    """A calibration record's values (`ssgallery.app.thresholds.calibrate`; keys absent
    in records written before them read as None): ``target_far`` in [0, 1), a finite
    ``global_threshold`` or None, counts ``accepted`` of ``impostors`` and ``rejected``
    of ``genuine`` whole numbers >= 0 (a count of no more than its total) or both None
    (and None when ``counts_unknown``, a boolean), rates and their intervals in [0, 1]
    or None, ``clients`` >= 0, ``training_clients``, ``frr_high_clients`` and the
    whole ``clients`` of ``unresolved`` no more than it, ``impostor_people`` a whole
    number >= 0 (the rest of ``unresolved`` is
    read as unknown when malformed, `ssgallery.app.thresholds.unresolved_record`),
    ``frr_worst`` a list of ``[client, FRR]`` with FRR in (0, 1]."""
    n = cal.get("clients")
    most = n if _count(n, 0) else np.inf
    pairs = [(cal.get(a), cal.get(b)) for a, b in (("accepted", "impostors"),
                                                    ("rejected", "genuine"))]
    unknown = cal.get("counts_unknown", False)
    worst = cal.get("frr_worst") or []
    unresolved = cal.get("unresolved")
    unresolved = unresolved.get("clients") if isinstance(unresolved, dict) else None
    return (_real(cal.get("target_far"), 0.0, 1.0) and cal["target_far"] < 1
            and (cal.get("global_threshold") is None or _real(cal["global_threshold"]))
            and all(a is None and b is None or _count(a, 0) and _count(b, 0) and a <= b
                    for a, b in pairs)
            and isinstance(unknown, bool) and not (unknown and any(a is not None
                                                                   for a, _ in pairs))
            and all(cal.get(k) is None or _real(cal[k], 0.0, 1.0)
                    for k in ("expected_far", "expected_frr"))
            and all(cal.get(k) is None or (isinstance(cal[k], list) and len(cal[k]) == 2
                                           and all(_real(v, 0.0, 1.0) for v in cal[k])
                                           and cal[k][0] <= cal[k][1])
                    for k in ("expected_far_ci", "expected_frr_ci"))
            and (n is None or _count(n, 0))
            and all(cal.get(k) is None or _count(cal[k], 0) and cal[k] <= most
                    for k in ("training_clients", "frr_high_clients"))
            and (cal.get("impostor_people") is None or _count(cal["impostor_people"], 0))
            and not (is_int(unresolved) and unresolved > most)
            and isinstance(worst, list)
            and all(isinstance(w, list) and len(w) == 2 and isinstance(w[0], str)
                    and _real(w[1], 0.0, 1.0) and w[1] > 0 for w in worst))


OPEN_SET_ATTR = "open_set"
# The smallest 1:N scale compress writes (`ssgallery.biometrics.openset.pooled_scale`'s
# floor); a record's below it is refused
SCALE_FLOOR = 1e-12
OPEN_SET_KIND = "top-candidate-centred"
_CURVE_KEYS = ("thresholds", "hazard", "hazard_low", "hazard_high")


def _real(value, low=-np.inf, high=np.inf):
    """A JSON number (not a string nor a boolean), finite (`is_finite_real`), in
    [low, high]."""
    return is_finite_real(value) and low <= value <= high


def _count(value, low=1):
    """A whole JSON number >= ``low`` and below 2**53 (not a boolean; the integers a float
    holds exactly, as every JSON count read: `ssgallery.checks.EXACT_INT`)."""
    return is_int(value) and low <= value < EXACT_INT


def _tail_ok(tail):
    """A curve's tail fit (`ssgallery.biometrics.openset_tail.tail_fit`): absent, or an
    exponential fit with k >= 1 exceedances of k' <= k (person, client) pairs among
    M >= k scores, a finite threshold u, a rate in (0, 1] and a scale beta > 0 inside
    its interval."""
    if tail is None:
        return True
    if not isinstance(tail, dict) or tail.get("kind") != "exponential":
        return False
    k, ci = tail.get("exceedances"), tail.get("beta_ci")
    return (_count(k) and _count(tail.get("pairs")) and tail["pairs"] <= k
            and _count(tail.get("scores"), k) and _real(tail.get("u"))
            and _real(tail.get("rate"), 0.0, 1.0) and tail["rate"] > 0
            and isinstance(ci, list) and len(ci) == 2 and all(_real(v, 0.0) for v in ci)
            and _real(tail.get("beta"), ci[0], ci[1]) and tail["beta"] > 0)


def _record_ok(rec, curve):
    """The record's values beside its curve: numbers that are numbers, counts that are
    whole, FPIRs in [0, 1], a curve that measures something at its lowest threshold
    (hazard > 0: a curve of hazard 0 would read 0 % FPIR everywhere) and whose hazard
    bounds are >= 0, the extrapolated tail starting on the curve and T on it only when
    the record says so (`_on_tail_ok`), a boolean resolved, ``training_clients`` (absent
    when every search is held out) a whole number from 1 to the clients measured, the
    curve's ``interval_people`` (absent when its interval is not by probe person) a
    whole number (-3, 1e308 or "x" read as "counted as independent" before), and a
    ``search_size`` (the clients each held-out search covers, the smallest over an
    update's blocks) of no more than the gallery's clients: every writer measures it on
    some of them, and an update keeps a curve only when it keeps every client it pooled
    (`ssgallery.app.open_set`), so a larger one is an edit (info printed it, identify and
    ``--update`` used the record)."""
    t, h = curve["thresholds"], curve["hazard"]
    ci = rec.get("expected_fpir_ci")
    above = rec["curve"].get("extrapolated_above", t[-1])
    return (all(_real(rec.get(k)) for k in ("threshold", "scale"))
            and _real(rec.get("target_fpir"), 0.0, 1.0) and _real(rec.get("expected_fpir"), 0.0, 1.0)
            and isinstance(ci, list) and len(ci) == 2 and all(_real(v, 0.0, 1.0) for v in ci)
            and all(_count(rec.get(k)) for k in ("clients", "search_size"))
            and rec["search_size"] <= rec["clients"]  # a search covers no more clients
            and _count(rec.get("searches"), 0) and _count(rec.get("blocks", 1))
            and _count(rec.get("measured_clients", 1))
            and _count(rec.get("training_clients", 1))
            and _count(rec["curve"].get("interval_people", 0), 0)
            and rec.get("training_clients", 1) <= rec.get("measured_clients", rec["clients"])
            and isinstance(rec.get("resolved"), bool)
            and isinstance(rec.get("extrapolated", False), bool)
            and isinstance(rec.get("searches_inseparable", False), bool)
            and _measured_ok(rec)
            and (not rec.get("searches_inseparable")  # only on a point measured on a few
                 or rec.get("measured_clients", rec["clients"]) < rec["clients"])
            and h[0] > 0
            and all(not np.any(np.isnan(curve[k])) and not np.any(curve[k] < 0)
                    for k in ("hazard_low", "hazard_high"))
            and _real(above, high=float(t[-1]))
            and _tail_ok(rec["curve"].get("tail"))
            and _on_tail_ok(rec))


def _on_tail_ok(rec):
    """``extrapolated`` says whether T lies on the curve's tail (at or above
    ``extrapolated_above``; never for a curve without one), and a T on the tail is not
    ``resolved`` (`ssgallery.biometrics.openset.threshold_at_fpir`)."""
    above = rec["curve"].get("extrapolated_above")
    on_tail = above is not None and rec["threshold"] >= above
    return rec.get("extrapolated", False) == on_tail and not (on_tail and rec["resolved"])


_HAZARD_KEYS = _CURVE_KEYS[1:]


def _infinite_hazards(curve):
    """The stored curve with its null hazards read as +inf: a hazard is >= 0, +inf where
    every held-out search passes (FPIR_n = 1), and standard JSON has no Infinity
    (`ssgallery.jsontext.dumps` writes null; galleries written before it hold
    ``Infinity``, which json.loads reads as +inf). Anything that is not a list is left
    as it is, for the checks to refuse."""
    if not isinstance(curve, dict):
        return curve
    return {k: [np.inf if h is None else h for h in v]
            if k in _HAZARD_KEYS and isinstance(v, list) else v for k, v in curve.items()}


def header_open_set(header, clients, path=None):
    """The ``open_set`` header attribute, checked: the 1:N operating point written by
    compress (`ssgallery.app.open_set`; JSON; absent in galleries written before it:
    None). A hazard written as null is +inf (`_infinite_hazards`). ``clients``: the ids
    of the gallery's clients, which the record must describe (`_describes_gallery`).

    Raises
    ------
    FormatError
        A record that is not a well-formed operating point: a threshold curve whose
        thresholds are not finite and increasing, or whose hazards are negative or
        increasing, or a non-finite threshold, or a scale below `SCALE_FLOOR` (1e-12,
        below which no compress writes one: 1e-308 made identify's centred scores +inf,
        numpy's warnings on stderr), or fewer than 1 client,
        or a value that `_record_ok` refuses: a number or count of the wrong type
        (strings, booleans, fractions of clients), an FPIR or interval outside [0, 1],
        hazard bounds < 0 or NaN, a curve of hazard 0 at its lowest threshold, a start
        of the extrapolated tail (``extrapolated_above``, absent in records written
        before it) that is not a finite number on the curve, a non-boolean
        ``resolved``, ``extrapolated`` or ``searches_inseparable``, a
        ``searches_inseparable`` point measured on every client (no ``measured_clients``
        below ``clients``), a ``measured`` that is not a list of ``measured_clients``
        distinct ids, or a tail fit (``tail``) that `_tail_ok` refuses; or a record of
        another gallery (`_describes_gallery`).
    """
    raw = header.get(OPEN_SET_ATTR)
    if raw is None:
        return None
    try:
        rec = json.loads(attr_str(raw))
        if not isinstance(rec, dict) or rec.get("kind") != OPEN_SET_KIND:
            raise ValueError("not a 1:N operating point")
        rec["curve"] = _infinite_hazards(rec["curve"])
        curve = {k: np.asarray(rec["curve"][k], dtype=float) for k in _CURVE_KEYS}
        t, h = curve["thresholds"], curve["hazard"]
        numbers = [float(rec[k]) for k in ("threshold", "target_fpir", "expected_fpir",
                                           "scale")]
        if (t.ndim != 1 or t.size < 1 or any(curve[k].shape != t.shape for k in _CURVE_KEYS)
                or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0)
                or np.any(np.isnan(h)) or np.any(h < 0) or np.any(np.diff(h) > 0)
                or not np.all(np.isfinite(numbers)) or not 0 < numbers[1] < 1
                or not numbers[3] >= SCALE_FLOOR
                or int(rec["clients"]) < 1
                or not 1 <= int(rec.get("measured_clients", 1)) <= int(rec["clients"])
                or not _record_ok(rec, curve)):
            raise ValueError("inconsistent curve or values")
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError,
            RecursionError) as exc:  # nested past the stack
        raise FormatError(f"corrupt gallery header: {OPEN_SET_ATTR}: {exc}", path=path) from None
    _describes_gallery(OPEN_SET_ATTR, rec, rec.get("measured") or (),
                       [str(c) for c in clients], path)
    rec["curve"] = dict(rec["curve"], clients=int(rec["clients"]))
    return rec


def _measured_ok(rec):
    """``measured`` (the clients whose held-out searches the curve pools, only beside a
    ``measured_clients``; absent in records written before it): a list of that many
    distinct strings."""
    ids = rec.get("measured")
    return ids is None or ("measured_clients" in rec and isinstance(ids, list)
                           and len(ids) == rec["measured_clients"]
                           and all(isinstance(c, str) for c in ids)
                           and len(set(ids)) == len(ids))


_RECORDS = {OPEN_SET_ATTR: ("a 1:N operating point", "measured on"),
            CALIBRATION_ATTR: ("a threshold calibration", "naming")}  # its far_worst


def _describes_gallery(attr, rec, named, clients, path):
    """Refuse a header record (``attr``: the 1:N operating point or the threshold
    calibration, checked) that does not describe the gallery it sits in (a record
    copied from another gallery into a re-hashed file): its ``clients`` is not the
    gallery's number of clients (``clients``: their ids; a record without one, written
    before it, is not compared), or it names a client the gallery does not hold
    (``named``: the ids it names, the 1:N point's ``measured``)."""
    from ssgallery.errors import printable

    what, verb = _RECORDS[attr]
    what = f"corrupt gallery header: {attr}: {what}"
    n = rec.get("clients")
    if n is not None and n != len(clients):
        raise FormatError(f"{what} for {counted(n, 'client')} in a gallery of "
                          f"{len(clients)}", path=path)
    foreign = sorted(set(named) - set(clients))
    if foreign:
        raise FormatError(f"{what} {verb} client '{printable(foreign[0])}', which the "
                          "gallery does not hold", path=path)
