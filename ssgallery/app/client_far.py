"""Per client, the share of its held-out impostor scores its threshold accepts: the
clients that accept strangers more often than the target FAR, as far as one client's
held-out scores can tell.

One threshold T for every client (znorm-global) keeps the target FAR on average over
clients, not for each: some accept strangers several times as often
(docs/benchmarks/client_far.md). Compress counts the accepts of each client's held-out
impostor scores for the expected FAR
(`ssgallery.biometrics.calibration.calibrate_thresholds`, ``by_client``); `far_record`
keeps, per client, the 95 % interval of that share by impostor person
(`ssgallery.biometrics.calibration.clustered_record`: one person's images are accepted
together) and names the clients whose interval lies wholly above the target FAR. One
client's held-out scores are those of the gallery's other people, a few hundred scores
of at most a hundred people: the interval is wide, so a client named is one whose
excess its data shows, and most clients that accept strangers too often are not named
(the benchmark page measures how many).
"""

from ssgallery.checks import is_int
from ssgallery.formats.gallery.client_far_checks import FAR_WORST as WORST  # as frr_worst


def client_far(clients, by_client, held_out):
    """``{client: sums}`` of the clients whose held-out count is an estimate of their own
    FAR: their scores are held out (``held_out``) and their threshold was not fitted on
    them (``by_client``'s entry None: `calibrate_thresholds`' ``unresolved``); sums
    (`ssgallery.biometrics.calibration.person_sums`) with at least one score."""
    return {c: s for c, s, h in zip(clients, by_client, held_out)
            if h and s is not None and s["n"] > 0}


def _entry(client, sums):
    from ssgallery.biometrics.calibration import clustered_record

    return {"client": client} | clustered_record(sums)


def far_record(per_client, target_far, previous=None):
    """The per-client FAR part of a calibration record.

    Parameters
    ----------
    per_client : dict of str to dict
        `client_far`: the sums of each client whose held-out count is an estimate.
    target_far : float
    previous : dict, optional
        The record of the clients an update keeps (``{}``: their counts are unknown,
        `ssgallery.app.thresholds.counts_inseparable`); a record without
        ``far_clients`` (written before it) leaves the counts unknown.

    Returns
    -------
    dict
        ``far_clients`` (the clients whose held-out FAR is an estimate),
        ``far_high_clients`` (those whose 95 % interval by impostor person lies wholly
        above ``target_far``) and ``far_worst`` (the `WORST` clients with the highest
        lower end of that interval, each ``{"client", "ci", "design_effect", "sums"}``);
        None, None and [] when unknown.
    """
    entries = [_entry(c, s) for c, s in per_client.items()]
    counted, high = len(entries), sum(e["ci"][0] > target_far for e in entries)
    if previous is not None:  # the kept clients' counts, named or not
        if not is_int(previous.get("far_clients")):
            return {"far_clients": None, "far_high_clients": None, "far_worst": []}
        counted += previous["far_clients"]
        high += previous["far_high_clients"]
        entries += [_entry(e["client"], e["sums"]) for e in previous.get("far_worst") or ()]
    worst = sorted(entries, key=lambda e: (-e["ci"][0], -e["sums"]["k"] / e["sums"]["n"],
                                           e["client"]))[:WORST]
    return {"far_clients": counted, "far_high_clients": high, "far_worst": worst}


__all__ = ["WORST", "client_far", "far_record"]
