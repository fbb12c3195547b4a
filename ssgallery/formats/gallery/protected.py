"""A gallery written again without retraining (`rewrite_gallery`): its templates
protected (`ssgallery.formats.protect`), signed, encrypted, or all three."""


import numpy as np

from ssgallery import jsontext
from ssgallery.errors import SsgalleryError
from ssgallery.formats.protect import ATTR, new_protection, protect_models, protection_record

# header attributes write_gallery sets itself (never copied from another gallery)
WRITER_ATTRS = {"format", "format_version", "tool_version", "created", "matcher",
                "matcher_config", "image_shape", "section_digests", "digest", "hmac"}


def rewrite_gallery(src, dst, *, protect=None, key=None, privacy_key=None, force=False):
    """Write ``dst``: the models of the plain-template gallery ``src`` (read with
    ``privacy_key`` when encrypted), their templates protected under the privacy key
    ``protect`` (prototypes through per-client isometries, no rendered image) or kept as
    they are (with their rendered images), signed with ``key`` and encrypted with
    ``privacy_key``. Returns the protection record (None without ``protect``).

    With ``key``, ``src`` is read as ``verify --key-file`` reads it: a source that is
    unsigned, signed with another key or edited since it was signed is refused with
    verify's line naming ``src`` (`ssgallery.formats.integrity.check_signature`), never
    copied under the key's signature. Everything copied comes from that one checked
    read: a file put at ``src`` meanwhile (another gallery signed with the same key)
    cannot mix into the copy.

    The verdicts are ``src``'s (no retraining; `ssgallery.matchers.rotation`). To renew
    a leaked gallery, compress again with a new key rather than re-protecting the same
    templates: whoever kept the old plain templates could align them with the new ones
    (docs/privacy.md)."""
    from ssgallery.formats.gallery.read import read_gallery
    from ssgallery.formats.gallery.write import write_gallery

    # everything copied (header, clients, rendered images, matcher state) from one open,
    # checked with the key: never from whatever the path names later
    gallery = read_gallery(src, arrays=True, key=key, matcher=True, privacy_key=privacy_key,
                           images=protect is None)
    if protection_record(gallery.header, src) is not None:
        raise SsgalleryError("the gallery's templates are protected already", path=src)
    attrs = {k: v for k, v in gallery.header.items() if k not in WRITER_ATTRS}
    models, record = list(gallery.clients.values()), None
    if protect is not None:
        record, tmap = new_protection(gallery.matcher, protect,
                                      np.concatenate([m.prototypes for m in models]))
        attrs[ATTR] = jsontext.dumps(record, sort_keys=True)
        models = protect_models(models, tmap)
    write_gallery(dst, matcher_name=gallery.matcher_name, matcher_config=gallery.matcher_config,
                  matcher_state=gallery.matcher_state, image_shape=gallery.header["image_shape"],
                  clients=models, attrs=attrs, force=force, key=key, privacy_key=privacy_key)
    return record
