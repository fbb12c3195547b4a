"""The 1:N operating point of a gallery as ``identify`` and ``info`` read it: the record
(`read_record`), the point a search uses (`resolve`: the recorded one, another target
FPIR read from the recorded curve, an explicit threshold, or each client's verification
threshold) and the words that name it (`describe` and its notes). How compress sets the
point and what the record holds: `ssgallery.app.open_set`.

Light: numpy at import (scipy only when `resolve` reads T from a curve).
"""

import numpy as np

from ssgallery.checks import open_rate
from ssgallery.errors import InputError, option

DEFAULT_TARGET_FPIR = 0.01


def check_target_fpir(target_fpir, name="target_fpir"):
    """Refuse a target FPIR outside (0, 1) (exit 2), naming the parameter ``name`` that
    gave it (``compress --target-fpir``, ``identify --fpir``)."""
    return open_rate(name, target_fpir)


def read_record(header, clients, path=None):
    """The gallery's 1:N operating point (`ssgallery.formats.gallery.header_open_set`),
    None when absent; ``clients``: the gallery's client ids (a record of another
    gallery is refused)."""
    from ssgallery.formats.gallery import header_open_set

    return header_open_set(header, clients, path)


def resolve(record, n_clients, *, fpir=None, threshold=None, verification=False, path=None):
    """The operating point ``identify`` uses, as a JSON-able dict.

    Parameters
    ----------
    record : dict or None
        The gallery's record (`read_record`).
    n_clients : int
        Clients in the gallery's search index.
    fpir : float, optional
        Another target FPIR: T read from the record's curve for ``n_clients``.
    threshold : float, optional
        An explicit threshold on the best centred score (Z-normalised when the gallery
        records no 1:N point).
    verification : bool
        Each client's own verification threshold on its raw score (the thresholds
        ``verify`` uses; a stranger gets N chances).

    Returns
    -------
    dict
        ``kind`` ("fpir", "threshold" or "verification"), ``score`` (what is
        thresholded: "centred" = (g - mean_c) / ``scale`` when the gallery records its
        1:N point, else "znorm"; "raw" for "verification", each client's own
        threshold), ``threshold`` (None for "verification"), and for "fpir":
        ``target_fpir``, ``expected_fpir``, ``expected_fpir_ci``, ``resolved``,
        ``extrapolated`` (T on the curve's extrapolated tail; False for a curve without
        one), ``clients``, and the record's ``measured_clients`` and
        ``searches_inseparable`` when it has them (`measured_note`).
    """
    if sum(v is not None and v is not False for v in (fpir, threshold, verification)) > 1:
        raise InputError(f"give at most one of {option('fpir')}, {option('threshold')} and "
                         f"{option('verification_thresholds')}")
    if verification:
        return {"kind": "verification", "score": "raw", "scale": None, "threshold": None}
    if threshold is not None:
        if not np.isfinite(float(threshold)):
            raise InputError(f"{option('threshold')} must be a finite number, got {threshold}")
        centred = record is not None
        return {"kind": "threshold", "score": "centred" if centred else "znorm",
                "scale": record["scale"] if centred else None, "threshold": float(threshold)}
    if record is None:
        raise InputError(f"the gallery records no 1:N operating point ({no_point_why()}): "
                         f"give {option('threshold')} or {option('verification_thresholds')}, "
                         f"or compress every client again without {option('update')} to "
                         "record one", path=path)
    from ssgallery.biometrics.openset import fpir_at, is_extrapolated, threshold_at_fpir

    target = float(record["target_fpir"]) if fpir is None else check_target_fpir(fpir, "fpir")
    if fpir is None:
        t, resolved = float(record["threshold"]), bool(record["resolved"])
    else:
        t, resolved = threshold_at_fpir(record["curve"], target, n_clients)
    expected, ci = fpir_at(record["curve"], t, n_clients)
    return {"kind": "fpir", "score": "centred", "scale": float(record["scale"]),
            "threshold": t, "target_fpir": target,
            "expected_fpir": expected, "expected_fpir_ci": list(ci), "resolved": resolved,
            "extrapolated": is_extrapolated(record["curve"], t), "clients": int(n_clients),
            **{k: record[k] for k in ("measured_clients", "searches_inseparable",
                                      "training_clients") if k in record}}


def describe(point):
    """One line naming an operating point (``identify``'s output, ``info``)."""
    if point["kind"] == "verification":
        return ("operating point: each client's verification threshold on its raw score "
                "(a stranger gets one chance per client)")
    if point["kind"] == "threshold":
        return (f"operating point: threshold {point['threshold']:.4g} on the best "
                f"{point['score']} score")
    low, high = point["expected_fpir_ci"]
    text = (f"operating point: FPIR {100 * point['target_fpir']:g}% over {point['clients']} "
            f"clients (threshold {point['threshold']:.4g} on the best centred score; "
            f"expected FPIR {100 * point['expected_fpir']:.2f}% of strangers' searches, 95% "
            f"{interval_kind(point)} {100 * low:.2f}-{100 * high:.2f}%")
    if point.get("extrapolated"):
        text += (f"; extrapolated beyond the {searches_kind(point)} searches (their "
                 "exponential tail), not measured")
    elif not point["resolved"]:
        text += (f"; the {searches_kind(point)} searches cannot resolve the target: "
                 "threshold above all")
    return (text + beyond_end(point) + measured_note(point) + training_note(point)
            + "; a rate, not a bound for each stranger: docs/benchmarks/open_set_strangers.md)")


def no_point_why(flag=option):
    """Why a gallery records no 1:N operating point, for every reader's line (``flag``
    names an option: `ssgallery.errors.option`, or the command line's own)."""
    return (f"compressed before {flag('target_fpir')} existed, or by an update that trained "
            "no client, of a gallery that recorded none or whose point pooled the held-out "
            "searches of clients the update left out")


def measured_note(point):
    """The words for a point measured on only some of its clients' held-out searches
    (``measured_clients``, `operating_point`), and why; "" otherwise."""
    measured = point.get("measured_clients")
    if measured is None or measured >= point["clients"]:
        return ""
    why = ("the others' held-out searches were pooled with those of clients an update "
           "trained again or left out, which cannot be taken apart"
           if point.get("searches_inseparable") else
           "the others came from a gallery that recorded no 1:N point")
    return f"; measured on {measured} of the {point['clients']} clients ({why})"


def interval_kind(point):
    """The name of a 1:N point's 95 % interval, one for every reader (``identify``,
    ``info``): ``interval of the tail's scale`` for a point read from the extrapolated
    tail, else ``Clopper-Pearson``."""
    return "interval of the tail's scale" if point.get("extrapolated") else "Clopper-Pearson"


def searches_kind(point):
    """``training`` when every client whose searches a point's curve pools had no
    held-out scores (``training_clients``, `_with_training`), else ``held-out``
    (`ssgallery.app.thresholds.training_share`)."""
    from ssgallery.app.thresholds import training_share

    share = training_share(point.get("training_clients"),
                           point.get("measured_clients", point["clients"]))
    return "training" if share == "all" else "held-out"


def training_note(point):
    """The words for a point set on training searches (``training_clients``): not an
    estimate, and which clients (`ssgallery.app.thresholds.fitted_note`); "" otherwise."""
    from ssgallery.app.thresholds import fitted_note

    return fitted_note(point.get("training_clients"),
                       point.get("measured_clients", point["clients"]), "searches",
                       "strangers are identified")


def beyond_end(point):
    """The words for a point whose target lies below the curve's end (the extrapolated
    tail stops at `ssgallery.biometrics.openset_tail.TAIL_MIN_FPIR`): T is the curve's
    highest threshold and its expected FPIR is above the target; "" otherwise."""
    if point["expected_fpir"] <= point["target_fpir"]:
        return ""
    return (f"; target below the curve's end: its highest threshold, expected FPIR "
            f"{100 * point['expected_fpir']:.2g}%")


__all__ = ["DEFAULT_TARGET_FPIR", "beyond_end", "check_target_fpir", "describe",
           "interval_kind", "measured_note", "no_point_why", "read_record", "resolve", "searches_kind",
           "training_note"]
