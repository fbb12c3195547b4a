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


import numpy as np

from ssgallery.errors import InputError, option

WORST = 5  # clients named by the FRR record
HIGH_CLIENT_FRR = 0.5  # a client that rejects at least half of its own held-out images


def previous_calibration(header, path=None):
    """The threshold mode and calibration recorded in a gallery's header (a gallery
    written before threshold modes existed: per-client thresholds, no calibration)."""
    from ssgallery.formats.gallery import header_calibration

    return header.get("threshold_mode", "client"), header_calibration(header, path)


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


def calibrate(results, mode, target_far, kept=(), previous=None, path=None):
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

    Returns
    -------
    thresholds : dict of str to float
    calibration : dict
        ``mode``, ``target_far``, ``global_threshold`` (normalised T; None for
        ``client``), ``accepted``, ``impostors``, ``expected_far`` and
        ``expected_far_ci`` (None when copied clients have no recorded counts),
        ``clients``.
    """
    from ssgallery.biometrics.calibration import calibrate_thresholds, clopper_pearson

    kept = set(kept)
    new = [c for c in sorted(results) if c not in kept]
    counts = {"accepted": 0, "impostors": 0, "global_threshold": None}
    if kept:  # a gallery without counts leaves the estimate unknown
        _check_update(mode, target_far, previous, path)
        counts = {k: (previous[1] or {}).get(k) for k in counts}
    thresholds = {c: float(results[c].threshold) for c in kept}
    if new:
        t, info = calibrate_thresholds([results[c].heldout["impostor"] for c in new],
                                       [results[c].normalization for c in new], target_far,
                                       mode, global_threshold=counts["global_threshold"])
        thresholds.update({c: float(v) for c, v in zip(new, t)})
        counts["global_threshold"] = info["global_threshold"]
        if counts["accepted"] is not None:
            counts["accepted"] += info["accepted"]
            counts["impostors"] += info["impostors"]
    known = counts["accepted"] is not None and counts["impostors"]
    far = counts["accepted"] / counts["impostors"] if known else None
    record = {"mode": mode, "target_far": float(target_far),
              "global_threshold": counts["global_threshold"],
              "accepted": counts["accepted"], "impostors": counts["impostors"],
              "expected_far": far,
              "expected_far_ci": list(clopper_pearson(counts["accepted"],
                                                      counts["impostors"]))
              if known else None, "clients": len(results)}
    frr = frr_record(client_frr(results, thresholds, new),
                     (previous[1] or {}) if kept and previous else None)
    return thresholds, record | frr


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
    ``expected_frr_ci``, ``frr_high_clients`` (clients rejecting at least
    `HIGH_CLIENT_FRR` of theirs) and ``frr_worst`` (the `WORST` clients with the
    highest FRR, ``[id, frr]``, FRR > 0). ``previous``: the record of the clients copied
    from an existing gallery (an update); a record without FRR counts leaves them None."""
    from ssgallery.biometrics.calibration import clopper_pearson

    rejected = sum(r for r, _ in per_client.values())
    genuine = sum(n for _, n in per_client.values())
    high = sum(r / n >= HIGH_CLIENT_FRR for r, n in per_client.values())
    worst = [[c, r / n] for c, (r, n) in per_client.items() if r]
    if previous is not None:
        if previous.get("genuine") is None:
            return {"rejected": None, "genuine": None, "expected_frr": None,
                    "expected_frr_ci": None, "frr_high_clients": None, "frr_worst": []}
        rejected += int(previous["rejected"])
        genuine += int(previous["genuine"])
        high += int(previous.get("frr_high_clients") or 0)
        worst += [list(w) for w in previous.get("frr_worst") or ()]
    worst = sorted(worst, key=lambda w: (-w[1], w[0]))[:WORST]
    return {"rejected": rejected, "genuine": genuine,
            "expected_frr": rejected / genuine if genuine else None,
            "expected_frr_ci": list(clopper_pearson(rejected, genuine)) if genuine else None,
            "frr_high_clients": high, "frr_worst": worst}


def apply(results, thresholds, mode):
    """Set each result's final threshold; its own CV threshold stays in the provenance
    (``client_threshold``) and the summary row, with ``frr``: the fraction of its
    held-out genuine scores below the final threshold (None without them)."""
    per = client_frr(results, thresholds, thresholds)
    for c, t in thresholds.items():
        r = results[c]
        if "client_threshold" not in r.provenance:
            r.provenance["client_threshold"] = float(r.threshold)
            r.provenance["threshold_mode"] = mode
        r.threshold = float(t)
        frr = per[c][0] / per[c][1] if c in per else None
        r.row = dict(r.row, threshold=float(t), threshold_mode=r.provenance["threshold_mode"],
                     client_threshold=r.provenance["client_threshold"], frr=frr)
    return results


__all__ = ["HIGH_CLIENT_FRR", "WORST", "apply", "calibrate", "client_frr", "frr_record",
           "previous_calibration"]
