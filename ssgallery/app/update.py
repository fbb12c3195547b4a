"""What ``compress --update`` keeps of the existing gallery: the clients trained with this
run's options on the same matcher basis, its threshold calibration and its 1:N
operating point (`ssgallery.app.compress.compress`)."""

import os

from ssgallery.app.options import MAX_ITER
from ssgallery.app.parts import options_digest
from ssgallery.checks import is_real
from ssgallery.errors import InputError, option
from ssgallery.learn.defaults import DEFAULT_M

__all__ = ["kept_from_gallery", "warn_retrained"]


def kept_from_gallery(plan, gallery_path, key=None, privacy_key=None, warn=None):
    """Clients of the existing gallery to copy (same options, same matcher basis) and
    the gallery's threshold calibration (`ssgallery.app.thresholds.previous_calibration`)
    and 1:N operating point (`ssgallery.app.open_set.read_record`); ``warn`` (default:
    `ssgallery.images.ingest.default_warn`) names the clients trained again because their
    options differ, or says that there is no gallery at ``gallery_path`` to keep clients
    of (a misspelt name would otherwise train every client without a word)."""
    from ssgallery.app.client_result import ClientResult
    from ssgallery.app.open_set import read_record
    from ssgallery.app.thresholds import previous_calibration
    from ssgallery.formats.gallery import read_gallery

    if not os.path.exists(gallery_path):  # nothing to keep, no calibration, no 1:N point:
        from ssgallery.images.ingest import default_warn  # said, as --resume without parts

        (warn or default_warn)(f"{os.fspath(gallery_path)}: no gallery to update: every "
                               "client is trained")
        return {}, (None, None)
    from ssgallery.formats.protect import protection_record

    old = read_gallery(gallery_path, arrays=True, key=key, privacy_key=privacy_key)
    if protection_record(old.header, gallery_path) is not None:
        raise InputError("the gallery's templates are protected; an update would mix two "
                         f"rotations: compress every client again (without "
                         f"{option('update')}), which also renews the rotation",
                         path=gallery_path)
    enrolled = set(plan.store.clients)
    ours = [c for c in old.clients if c in enrolled]
    _check_same_matcher(old, plan, ours, gallery_path)
    digest = options_digest(plan.options)
    kept = {}
    warn_retrained({c: old.clients[c] for c in ours if c in plan.todo and
                    old.clients[c].provenance.get("options_digest") != digest},
                   plan.options, gallery_path, warn)
    for c in ours:
        model = old.clients[c]
        if model.provenance.get("options_digest") == digest or c not in plan.todo:
            from ssgallery.app.result_checks import checked_row

            prov = {k: v for k, v in model.provenance.items()
                    if k not in ("bytes_model", "bytes_images")}
            kept[c] = ClientResult(client=c, prototypes=model.prototypes, beta=model.beta,
                                   intercept=model.intercept, threshold=model.threshold,
                                   provenance=prov, normalization=model.normalization)
            kept[c].row = checked_row(kept[c], gallery_path)
    previous = previous_calibration(old.header, list(old.clients), gallery_path)
    _recorded_frr(kept, previous[1])
    return kept, (previous, read_record(old.header, list(old.clients), gallery_path))


def _recorded_frr(kept, calibration):
    """Give the kept clients whose provenance has no ``frr_heldout`` (galleries written
    before it) the FRR the gallery's calibration record names them with (its
    ``frr_worst``: the few clients rejecting the most); the others' stays None."""
    named = dict(tuple(w) for w in (calibration or {}).get("frr_worst") or ())
    for c, result in kept.items():
        if result.row.get("frr") is None and c in named:
            result.row["frr"] = float(named[c])


def _check_same_matcher(old, plan, ours, gallery_path):
    """Refuse an update whose store's matcher state is not the gallery ``old``'s: one
    line naming what changed, the failure-to-acquire limits only (`_limits_only`: the
    store enrolled again to refit them) or the basis (``ours``: the stale clients)."""
    from ssgallery.formats.hdf5 import state_digest

    if old.header.get("matcher_digest") == state_digest(plan.store.matcher_state) \
            and old.matcher_name == plan.store.matcher_name:
        return
    if _limits_only(old, plan):
        raise InputError("the matcher's failure-to-acquire limits changed since the "
                         "gallery was written (its store was enrolled again: the basis is "
                         "the same, the limits refitted); its clients keep the old limits: "
                         f"compress every client again, without {option('update')}",
                         path=gallery_path)
    shown = ", ".join(sorted(ours)[:10]) + (f", ... ({len(ours)} in all)"
                                            if len(ours) > 10 else "")
    raise InputError("the matcher basis changed since the gallery was written; stale "
                     f"clients: {shown or 'none'}: compress them all again",
                     path=gallery_path)


def _limits_only(old, plan):
    """Whether the gallery ``old``'s matcher state and its store's differ only in the
    failure-to-acquire limits (`ssgallery.matchers.Matcher.FTA_STATE`, eigenface's) and
    their record (``fta_folds``, `ssgallery.matchers.Matcher.fta_folds_`), refitted when
    the store is enrolled again, not in the basis its clients' models live in."""
    from ssgallery.formats.hdf5 import state_digest

    limits = getattr(type(plan.matcher), "FTA_STATE", ())
    if not limits or old.matcher_name != plan.store.matcher_name:
        return False
    keys = (*limits, "fta_folds")
    basis = [state_digest({k: v for k, v in state.items() if k not in keys})
             for state in (old.matcher_state, plan.store.matcher_state)]
    return basis[0] == basis[1]


def warn_retrained(models, options, where, warn, what="", verb="keep", store=None):
    """Tell the user that this run trains the clients of ``models`` (client -> model or
    part with a ``provenance``) again, made by another run at ``where``: from another
    store (``store``, the run's store fingerprint, given for parts: no options resume a
    part of another store; or a part of this run's options), or with other options (the
    hint names an earlier default when it would keep some of them, `_earlier_default`).
    ``what`` names them (e.g. "committed parts"), ``verb`` what the options would do to
    them ("keep", "resume")."""
    if not models:
        return
    from ssgallery.images.ingest import default_warn

    warn = warn or default_warn
    digest = options_digest(options)
    elsewhere = sorted(c for c, m in models.items()
                       if m.provenance.get("options_digest") == digest or store is not None
                       and m.provenance.get("store_fingerprint") != store)
    other = sorted(set(models) - set(elsewhere))
    lead = f"{where}: " + (f"{what} of " if what else "")
    if elsewhere:
        warn(f"{lead}{_shown(elsewhere)}: made from another store: trained again")
    if not other:
        return
    hint = _earlier_default({c: models[c] for c in other}, options, verb)
    differ = "" if hint else _recorded_differences([models[c] for c in other], options)
    warn(f"{lead}{_shown(other)}: trained with other options than this run's{differ}: "
         f"trained again (to {verb} them, give the options they were compressed with{hint})")


PROVENANCE_NAMES = {"lambda": "lam"}  # a provenance's historical name -> the option's


def _recorded_differences(models, options, most=4):
    """The options the models' provenance records with another value than this run's
    (`CompressOptions.provenance`'s names and the fields recorded only off their
    baseline), as ``" (they record `max_iter` 4, this run 0)"``; "" when none can be
    told apart (options that enter the digest only, or values resolved from "auto")."""
    from dataclasses import fields

    from ssgallery.app.options import IF_CHANGED

    mine = {"m": options.m, **options.provenance()}
    baselines = {f.name: f.metadata["baseline"] for f in fields(options)
                 if f.metadata["digest"] == IF_CHANGED}  # recorded only off the baseline
    mine.update({name: getattr(options, name) for name in baselines})
    said = []
    for key, value in mine.items():
        if value == "auto":  # the recorded value is the resolved one
            continue
        recorded = sorted({str(_shown_value(m.provenance.get(key, baselines.get(key))))
                           for m in models if key in baselines or key in m.provenance}
                          - {str(_shown_value(value))})
        if recorded:
            said.append(f"{option(PROVENANCE_NAMES.get(key, key))} {' or '.join(recorded)}, "
                        f"this run {_shown_value(value)}")
    return f" (they record {'; '.join(said[:most])})" if said else ""


def _shown_value(value):
    return f"{value:g}" if is_real(value) else value


# Defaults that changed, as the values every gallery made before the change was trained
# with: between 0 before its default of 0.5 (issue 24); for a black box (issue 21), m 2
# before its default of 5, with or without max_iter 200 and swap_rounds 0 from before
# "auto" trained it on swapped real images; or swap_rounds 0 alone, for a black box's
# gallery made with its own --m and --max-iter (e.g. the old docs' 5 and 4)
EARLIER_DEFAULTS = ({"between": 0.0}, {"m": DEFAULT_M},
                    {"m": DEFAULT_M, "max_iter": MAX_ITER, "swap_rounds": 0},
                    {"max_iter": MAX_ITER, "swap_rounds": 0}, {"swap_rounds": 0})


def _earlier_default(models, options, verb):
    """The hint naming the first of `EARLIER_DEFAULTS`, or else of the m the models
    record (a default m capped at a smaller store's images, which grew since), that
    would keep some of ``models`` (trained with this run's options but that), or ""."""
    from dataclasses import replace
    from numbers import Integral

    done = {"keep": "kept", "resume": "resumed"}.get(verb, verb)
    recorded = sorted({int(m.provenance["m"]) for m in models.values()
                       if isinstance(m.provenance.get("m"), Integral)})
    for change in (*EARLIER_DEFAULTS, *({"m": m} for m in recorded)):
        earlier = replace(options, **change)
        if earlier == options:
            continue
        digest = options_digest(earlier)
        if any(m.provenance.get("options_digest") == digest for m in models.values()):
            said = " and ".join(f"{option(k)} {v:g}" for k, v in change.items())
            return f"; those trained with {said} are {done} with {said}"
    return ""


def _shown(clients):
    return ", ".join(clients[:5]) + (f", ... ({len(clients)} in all)" if len(clients) > 5
                                     else "")
