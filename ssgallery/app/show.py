"""``ssgallery show``: a montage of one client's rendered prototypes."""

import os

from ssgallery.errors import NotRenderableError
from ssgallery.formats.gallery import read_client


def show_prototypes(gallery_path, claim, out_path, *, scale=2):
    """Montage of one client's rendered prototypes with their beta (paper's Fig. 5),
    written atomically to ``out_path``. Returns a JSON-able summary."""
    from ssgallery.images.montage import save_montage

    model = read_client(gallery_path, claim, images=True, matcher=False)
    if model.prototype_images is None:
        matcher = model.header.get("matcher", "?")
        raise NotRenderableError(f"nothing to show for client '{claim}': the {matcher} "
                                 "matcher's prototypes are not images and cannot be drawn "
                                 "(a gallery never stores a face); see 'ssgallery info'",
                                 path=gallery_path)
    title = (f"client {claim}: b = {model.intercept:+.3g}, threshold = "
             f"{model.threshold:+.3g}, m = {model.n_prototypes}")
    save_montage(out_path, model.prototype_images, model.beta, title=title, scale=scale)
    return {"claim": claim, "output": os.fspath(out_path), "m": model.n_prototypes,
            "beta": [float(b) for b in model.beta], "intercept": model.intercept,
            "threshold": model.threshold}
