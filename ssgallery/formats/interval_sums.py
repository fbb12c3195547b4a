"""The sums a recorded interval by cluster keeps (``far_by_person``, ``frr_by_client`` in
a gallery's calibration record; `ssgallery.biometrics.intervals.cluster_sums` writes
them, `ssgallery.biometrics.intervals.design_effect` reads them), and what sums a file
may hold (`sums_problem`) and the per-person counts beside them (``far_by_person``'s
``people``, `people_problem`): checked where a record is read, below the layers that use
them."""

import re

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, shown

PERSON_ID = re.compile(r"[0-9a-f]{32}")  # `ssgallery.app.impostor_people.person_ids`'s

__all__ = ["SUM_KEYS", "people_problem", "sums_problem"]

SUM_KEYS = ("clusters", "k", "n", "kk", "kn", "nn")


def sums_problem(sums):
    """What makes ``sums`` (data from a file: a recorded interval's) sums that no
    per-cluster counts give (`ssgallery.biometrics.intervals.cluster_sums`,
    0 <= k_i <= n_i, n_i > 0), or None.

    The bounds: every key of `SUM_KEYS` a finite number >= 0, ``clusters`` G whole,
    ``n`` below 2**53 (`ssgallery.checks.EXACT_INT`), all 0 when G is 0 and ``n`` > 0
    when it is not, ``k`` <= ``n``, kk <= kn <= nn (k_i <= n_i), kk <= k², kn <= k n,
    nn <= n² (sums of non-negative terms), kk >= k² / G and nn >= n² / G (Cauchy-
    Schwarz), each within float rounding. A hand-edited ``kk`` of 1e300 with k = 100
    made a design effect of 4e+299.

    Returns
    -------
    str or None
        ``kk 1e+300 is above k² (1e+04)``, ...; None for sums that counts can give.
    """
    if not isinstance(sums, dict):
        return f"expected an object, got {shown(sums, typed=True)}"
    for key in SUM_KEYS:
        if not is_finite_real(sums.get(key)) or sums[key] < 0:
            return f"{key} must be a finite number >= 0, got {shown(sums.get(key), typed=True)}"
    g, k, n, kk, kn, nn = (float(sums[key]) for key in SUM_KEYS)
    if not is_int(sums["clusters"]) or n >= EXACT_INT:
        return "clusters must be a whole number, and n below 2**53"
    if g == 0 and max(k, n, kk, kn, nn) > 0:
        return "no cluster, but counts above 0"
    if g > 0 and n <= 0:
        return f"{int(g)} clusters of no trial"

    def over(low, high):  # low > high beyond float rounding
        return low > high * (1 + 1e-9) + 1e-9

    for name, value, what, bound in (("k", k, "n", n), ("kk", kk, "kn", kn),
                                     ("kn", kn, "nn", nn), ("kk", kk, "k²", k * k),
                                     ("kn", kn, "k n", k * n), ("nn", nn, "n²", n * n)):
        if over(value, bound):
            return f"{name} {value:.4g} is above {what} ({bound:.4g})"
    for name, value, what, bound in (("kk", kk, "k² / clusters", k * k / max(g, 1)),
                                     ("nn", nn, "n² / clusters", n * n / max(g, 1))):
        if over(bound, value):
            return f"{name} {value:.4g} is below {what} ({bound:.4g})"
    return None


def people_problem(people, sums, salt=None):
    """What makes ``people`` (data from a file: the ``[id, k, n]`` of each impostor
    person of an interval by person, `ssgallery.app.impostor_people`) not the counts
    its ``sums`` (checked: `sums_problem`) were made of, or None: a list of one entry per
    cluster, each a 32-hex-digit id (distinct) with whole counts 0 <= k <= n, 1 <= n <
    2**53, whose `ssgallery.biometrics.intervals.cluster_sums` are ``sums`` (within float
    rounding); the ids' ``salt`` 32 hex digits, also without people (None: ids of
    c7a8e11, unsalted, which no update adds by person); ``people`` None: no people
    (records written before them). ``compress --update`` adds a kept record's people to its own
    by id."""
    if salt is not None and not (isinstance(salt, str) and PERSON_ID.fullmatch(salt)):
        return f"salt must be 32 hex digits, got {shown(salt, typed=True)}"
    if people is None:  # a record written before them (a salt alone: checked above)
        return None
    g = sums["clusters"]
    if not isinstance(people, list) or len(people) != g:
        return f"people must be a list of {g} [id, k, n], one per cluster"
    for entry in people:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and PERSON_ID.fullmatch(entry[0]) and is_int(entry[1]) and is_int(entry[2])
                and 0 <= entry[1] <= entry[2] and 1 <= entry[2] < EXACT_INT):
            return (f"people: {shown(entry, typed=True)} is not [id (32 hex digits), k, n] "
                    "with 0 <= k <= n and n >= 1")
    if len({e[0] for e in people}) != len(people):
        return "people: an id given twice"
    k, n = [e[1] for e in people], [e[2] for e in people]
    counted = {"k": sum(k), "n": sum(n), "kk": sum(a * a for a in k),
               "kn": sum(a * b for a, b in zip(k, n)), "nn": sum(b * b for b in n)}
    for key, value in counted.items():
        if abs(value - float(sums[key])) > 1e-9 * max(1.0, value):
            return f"people give {key} {value:.6g}, the sums {float(sums[key]):.6g}"
    return None
