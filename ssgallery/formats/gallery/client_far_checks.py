"""The per-client FAR fields of a gallery's calibration record, checked as they are read
(`client_far_problem`): ``far_clients``, ``far_high_clients`` and ``far_worst``
(`ssgallery.app.client_far.far_record` writes them; absent in galleries written before
them, which read as unknown)."""

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, shown
from ssgallery.formats.interval_sums import sums_problem

__all__ = ["client_far_problem", "far_worst_clients"]


def _count(value):
    return is_int(value) and 0 <= value < EXACT_INT


def client_far_problem(cal):
    """What makes a calibration record's per-client FAR fields (data from a file) fields
    that `ssgallery.app.client_far.far_record` does not write, or None.

    The rules: ``far_clients`` and ``far_high_clients`` both whole numbers >= 0 (or both
    null: unknown, with no ``far_worst``), ``far_high_clients`` <= ``far_clients`` <=
    ``clients``; ``far_worst`` a list of at most ``far_clients`` entries, each an
    object with a ``client`` id (distinct), ``sums`` that per-person counts give
    (`ssgallery.formats.interval_sums.sums_problem`, at least one score), a
    ``design_effect`` >= 1 and a ``ci`` [low, high] in [0, 1] around its rate k / n.
    Readers compute the interval again from the ``sums``
    (`ssgallery.biometrics.intervals.sums_interval`); ``ci`` is kept for the eye.

    Returns
    -------
    str or None
        ``far_high_clients 4 is more than far_clients 3``, ...
    """
    counted, high, worst = (cal.get(k) for k in ("far_clients", "far_high_clients",
                                                 "far_worst"))
    if counted is None and high is None:
        return None if worst in (None, []) else "far_worst without far_clients"
    if not (_count(counted) and _count(high)):
        return (f"far_clients and far_high_clients must be whole numbers >= 0, got "
                f"{shown(counted, typed=True)} and {shown(high, typed=True)}")
    clients = cal.get("clients")
    if high > counted or (is_int(clients) and counted > clients):
        return (f"far_high_clients {high} is more than far_clients {counted}" if high > counted
                else f"far_clients {counted} is more than the {clients} clients")
    if not isinstance(worst, list) or len(worst) > counted:
        return f"far_worst must be a list of at most far_clients ({counted}) entries"
    for entry in worst:
        why = _entry_problem(entry)
        if why is not None:
            return f"far_worst: {why}"
    if len({e["client"] for e in worst}) != len(worst):
        return "far_worst names a client twice"
    return None


def _entry_problem(entry):
    """What makes one ``far_worst`` entry malformed, or None."""
    if not isinstance(entry, dict) or not isinstance(entry.get("client"), str):
        return f"expected an object with a client id, got {shown(entry, typed=True)}"
    why = sums_problem(entry.get("sums"))
    if why is None and entry["sums"]["n"] <= 0:
        why = "no score"
    if why is not None:
        return f"sums: {why}"
    ci, d = entry.get("ci"), entry.get("design_effect")
    rate = entry["sums"]["k"] / entry["sums"]["n"]
    if not (isinstance(ci, list) and len(ci) == 2 and all(is_finite_real(v) for v in ci)
            and 0 <= ci[0] <= rate * (1 + 1e-9) and rate <= ci[1] * (1 + 1e-9) + 1e-12
            and ci[1] <= 1):
        return f"ci must be [low, high] in [0, 1] around k / n, got {shown(ci, typed=True)}"
    if not (is_finite_real(d) and d >= 1):
        return f"design_effect must be a number >= 1, got {shown(d, typed=True)}"
    return None


def far_worst_clients(cal):
    """The client ids a checked record's ``far_worst`` names."""
    return [e["client"] for e in cal.get("far_worst") or ()]
