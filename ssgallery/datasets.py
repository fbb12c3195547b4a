"""Where the real face data lives.

The AT&T (ORL) database is read in place, never copied into the repository: from
``$SSGALLERY_ATT_FACES`` if set, else ``../shared/data/att_faces`` beside the
repository checkout.
"""

import os
from pathlib import Path

import numpy as np

ENV_ATT = "SSGALLERY_ATT_FACES"


def att_faces_path():
    """Path of the AT&T faces folder (``s1``..``s40``); may not exist."""
    env = os.environ.get(ENV_ATT)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parent.parent
    return repo.parent / "shared" / "data" / "att_faces"


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
