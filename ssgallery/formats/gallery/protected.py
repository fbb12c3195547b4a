"""A plain gallery protected after the fact (`ssgallery.formats.protect`): the same
models, templates through the keyed isometry."""

import json

import h5py
import numpy as np

from ssgallery.errors import SsgalleryError
from ssgallery.formats.hdf5 import read_state
from ssgallery.formats.protect import ATTR, new_protection, protect_models, protection_record
from ssgallery.formats.seal import check_seal


def protect_gallery(src, dst, privacy_key, *, key=None, encrypt=False, force=False):
    """Write ``dst``: the plain gallery ``src`` with its templates protected under
    ``privacy_key`` (the same models: prototypes Q (z - c), no rendered image), signed
    with ``key`` and encrypted when ``encrypt``. Returns the record.

    What ``compress`` writes with protection, from an existing gallery: no retraining,
    so the verdicts are the plain gallery's (`ssgallery.matchers.rotation`). To renew a
    leaked gallery, compress again with a new key rather than re-protecting the same
    templates: whoever kept the old plain templates could align them with the new ones
    (docs/privacy.md)."""
    from ssgallery.formats.gallery.read import read_gallery
    from ssgallery.formats.gallery.write import write_gallery

    gallery = read_gallery(src, arrays=True, matcher=True)
    if protection_record(gallery.header, src) is not None:
        raise SsgalleryError("the gallery's templates are protected already", path=src)
    check_seal(src)
    with h5py.File(src, "r") as f:
        state = read_state(f["matcher"])[0]
    skip = {"format", "format_version", "tool_version", "created", "matcher",
            "matcher_config", "image_shape", "section_digests", "digest", "hmac"}
    attrs = {k: v for k, v in gallery.header.items() if k not in skip}
    models = list(gallery.clients.values())
    record, rotated = new_protection(gallery.matcher, privacy_key,
                                     np.concatenate([m.prototypes for m in models]))
    attrs[ATTR] = json.dumps(record, sort_keys=True)
    write_gallery(dst, matcher_name=gallery.matcher_name, matcher_config=gallery.matcher_config,
                  matcher_state=state, image_shape=gallery.header["image_shape"],
                  clients=protect_models(models, rotated), attrs=attrs, force=force, key=key,
                  privacy_key=privacy_key if encrypt else None)
    return record
