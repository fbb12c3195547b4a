"""Where the real face data lives.

The AT&T (ORL) database is read in place, never copied into the repository: from
``$SSGALLERY_ATT_FACES`` if set, else ``../shared/data/att_faces`` beside the
repository checkout.
"""

import os
from pathlib import Path

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
