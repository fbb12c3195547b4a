"""The thresholds of a ``compress`` run, set once every client is trained.

Each client's training returns its held-out impostor and genuine scores (the threshold CV's,
`ssgallery.app.client_fit.train_client`); they travel with the client's
result and its resumable part. When every client is done, `calibrate` sets the
thresholds of one threshold mode (`ssgallery.biometrics.calibration`) over all of
them, and records the calibration the gallery keeps: the mode, the global normalised
threshold T, the held-out estimate of the FAR (counts and the 95 %
Clopper-Pearson interval) and what that FAR costs: the held-out estimate of the FRR at
the final thresholds (the clients' held-out genuine scores against their thresholds,
pooled), with the clients that reject the most of theirs (`frr_record`).

An update (clients copied from the existing gallery) never mixes calibrations: the
copied clients keep their thresholds, and the new clients are set against the
existing calibration, i.e. the gallery's own T for the global modes (their held-out
impostor scores are added to the FAR counts). The existing gallery must have been
calibrated with the same mode and target FAR; otherwise every client has to be
compressed again.
"""

from dataclasses import dataclass, field

import numpy as np

from ssgallery.app.client_far import client_far, far_record
from ssgallery.app.impostor_people import (  # impostor_people: public here too
    check_kept_people,
    impostor_people,
    kept_block,
    kept_salt,
    merged_by_person,
    new_block,
    person_ids,
)
from ssgallery.app.training_scores import (  # public here too
    fitted_note,
    on_training_scores,
    training_share,
)
from ssgallery.checks import is_int, is_real
from ssgallery.errors import InputError, option

WORST = 5  # clients named by the FRR record
HIGH_CLIENT_FRR = 0.5  # a client that rejects at least half of its own held-out images


def previous_calibration(header, clients, path=None):
    """The threshold mode and calibration recorded in a gallery's header (a gallery
    written before threshold modes existed: per-client thresholds, no calibration);
    ``clients``: the gallery's client ids, which the record must describe."""
    from ssgallery.formats.gallery import header_calibration

    return header.get("threshold_mode", "client"), header_calibration(header, clients, path)


def _check_update(mode, target_far, previous, path):
    old_mode, old = previous
    redo = f"compress every client again without {option('update')} to change it"
    if old_mode != mode:
        raise InputError(f"the gallery's thresholds were set with {option('threshold_mode')} "
                         f"'{old_mode}', not '{mode}': {redo}", path=path)
    if mode != "client" and (old is None or old.get("global_threshold") is None):
        raise InputError(f"the gallery records no global threshold for "
                         f"{option('threshold_mode')} '{mode}': {redo}", path=path)
    if old is not None and abs(float(old["target_far"]) - float(target_far)) > 1e-12:
        raise InputError(f"the gallery's thresholds were set for {option('target_far')} "
                         f"{old['target_far']:g}, not {target_far:g}: {redo}", path=path)


def calibrate(results, mode, target_far, kept=(), previous=None, path=None, labels=None,
              files=None, salt=None):
    """Thresholds of every client and the calibration to record.

    Parameters
    ----------
    results : dict of str to ClientResult
        Every client of the gallery to write; the trained ones carry ``heldout`` scores.
    mode : {"client", "znorm-global", "shrink"}
    target_far : float
    kept : collection of str
        Clients copied from the existing gallery (they keep their thresholds).
    previous : (str, dict or None), optional
        The existing gallery's mode and calibration (`previous_calibration`);
        required when ``kept`` is not empty.
    path : str, optional
        The existing gallery (named in errors).
    labels : ndarray of shape (n_images,), optional
        The store's subject of each row: the people behind each client's impostor
        scores (``heldout["impostor_row"]``), for ``unresolved`` (default: each score a
        person).
    files : sequence of str, optional
        The store's sha256 of each row's file: with ``labels``, an id per subject that
        names no one, salted per gallery (`ssgallery.app.impostor_people.person_ids`):
        the interval by person then keeps each person's counts under it, so that an
        update counts a person in both blocks once.
    salt : str, optional
        The ids' salt of a new gallery (`ssgallery.app.impostor_people.new_salt`); an
        update keeps the kept record's.

    Returns
    -------
    thresholds : dict of str to float
    calibration : dict
        ``mode``, ``target_far``, ``global_threshold`` (normalised T; None for
        ``client``), ``accepted``, ``impostors``, ``expected_far`` and
        ``expected_far_ci`` (None when copied clients have no recorded counts; the
        scores counted as independent trials), ``far_by_person`` (the interval with the
        impostor person as the trial: `ssgallery.app.impostor_people.merged_by_person`,
        with its ``people`` and ``salt`` when ``files`` are given; None when copied
        clients have
        none recorded),
        ``clients``, ``training_clients`` (clients whose scores are training scores:
        nothing could be held out, or they were off scale; the copied ones by their
        provenance) and ``unresolved`` (the clients whose count is not an estimate and
        the FAR to expect of them:
        `ssgallery.biometrics.calibration.calibrate_thresholds`; None: none or unknown),
        ``counts_unknown`` (True, only when an update copies some but not all of the
        clients the existing record counted, `counts_inseparable`: the FAR and FRR
        counts and ``unresolved`` are then None, unknown), the FRR counts
        (`frr_record`) and the per-client FAR (`ssgallery.app.client_far.far_record`).
    """
    kept = set(kept)
    new = [c for c in sorted(results) if c not in kept]
    tally = _kept_tally(kept, mode, target_far, previous, path)
    tally.salt = kept_salt(tally.by_person) or salt  # the kept ids' salt, or the new one
    ids = None if files is None or labels is None or tally.salt is None else \
        person_ids(labels, files, tally.salt)
    check_kept_people(tally.by_person, ids, path)
    thresholds = {c: float(results[c].threshold) for c in kept}
    if new:
        thresholds.update(_calibrate_new(results, new, mode, target_far, (labels, ids),
                                         tally))
    previous = None if tally.old is None else {} if tally.unknown else tally.old
    return thresholds, (_record(results, mode, target_far, labels, tally)
                        | frr_record(client_frr(results, thresholds, new), previous)
                        | far_record(tally.by_client, target_far, previous))


@dataclass
class _Tally:
    """What `calibrate` adds up over the kept clients (an update's record) and the new
    ones: the FAR counts and global T, ``unresolved``, the blocks of the interval by
    person, the new clients' own counts (``by_client``, `client_far`); ``unknown``: the
    kept record's counts cannot be separated (`counts_inseparable`); ``old``: that
    record (None without kept clients)."""

    counts: dict = field(default_factory=lambda: {"accepted": 0, "impostors": 0,
                                                  "global_threshold": None})
    unresolved: dict = None
    unknown: bool = False
    old: dict = None
    by_person: list = field(default_factory=list)
    salt: str = None
    by_client: dict = field(default_factory=dict)


def _kept_tally(kept, mode, target_far, previous, path):
    """The `_Tally` of the clients an update keeps (checked against the existing
    gallery's mode and target, `_check_update`); an empty one without kept clients. A
    gallery without counts leaves the estimate unknown."""
    tally = _Tally()
    if not kept:
        return tally
    _check_update(mode, target_far, previous, path)
    old = previous[1] or {}
    unknown = counts_inseparable(old, kept)
    tally.counts = {k: None if unknown and k != "global_threshold" else old.get(k)
                    for k in tally.counts}
    tally.unresolved = None if unknown else unresolved_record(old.get("unresolved"))
    record = old.get("far_by_person")
    tally.by_person.append(None if unknown else kept_block(record, clustered_sums(record)))
    tally.unknown, tally.old = unknown, old
    return tally


def _calibrate_new(results, new, mode, target_far, people, tally):
    """The thresholds of the ``new`` clients (the kept ones' global T when there are
    any), their counts added to ``tally``; ``people``: the store's ``labels`` and
    ``ids`` (`calibrate`)."""
    from ssgallery.biometrics.calibration import calibrate_thresholds

    labels, ids = people
    counts = tally.counts
    held_out = [not on_training_scores(results[c]) for c in new]
    t, info = calibrate_thresholds([results[c].heldout["impostor"] for c in new],
                                   [results[c].normalization for c in new], target_far,
                                   mode, global_threshold=counts["global_threshold"],
                                   people=_people(results, new, labels), held_out=held_out)
    tally.by_client.update(client_far(new, info["by_client"], held_out))
    counts["global_threshold"] = info["global_threshold"]
    if counts["accepted"] is not None:
        counts["accepted"] += info["accepted"]
        counts["impostors"] += info["impostors"]
    if not tally.unknown:
        tally.unresolved = merge_unresolved(tally.unresolved, info["unresolved"])
    tally.by_person.append(new_block(info, ids))
    return {c: float(v) for c, v in zip(new, t)}


def _record(results, mode, target_far, labels, tally):
    """The calibration record of `calibrate` but its FRR counts, from the ``tally`` of
    every client (the kept ones by their provenance)."""
    from ssgallery.biometrics.calibration import clopper_pearson

    counts = tally.counts
    training = sum(on_training_scores(r) for r in results.values())
    known = counts["accepted"] is not None and counts["impostors"]
    far = counts["accepted"] / counts["impostors"] if known else None
    record = {"mode": mode, "target_far": float(target_far),
              "global_threshold": counts["global_threshold"],
              "accepted": counts["accepted"], "impostors": counts["impostors"],
              "expected_far": far,
              "expected_far_ci": list(clopper_pearson(counts["accepted"],
                                                      counts["impostors"]))
              if known else None,
              "far_by_person": _far_by_person(tally.by_person, tally.salt)
              if known else None,
              "clients": len(results),
              "training_clients": int(training), "unresolved": tally.unresolved}
    if record["far_by_person"] is not None:
        record["impostor_people"] = impostor_people(record["far_by_person"], labels)
    if tally.unknown:
        record["counts_unknown"] = True
    return record


def _far_by_person(blocks, salt):
    """The interval by impostor person of the blocks of `calibrate` (the kept record's
    and the new clients'): each person once when every block names its people, by ids
    salted with ``salt`` (`merged_by_person`), else the blocks as disjoint people
    (`merged_record`); None when a block has none (unknown)."""
    if not blocks or any(b is None for b in blocks):
        return None
    if all(b["people"] is not None for b in blocks):
        return merged_by_person(blocks, salt)
    return merged_record([b["sums"] for b in blocks])


def counts_inseparable(previous, kept):
    """Whether a gallery's calibration record (``previous``, data from a file) counts
    other clients than ``kept``, the clients an update copies from it: clients trained
    again or left out (no longer enrolled) were pooled into its counts (held-out
    scores), which hold no per-client share to take theirs out of; or the record says
    its counts are unknown (``counts_unknown``, an earlier such update). The
    calibration's counts, FRR and ``unresolved`` are then unknown: never those clients
    counted twice. A record without ``clients`` (none recorded) has no counts to keep
    either. (The 1:N point names the clients it was measured on:
    `ssgallery.app.open_set.operating_point`.)"""
    n = previous.get("clients")
    return previous.get("counts_unknown") is True or \
        (is_int(n) and n != len(kept))


def _people(results, clients, labels):
    """Per client, the subject of each held-out impostor score (None: unknown)."""
    if labels is None:
        return None
    labels = np.asarray(labels).astype(str)
    return [labels[np.asarray(results[c].heldout["impostor_row"], dtype=int)]
            if "impostor_row" in (results[c].heldout or {}) else None for c in clients]


def clustered_sums(value):
    """The per-cluster sums of a recorded interval by cluster (``far_by_person``,
    ``frr_by_client``: `ssgallery.biometrics.calibration.clustered_record`) when they
    are sums that counts can give (`ssgallery.formats.interval_sums.sums_problem`; a
    gallery's record is refused on read otherwise,
    `ssgallery.formats.gallery.header_records.header_calibration`); else None
    (unknown, as in galleries written before it)."""
    from ssgallery.formats.interval_sums import SUM_KEYS, sums_problem

    sums = value.get("sums") if isinstance(value, dict) else None
    if sums is None or sums_problem(sums) is not None:
        return None
    return {k: sums[k] for k in SUM_KEYS}


def merged_record(blocks):
    """One interval by cluster from the `clustered_sums` of blocks of disjoint clusters
    (an update: the copied clients' record and the new clients'; clients are; impostor
    people, who are claimed against both blocks, are taken as disjoint here only when a
    block does not name them: `ssgallery.app.impostor_people.merged_by_person`); None
    when a block has none (unknown) or there is no trial."""
    from ssgallery.biometrics.calibration import clustered_record
    from ssgallery.biometrics.intervals import merged_sums

    if not blocks or any(b is None for b in blocks):
        return None
    return clustered_record(merged_sums(*blocks))


def unresolved_record(value):
    """A calibration record's ``unresolved`` (data from a file: `calibrate`) when it is
    well formed: ``clients`` >= 1, ``people`` [min, max] whole numbers >= 1, ``far`` in
    (0, 1]; else None (unknown, as in galleries written before it)."""
    if not isinstance(value, dict):
        return None
    n, people, far = value.get("clients"), value.get("people"), value.get("far")
    training = value.get("training", 0)
    whole = [v for v in (n, *(people if isinstance(people, list) else ()))
             if is_int(v) and v >= 1]
    if len(whole) != 3 or len(people) != 2 or people[0] > people[1] \
            or not is_int(training) \
            or not 0 <= training <= n:
        return None
    number = is_real(far) and 0 < far <= 1
    if not (far is None if training == n else number):
        return None
    return {"clients": n, "people": list(people),
            "far": None if far is None else float(far), "training": training}


def merge_unresolved(a, b):
    """Two ``unresolved`` records (`calibrate`) as one: clients added, the range of
    people widened, the expected FAR averaged over the held-out clients (None: none)."""
    if not a or not b:
        return a or b
    held = [(r["far"], r["clients"] - r["training"]) for r in (a, b) if r["far"] is not None]
    return {"clients": a["clients"] + b["clients"],
            "people": [min(a["people"][0], b["people"][0]),
                       max(a["people"][1], b["people"][1])],
            "far": sum(f * n for f, n in held) / sum(n for _, n in held) if held else None,
            "training": a["training"] + b["training"]}


def client_frr(results, thresholds, clients):
    """Per client: (rejected, genuine) of its held-out genuine scores at its threshold
    (failures to acquire, NaN, count as rejected); clients without any are left out."""
    out = {}
    for c in clients:
        genuine = np.asarray((results[c].heldout or {}).get("genuine", ()), dtype=float)
        if genuine.size:
            out[c] = (int(np.sum(~(genuine >= thresholds[c]))), int(genuine.size))
    return out


def frr_record(per_client, previous=None):
    """The FRR part of a calibration record: ``rejected`` and ``genuine`` held-out genuine
    scores (pooled over clients), ``expected_frr`` and its 95 % Clopper-Pearson
    ``expected_frr_ci`` (the scores counted as independent trials), ``frr_by_client``
    (the interval with the client as the trial, `merged_record`), ``frr_high_clients`` (clients rejecting at least
    `HIGH_CLIENT_FRR` of theirs) and ``frr_worst`` (the `WORST` clients with the
    highest FRR, ``[id, frr]``, FRR > 0). ``previous``: the record of the clients copied
    from an existing gallery (an update); a record without FRR counts leaves them None."""
    from ssgallery.biometrics.calibration import clopper_pearson
    from ssgallery.biometrics.intervals import cluster_sums

    blocks = [cluster_sums([r for r, _ in per_client.values()],
                           [n for _, n in per_client.values()])]
    rejected = sum(r for r, _ in per_client.values())
    genuine = sum(n for _, n in per_client.values())
    high = sum(r / n >= HIGH_CLIENT_FRR for r, n in per_client.values())
    worst = [[c, r / n] for c, (r, n) in per_client.items() if r]
    if previous is not None:
        if previous.get("genuine") is None:
            return {"rejected": None, "genuine": None, "expected_frr": None,
                    "expected_frr_ci": None, "frr_by_client": None,
                    "frr_high_clients": None, "frr_worst": []}
        blocks.append(clustered_sums(previous.get("frr_by_client")))
        rejected += int(previous["rejected"])
        genuine += int(previous["genuine"])
        high += int(previous.get("frr_high_clients") or 0)
        worst += [list(w) for w in previous.get("frr_worst") or ()]
    worst = sorted(worst, key=lambda w: (-w[1], w[0]))[:WORST]
    return {"rejected": rejected, "genuine": genuine,
            "expected_frr": rejected / genuine if genuine else None,
            "expected_frr_ci": list(clopper_pearson(rejected, genuine)) if genuine else None,
            "frr_by_client": merged_record(blocks) if genuine else None,
            "frr_high_clients": high, "frr_worst": worst}


def apply(results, thresholds, mode):
    """Set each result's final threshold; its own CV threshold stays in the provenance
    (``client_threshold``) and the summary row, with ``frr``: the fraction of its
    held-out genuine scores below the final threshold, kept in the provenance as
    ``frr_heldout`` ``[rejected, genuine]`` (a client an update copies keeps its threshold
    and so its record; without it, the row's: `ssgallery.app.update.kept_from_gallery`'s,
    None without held-out scores)."""
    per = client_frr(results, thresholds, thresholds)
    for c, t in thresholds.items():
        r = results[c]
        if "client_threshold" not in r.provenance:
            r.provenance["client_threshold"] = float(r.threshold)
            r.provenance["threshold_mode"] = mode
        r.threshold = float(t)
        if c in per:
            r.provenance["frr_heldout"] = list(per[c])
        counts = r.provenance.get("frr_heldout")
        frr = counts[0] / counts[1] if counts else r.row.get("frr")
        r.row = dict(r.row, threshold=float(t), threshold_mode=r.provenance["threshold_mode"],
                     client_threshold=r.provenance["client_threshold"], frr=frr)
    return results


__all__ = ["HIGH_CLIENT_FRR", "WORST", "apply", "calibrate", "client_frr", "clustered_sums",
           "counts_inseparable", "fitted_note", "frr_record", "impostor_people",
           "merge_unresolved", "merged_record", "on_training_scores", "previous_calibration",
           "training_share", "unresolved_record"]
