"""Where the real face data lives.

The data sets are read in place, never copied into the repository. Each is found at
its own variable if set (``$SSGALLERY_ATT_FACES``, ``$SSGALLERY_LFW``), else under
``$SSGALLERY_DATA`` if set, else under ``../shared/data`` beside the repository
checkout: ``att_faces/`` (AT&T/ORL, 40 subjects) and ``lfw/`` (Labeled Faces in the
Wild, 158 people).
"""

from pathlib import Path

import numpy as np

from ssgallery.safeio import env_text

ENV_DATA = "SSGALLERY_DATA"
ENV_ATT = "SSGALLERY_ATT_FACES"
ENV_LFW = "SSGALLERY_LFW"


def _data_path(env, folder):
    if env_text(env) is not None:
        return Path(env_text(env))
    if env_text(ENV_DATA) is not None:
        return Path(env_text(ENV_DATA)) / folder
    repo = Path(__file__).resolve().parent.parent
    return repo.parent / "shared" / "data" / folder


def att_faces_path():
    """Path of the AT&T faces folder (``s1``..``s40``); may not exist."""
    return _data_path(ENV_ATT, "att_faces")


def lfw_path():
    """Path of the LFW face-crop folder (``<Person_Name>/*.png``); may not exist."""
    return _data_path(ENV_LFW, "lfw")


def sample_faces_path():
    """Path of the project's own synthetic face set (``sample_data/faces``)."""
    return Path(__file__).resolve().parent.parent / "sample_data" / "faces"


def toy_two_gaussians(seed=0, n=25, spread=0.7):
    """The 2-D toy problem of the paper's Fig. 2: two Gaussian classes centred at
    (-1, 0) (label -1) and (+1, 0) (label +1).

    Returns
    -------
    X : ndarray of shape (n, 2)
    y : ndarray of shape (n,), values in {-1, +1}
    """
    rng = np.random.default_rng(seed)
    n_neg = n // 2
    X = np.vstack([rng.normal([-1, 0], spread, (n_neg, 2)),
                   rng.normal([1, 0], spread, (n - n_neg, 2))])
    return X, np.r_[-np.ones(n_neg), np.ones(n - n_neg)]
