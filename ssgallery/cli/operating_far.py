"""The warning ``compress`` and ``info`` give of the clients whose own held-out FAR lies
above the target FAR beyond doubt (`far_warning`), read from the per-client FAR a
gallery's calibration record keeps (`ssgallery.app.client_far`)."""

from ssgallery.checks import is_finite_real, is_int
from ssgallery.errors import printable
from ssgallery.tables import counted

__all__ = ["far_warning"]


def far_warning(cal):
    """The warning ``compress`` and ``info`` give when some clients' own held-out FAR lies
    above the target beyond doubt (``far_high_clients``: their 95 % interval by impostor
    person wholly above it, `ssgallery.app.client_far.far_record`), naming them
    (``far_worst``; each interval computed again from its sums); None otherwise. A
    client not named is not shown to keep the target: one client's held-out scores
    are too few to tell (docs/benchmarks/client_far.md)."""
    from ssgallery.biometrics.intervals import sums_interval

    cal = cal or {}
    high, target = cal.get("far_high_clients"), cal.get("target_far")
    if not is_int(high) or high < 1 or not is_finite_real(target):
        return None
    named = []
    for e in cal.get("far_worst") or ():
        low, up, _ = sums_interval(e["sums"])
        k, n, people = e["sums"]["k"], e["sums"]["n"], e["sums"]["clusters"]
        if low > target:
            named.append(f"{printable(e['client'])} ({100 * k / n:.1f}%, 95% {100 * low:.1f}-"
                         f"{100 * up:.1f}%: {k:g} of {n:g} scores of "
                         f"{counted(people, 'person', 'people')})")
    if not named:  # a record whose intervals say otherwise than its count: nobody
        return None
    who = f"the worst {len(named)}, " if high > len(named) else ""
    return (f"{high} of {counted(cal.get('far_clients'), 'client')} "
            f"{'accepts its' if high == 1 else 'accept their'} own "
            f"held-out impostors more often than the target FAR ({100 * target:g}%) by "
            f"more than the 95% interval by impostor person allows: {who}{', '.join(named)}; "
            "the expected FAR is an average over clients, and strangers may pass these "
            "thresholds more often. Clients not named may accept strangers more often too: "
            "one client's held-out scores are too few to tell "
            "(docs/benchmarks/client_far.md); "
            "roc --gallery GALLERY --probes FACES_DIR with faces of people never enrolled "
            "measures each client's FAR")
