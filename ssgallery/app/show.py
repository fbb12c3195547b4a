"""``ssgallery show``: a montage of one client's rendered prototypes."""

import os

import numpy as np

from ssgallery.errors import NotRenderableError
from ssgallery.formats.integrity import reads_key_files
from ssgallery.tables import signed


def default_output(claim):
    """Where ``show`` writes client ``claim``'s montage when not told:
    ``prototypes_<claim>.png`` in the current folder (a client id is a name, never a
    path: `ssgallery.formats.hdf5.client_id_problem`)."""
    return f"prototypes_{claim}.png"


def _info_command(gallery_path, claim):
    """``ssgallery info --client ID``, with ``--gallery PATH`` unless it is the default
    (``info`` alone reads ./gallery.h5), quoted for a shell (an id may hold a space)."""
    import shlex

    gallery = os.fspath(gallery_path)
    words = ["ssgallery", "info"] + (["--gallery", gallery] if gallery != "gallery.h5" else [])
    return shlex.join([*words, "--client", claim])


@reads_key_files()
def show_prototypes(gallery_path, claim, out_path=None, *, scale=2, privacy_key_file=None,
                    force=False, key_file=None):
    """Montage of one client's rendered prototypes with their beta (paper's Fig. 5),
    written atomically to ``out_path`` (default `default_output`; an existing file that
    is not an image of its format only with ``force``, see
    `ssgallery.images.montage.save_montage`). Returns a JSON-able summary.

    A gallery with protected templates (`ssgallery.formats.protect`) stores no rendered
    image: its prototypes are drawn only with the privacy key (``privacy_key_file``,
    default ``$SSGALLERY_PRIVACY_KEY_FILE``), through the keyed isometry. The key also
    reads an encrypted gallery.

    With the host's signing key (``key_file``, default ``$SSGALLERY_KEY_FILE``: see
    `ssgallery.formats.integrity.load_key`) the gallery's signature is checked as
    ``verify`` and ``info`` check it: an unsigned gallery, or one signed with another key
    or edited since, is refused before anything is drawn. Without a key it is not
    checked.

    A protected gallery is read twice (the client, then its keyed matcher); a gallery
    written at the path between the two reads is refused
    (`ssgallery.formats.integrity.unchanged`), never drawn."""
    from ssgallery.formats.encryption import load_keys
    from ssgallery.formats.gallery import read_client
    from ssgallery.formats.integrity import unchanged
    from ssgallery.formats.protect import protection_record
    from ssgallery.images.montage import save_montage

    key, privacy_key = load_keys(key_file, privacy_key_file)
    model = read_client(gallery_path, claim, images=True, matcher=False,
                        privacy_key=privacy_key, key=key)
    images = model.prototype_images
    if protection_record(model.header, os.fspath(gallery_path)) is not None:
        checked = model.header.get("digest")  # the second read: the same gallery
        model = read_client(gallery_path, claim, privacy_key=privacy_key, key=key)
        unchanged(checked, model.header.get("digest"), "gallery", os.fspath(gallery_path))
        images = np.clip(np.rint(model.matcher.render(model.prototypes)), 0, 255)
    if images is None:
        matcher = model.header.get("matcher", "?")
        raise NotRenderableError(f"nothing to show for client '{claim}': the {matcher} "
                                 "matcher's prototypes are not images and cannot be drawn; "
                                 f"'{_info_command(gallery_path, claim)}' shows its model",
                                 path=gallery_path)
    title = (f"client {claim}: b = {signed(model.intercept)}, threshold = "
             f"{signed(model.threshold)}, m = {model.n_prototypes}")
    if out_path is None:  # the claim is a client id of the gallery by now
        out_path = default_output(claim)
    save_montage(out_path, images.astype(np.uint8), model.beta, title=title, scale=scale,
                 force=force)
    return {"claim": claim, "output": os.fspath(out_path), "m": model.n_prototypes,
            "beta": [float(b) for b in model.beta], "intercept": model.intercept,
            "threshold": model.threshold}
