"""The 1:N operating point of a gallery: one threshold on the best normalised score of a
search, set at compress time at a target FPIR (how ``identify`` reads it:
`ssgallery.app.open_set_point`, whose names this module re-exports).

The score a search thresholds is the *centred* score (g_c(x) - mean_c) / scale: each
client's raw score minus its impostor mean (the Z-norm mean stored with the client),
on one scale for every client (`ssgallery.biometrics.openset.pooled_scale`, recorded).
A per-client Z-norm would divide by each client's own impostor std, estimated from
~20 held-out people: a client whose held-out people scored tightly becomes a "lamb"
that draws most strangers' best scores.

At compress time (`operating_point`), every trained client's threshold-CV held-out
impostor scores (people its fold model never saw) are centred leave-one-subject-out
(`ssgallery.biometrics.openset.subject_out_normalised`) and grouped by probe (the store
row): each probe's scores are a non-mated search of the clients that held it out (all
clients but the probe's own when no impostor cap bites). The searches give the FPIR of
an n-client search at every threshold, and the threshold T for the gallery's N clients
is the smallest with expected FPIR_N(T) <= the target
(`ssgallery.biometrics.openset.search_curve`): T grows with N, about as the per-client
tail at target / N; when the searches are too few to resolve the target, T is read from
the curve's tail fitted beyond them (``extrapolated`` in the record,
`ssgallery.biometrics.openset_tail.tail_fit`). The record (root attribute ``open_set`` of the
gallery, JSON, covered by its digest) keeps T, the expected FPIR with its 95 % interval, and the curve
(T against the hazard per client at 200 levels), from which ``identify --fpir`` reads
T at another target and ``compress --update`` re-derives T for the grown gallery: the
kept clients' curve and the new clients' held-out searches are merged, weighted by
their numbers of clients (`ssgallery.biometrics.openset.merge_curves`). An update of a
gallery written before the record (its clients carry no held-out searches) sets T from
the new clients' searches alone, taken as typical of every client (``measured_clients``
and their ids ``measured`` in the record), or records none when it trains no client
(`_without_record`); so does an update that trains again (or leaves out) clients whose
searches the record pooled (``searches_inseparable``: the curve keeps no per-client
share to take theirs out of), and only such an update (`_pooled`): one that trains again
or leaves out clients the curve was not measured on merges it like an add.

Light: numpy and json at import (``identify`` reads records; scipy only when deriving).
"""

import numpy as np

from ssgallery.app.open_set_point import (
    DEFAULT_TARGET_FPIR,
    beyond_end,
    check_target_fpir,
    describe,
    interval_kind,
    measured_note,
    no_point_why,
    read_record,
    resolve,
    searches_kind,
    training_note,
)
from ssgallery.errors import InputError, option


def heldout_searches(results, labels, clients, scale):
    """Centred held-out impostor scores of ``clients`` and the probe of each.

    Parameters
    ----------
    results : dict of str to ClientResult
        Each trained client's result; ``heldout`` holds ``impostor`` scores and their
        store rows ``impostor_row``.
    labels : ndarray of str, shape (n_rows,)
        Subject of every store row.
    clients : list of str
    scale : float
        The gallery's 1:N score scale.

    Returns
    -------
    scores, probes, owners, people : ndarray, shape (M,)
        Each score, its probe (store row), the client that gave it (its index in
        ``clients``) and the probe's person (an integer code of its label).
    """
    from ssgallery.biometrics.openset import subject_out_normalised

    scores, probes, owners = [], [], []
    for i, c in enumerate(clients):
        held = results[c].heldout or {}
        if "impostor_row" not in held:
            raise InputError(f"client '{c}' carries no held-out search rows (a part written "
                             "by an older ssgallery): compress it again without "
                             f"{option('resume')}")
        rows = np.asarray(held["impostor_row"]).astype(np.int64)
        scores.append(subject_out_normalised(held["impostor"], np.asarray(labels)[rows], scale))
        probes.append(rows)
        owners.append(np.full(rows.size, i, dtype=np.int32))
    probes = np.concatenate(probes)
    _, person = np.unique(np.asarray(labels), return_inverse=True)
    return np.concatenate(scores), probes, np.concatenate(owners), person.ravel()[probes]


def _curve(results, labels, clients, scale, n_clients):
    """The held-out searches' curve of ``clients`` for a gallery of ``n_clients``, with
    its extrapolated tail (`ssgallery.biometrics.openset.search_curve`)."""
    from ssgallery.biometrics.openset import search_curve

    scores, probes, owners, people = heldout_searches(results, labels, clients, scale)
    return search_curve(scores, probes, n_clients, clients=owners, people=people)


def operating_point(results, labels, target_fpir, kept=(), previous=None, path=None):
    """The gallery's 1:N operating point (the record ``compress`` stores).

    Parameters
    ----------
    results : dict of str to ClientResult
        Every client of the gallery to write; the trained ones (not in ``kept``) carry
        held-out scores with their store rows.
    labels : ndarray of str
        Subject of every store row.
    target_fpir : float
    kept : collection of str
        Clients copied from the existing gallery (``--update``).
    previous : dict, optional
        The existing gallery's record (`read_record`); None for a gallery written
        before 1:N operating points (`_without_record`).
    path : str, optional
        The existing gallery (named in errors).

    Returns
    -------
    dict or None
        ``kind``, ``target_fpir``, ``threshold`` (T on the best centred score),
        ``score`` ("centred") and ``scale`` (the centred scores' common scale),
        ``resolved`` (False: the held-out searches cannot resolve the target, T is above
        every held-out score), ``extrapolated`` (T read from the curve's tail fitted
        beyond the held-out searches), ``expected_fpir`` and ``expected_fpir_ci``,
        ``clients``,
        ``searches`` and ``search_size`` (summed and smallest over ``blocks``: the
        compress runs merged by updates) and ``curve``; ``measured_clients`` and
        ``measured`` (their ids, `_pooled`) when only some of the clients' held-out
        searches set it, taken as typical of the others. An update keeps the existing
        curve, merged with the searches of the clients it trains, when the curve pools
        the searches of kept clients only; when it pools those of a client the update
        trains again or leaves out (``searches_inseparable``: the curve keeps no
        per-client share to take theirs out of), only the searches of the clients the
        update trains set it, never the others counted twice. None when such an update
        trains no client, or an update of a gallery without a record trains none: it
        records no point.
    """
    from ssgallery.biometrics import openset

    target_fpir = check_target_fpir(target_fpir)
    kept = set(kept)
    new = [c for c in sorted(results) if c not in kept]
    if kept and previous is None:
        return _without_record(results, labels, target_fpir, new)
    pooled = _pooled(previous, kept) if kept else set()
    if pooled is None:  # the curve pooled clients the update trains again or left out
        record = _without_record(results, labels, target_fpir, new)
        return None if record is None else dict(record, searches_inseparable=True)
    curves = []
    if kept:
        scale = previous["scale"]
        curves.append(dict(previous["curve"], clients=len(kept),
                           search_size=previous["search_size"], searches=previous["searches"],
                           blocks=previous.get("blocks", 1)))
    else:
        scale = openset.pooled_scale([(results[c].normalization or {}).get("std", np.nan)
                                      for c in sorted(results)])
    if new:
        curves.append(_curve(results, labels, new, scale, len(new)))
    curve = openset.merge_curves(curves) if len(curves) > 1 else curves[0]
    record = _with_training(_record(curve, target_fpir, scale), results, new,
                            previous.get("training_clients", 0) if kept else 0)
    if kept and "measured_clients" in previous:
        _still_partial(record, previous, pooled, new)
    return record


def _with_training(record, results, new, kept_training=0):
    """``record`` with ``training_clients`` when some of the clients whose searches
    its curve pools had no held-out scores, their searches training scores
    (`ssgallery.app.thresholds.on_training_scores`: ``--cv-folds 0``, nothing to hold
    out, off scale; ``kept_training``: those of the existing record an update merges):
    the expected FPIR is optimistic for them (`training_note`). Left out when none."""
    from ssgallery.app.thresholds import on_training_scores

    training = int(kept_training) + sum(on_training_scores(results[c]) for c in new)
    return dict(record, training_clients=training) if training else record


def _pooled(previous, kept):
    """The clients whose held-out searches the existing record's curve pools, all of
    them kept by the update: every client of its gallery for a record measured on all
    (no ``measured_clients``), its ``measured`` ids, or ``...`` (Ellipsis: not known
    which, a record written before ``measured``). None when the curve pools the
    searches of a client the update trains again or leaves out (not in ``kept``), or
    may do so (unknown ids, some client not kept): they cannot be taken out."""
    if "measured_clients" not in previous:
        return set(kept) if len(kept) == previous["clients"] else None
    ids = previous.get("measured")
    if ids is None:
        return ... if len(kept) == previous["clients"] else None
    return set(ids) if set(ids) <= kept else None


def _still_partial(record, previous, pooled, new):
    """Mark ``record`` (a merge of the existing record's curve, measured on some of
    its clients only, with the searches of the ``new`` clients) as measured on the
    clients the two pool, or as measured on all when they are every client: the
    ``measured_clients`` and ``measured`` ids (not known when ``pooled`` is ``...``),
    and the existing record's ``searches_inseparable``."""
    if pooled is ...:
        measured, ids = int(previous["measured_clients"]) + len(new), None
    else:
        ids = sorted(pooled | set(new))
        measured = len(ids)
    if measured >= record["clients"]:
        return
    record["measured_clients"] = measured
    if ids is not None:
        record["measured"] = ids
    if previous.get("searches_inseparable") is True:
        record["searches_inseparable"] = True


def fill_spreads(results, kept=()):
    """Give each trained client without a measured impostor-score spread (one impostor
    score, or all equal: ``compress --max-impostors 1``) the pooled spread of
    the gallery's clients that measured one, or the margin's unit when none did
    (`ssgallery.biometrics.openset.pooled_spreads`): its normalisation and its summary
    row's, in ``results``, before the 1:N scale is pooled from them and the gallery is
    written. Clients copied from the gallery (``kept``) are left as they are. Called
    after the thresholds are set (a client with constant scores keeps its own
    threshold, `ssgallery.biometrics.calibration.calibrate_thresholds`).

    Returns
    -------
    list of str
        The clients given a spread (compress names them in a warning).
    """
    from ssgallery.biometrics.openset import pooled_spreads

    clients, kept = sorted(results), set(kept)
    norms, filled = pooled_spreads([results[c].normalization for c in clients])
    filled = [i for i in filled if clients[i] not in kept]
    for i in filled:
        r = results[clients[i]]
        r.normalization = norms[i]
        r.row = dict(r.row, normalization=norms[i])
    return [clients[i] for i in filled]


def _without_record(results, labels, target_fpir, new):
    """An update of a gallery that records no 1:N operating point (written before
    ``--target-fpir``): its kept clients carry no held-out searches. The point is set
    from the new clients' searches alone, their hazard per client taken for every
    client (``measured_clients`` < ``clients`` in the record); None (no point) when the
    run trained no client or a kept client has no impostor mean to centre on."""
    from ssgallery.biometrics import openset

    norms = [results[c].normalization or {} for c in sorted(results)]
    if not new or any("mean" not in n or "std" not in n for n in norms):
        return None
    scale = openset.pooled_scale([n["std"] for n in norms])
    record = _record(_curve(results, labels, new, scale, len(results)), target_fpir, scale)
    return dict(_with_training(record, results, new), measured_clients=len(new),
                measured=list(new))


def _record(curve, target_fpir, scale):
    """The stored record of a gallery's 1:N curve at ``target_fpir``."""
    from ssgallery.biometrics import openset

    threshold, resolved = openset.threshold_at_fpir(curve, target_fpir)
    fpir, ci = openset.fpir_at(curve, threshold)
    from ssgallery.formats.gallery.summary import OPEN_SET_KIND

    return {"kind": OPEN_SET_KIND, "target_fpir": target_fpir, "threshold": threshold,
            "resolved": resolved, "extrapolated": openset.is_extrapolated(curve, threshold),
            "expected_fpir": fpir, "expected_fpir_ci": list(ci),
            "clients": int(curve["clients"]), "searches": int(curve["searches"]),
            "search_size": int(curve["search_size"]), "blocks": int(curve.get("blocks", 1)),
            "score": "centred", "scale": scale,
            "curve": {k: curve[k] for k in ("thresholds", "hazard", "hazard_low",
                                             "hazard_high", "extrapolated_above", "tail",
                                             "interval_people")
                      if k in curve}}


__all__ = ["DEFAULT_TARGET_FPIR", "beyond_end", "check_target_fpir", "describe",
           "heldout_searches", "interval_kind", "measured_note", "no_point_why", "operating_point", "read_record",
           "resolve", "searches_kind", "training_note"]
