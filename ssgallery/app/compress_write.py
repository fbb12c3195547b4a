"""How ``compress`` writes its gallery (`ssgallery.app.compress`): each client's
trained result as a `ssgallery.formats.gallery.ClientModel` (`client_model`, its
prototypes drawn for ``show`` by `rendered`), the templates protected when asked, and
the gallery written once, atomically, with its calibration and 1:N operating point
(`write_compressed`)."""

import os

import numpy as np

from ssgallery.errors import NotRenderableError


def rendered(matcher, prototypes):
    """Prototypes drawn as uint8 images (m, H, W) for ``show``; None for a matcher whose
    space cannot be drawn (deep descriptors)."""
    try:
        return np.clip(np.round(matcher.render(prototypes)), 0, 255).astype(np.uint8)
    except NotRenderableError:
        return None


def client_model(plan, result, drawn=True):
    """A `ClientModel` from a result (prototype images rendered here if ``drawn`` and
    drawable; its Z-norm std floored, `ssgallery.formats.gallery.checks.std_floor`)."""
    from ssgallery.formats.gallery import ClientModel
    from ssgallery.formats.gallery.checks import floor_normalization

    images = rendered(plan.matcher, result.prototypes) if drawn else None
    model = ClientModel(client_id=result.client, prototypes=result.prototypes,
                        beta=result.beta, intercept=result.intercept,
                        threshold=result.threshold, similarity=plan.similarity.params(),
                        provenance=result.provenance, prototype_images=images,
                        normalization=result.normalization)
    model.normalization = floor_normalization(model, plan.matcher)
    return model


def write_compressed(plan, gallery_path, store_path, results, recorded, force=False,
                     keys=(None, None)):
    """Assemble the models (sorted by client id), protect their templates when asked
    (`ssgallery.formats.protect`), write the gallery atomically (signed and encrypted
    with ``keys`` = (signing key, privacy key)); returns the ids of the clients that can
    never accept a probe. ``recorded``: the threshold calibration and the 1:N operating
    point (None: not recorded)."""
    from ssgallery import jsontext
    from ssgallery.formats.gallery import never_accepting, write_gallery
    from ssgallery.formats.hdf5 import state_digest

    store, (key, privacy_key) = plan.store, keys
    calibration, point = recorded
    models = [client_model(plan, results[c]) for c in sorted(results)]
    extra = {} if point is None else {"open_set": jsontext.dumps(point, sort_keys=True)}
    if plan.options.protect_templates:
        from ssgallery.formats.protect import ATTR, new_protection, protect_models

        record, tmap = new_protection(plan.matcher, privacy_key,
                                      np.concatenate([m.prototypes for m in models]))
        models = protect_models(models, tmap)
        extra[ATTR] = jsontext.dumps(record, sort_keys=True)
    write_gallery(gallery_path, matcher_name=store.matcher_name,
                  matcher_config=store.matcher_config, matcher_state=store.matcher_state,
                  image_shape=store.image_shape, clients=models, key=key,
                  privacy_key=privacy_key,
                  attrs={**extra, "target_far": plan.options.target_far,
                         "store": os.path.abspath(store_path),
                         "store_fingerprint": store.fingerprint,
                         "matcher_digest": state_digest(store.matcher_state),
                         "basis_stale": bool(store.basis_stale),
                         "threshold_mode": calibration["mode"],
                         "calibration": jsontext.dumps(calibration, sort_keys=True)},
                  force=force)
    return never_accepting(models, plan.matcher)
