"""The per-client FAR fields of a gallery's calibration record, checked as they are read
(`client_far_problem`): ``far_clients``, ``far_high_clients`` and ``far_worst``
(`ssgallery.app.client_far.far_record` writes them; absent in galleries written before
them, which read as unknown)."""

import itertools

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, shown
from ssgallery.formats.interval_sums import sums_problem

__all__ = ["FAR_WORST", "client_far_problem", "far_worst_clients"]

FAR_WORST = 5  # the clients a record's far_worst holds (as many as it counts, at most)


def _count(value):
    return is_int(value) and 0 <= value < EXACT_INT


def client_far_problem(cal):
    """What makes a calibration record's per-client FAR fields (data from a file) fields
    that `ssgallery.app.client_far.far_record` does not write, or None.

    The rules: ``far_clients`` and ``far_high_clients`` both whole numbers >= 0 (or both
    null: unknown, with no ``far_worst``), ``far_high_clients`` <= ``far_clients`` <=
    ``clients``; ``far_worst`` a list of min(``far_clients``, `FAR_WORST`) entries,
    each an object with a ``client`` id (distinct), ``sums`` that per-person counts
    give (`ssgallery.formats.interval_sums.sums_problem`, at least one score, no more
    than the record's ``impostors`` and its people no more than ``far_by_person``'s
    when known), a ``design_effect`` >= 1 and a ``ci`` [low, high] in [0, 1] around
    its rate k / n; the entries in descending order of ``ci``'s low end, and as many
    of them above ``target_far`` as ``far_high_clients`` says (all of those, at most
    `FAR_WORST`). Readers name clients from the interval computed again from the
    ``sums`` (`ssgallery.biometrics.intervals.sums_interval`).

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
    if not isinstance(worst, list) or len(worst) != min(counted, FAR_WORST):
        return (f"far_worst must be a list of {min(counted, FAR_WORST)} entries (far_clients "
                f"{counted}, at most {FAR_WORST})")
    for entry in worst:
        why = _entry_problem(entry) or _bounds_problem(entry["sums"], cal)
        if why is not None:
            return f"far_worst: {why}"
    if len({e["client"] for e in worst}) != len(worst):
        return "far_worst names a client twice"
    lows = [e["ci"][0] for e in worst]
    above = sum(low > cal.get("target_far", 0) for low in lows)
    if any(a < b for a, b in itertools.pairwise(lows)) or above != min(high, len(worst)):
        return (f"far_worst holds {above} clients above the target where far_high_clients "
                f"{high} says {min(high, len(worst))} (in descending order of their low end)")
    return None


def _bounds_problem(sums, cal):
    """An entry's ``sums`` beyond the record's totals: more scores than ``impostors``,
    more people than ``far_by_person`` counts (when they are known), or None."""
    total, people = cal.get("impostors"), (cal.get("far_by_person") or {}).get("sums")
    if is_int(total) and sums["n"] > total:
        return f"sums: n {sums['n']:g} is more than the {total} impostor scores counted"
    if isinstance(people, dict) and sums["clusters"] > people["clusters"]:
        return (f"sums: {sums['clusters']} people, more than the {people['clusters']} "
                "far_by_person counts")
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
