"""Shared fixtures: the real face data sets and synthetic face folders.

One rule for real data: a data set that is missing skips its tests on a developer's
machine and fails them in CI (``CI`` set to anything but empty/"0"/"false"), where the
data must be there (``../shared/data`` or the ``SSGALLERY_*`` variables of
:mod:`ssgallery.datasets`).
"""

import os

import pytest
from helpers import make_faces

from ssgallery.datasets import att_faces_path, lfw_path


def in_ci():
    """True when running in CI."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_data(path, probe, name):
    """``path`` if ``path / probe`` exists; else skip (developer) or fail (CI)."""
    if not (path / probe).exists():
        message = f"{name} not found at {path} (see ssgallery.datasets for the variables)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def att_faces():
    """The AT&T (ORL) folder: s1..s40, 10 PGM each."""
    return require_data(att_faces_path(), "s1/1.pgm", "AT&T faces")


@pytest.fixture(scope="session")
def lfw_faces():
    """The LFW crop folder: 158 people, 10-15 PNG each."""
    return require_data(lfw_path(), "MANIFEST.sha256", "LFW faces")


@pytest.fixture
def faces_factory(tmp_path):
    """``faces_factory(n_clients=5, n_images=6, ...)`` writes tiny synthetic face folders
    under a fresh temporary folder and returns its path (see ``helpers.make_faces``)."""
    counter = iter(range(1_000))

    def make(**kwargs):
        return make_faces(str(tmp_path / f"faces{next(counter)}"), **kwargs)

    return make
