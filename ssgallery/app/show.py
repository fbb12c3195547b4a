"""``ssgallery show``: a montage of one client's rendered prototypes."""

import os

from ssgallery.errors import FormatError
from ssgallery.formats.gallery import read_client


def show_prototypes(gallery_path, claim, out_path, *, scale=2):
    """Montage of one client's rendered prototypes with their beta (paper's Fig. 5),
    written atomically to ``out_path``. Returns a JSON-able summary."""
    from ssgallery.images.montage import save_montage

    model = read_client(gallery_path, claim, images=True, matcher=False)
    if model.prototype_images is None:
        raise FormatError(f"client '{claim}' has no rendered prototype images",
                          path=gallery_path)
    title = (f"client {claim}: b = {model.intercept:+.3g}, threshold = "
             f"{model.threshold:+.3g}, m = {model.n_prototypes}")
    save_montage(out_path, model.prototype_images, model.beta, title=title, scale=scale)
    return {"claim": claim, "output": os.fspath(out_path), "m": model.n_prototypes,
            "beta": [float(b) for b in model.beta], "intercept": model.intercept,
            "threshold": model.threshold}
