"""Shared fixtures: the real face data sets, synthetic face folders, and the sample data
enrolled and compressed once per test run (`built_once`).

One rule for real data: a data set that is missing skips its tests on a developer's
machine and fails them in CI (``CI`` set to anything but empty/"0"/"false"), where the
data must be there (``../shared/data`` or the ``SSGALLERY_*`` variables of
:mod:`ssgallery.datasets`).
"""

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
import tiers
from filelock import FileLock
from helpers import in_ci, invoked, make_faces

from ssgallery.datasets import att_faces_path, lfw_path, sample_faces_path


def pytest_addoption(parser):
    tiers.add_options(parser)


def pytest_configure(config):
    """The test tiers (tests/tiers.py), as a plugin: its hooks see every test and fixture,
    session-scoped ones included. With xdist (``-n 2``) and no ``--dist`` given: loadfile
    (a file's tests share one worker, so a module fixture is built once, not once per
    worker); set here rather than in pyproject's addopts so that ``pytest -p no:xdist``
    still runs."""
    if not config.pluginmanager.has_plugin("ssgallery-tiers"):
        config.pluginmanager.register(tiers, "ssgallery-tiers")
    if getattr(config.option, "dist", "no") == "load" and not _dist_given(config):
        config.option.dist = "loadfile"


def _dist_given(config):
    """Whether the command line, ``PYTEST_ADDOPTS`` or the ini's addopts chose a --dist."""
    words = [*config.invocation_params.args, *config.getini("addopts"),
             *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    return any(str(w).startswith("--dist") or w == "-d" for w in words)


def require_data(path, probe, name):
    """``path`` if ``path / probe`` exists; else skip (developer) or fail (CI)."""
    if not (path / probe).exists():
        message = (f"{name} not found at {path} (how to get it and the SSGALLERY_* "
                   f"variables: docs/getting-started.md#get-the-data)")
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


# ----------------------------------------------------------------- built once per test run

@pytest.fixture(scope="session")
def built_once(tmp_path_factory):
    """``built_once(name, build)``: the folder where ``build(folder)`` wrote something
    expensive (a store, a trained gallery) and the JSON-able value it returned, built once
    per test run even across xdist workers (the worker that comes first builds it under a
    file lock, the others wait and read it; a failed build is retried by the next).

    Tests must not change what is in the folder: copy files out first
    (``helpers.copied``).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this run

    def get(name, build):
        folder = root / f"built-once-{name}"
        with FileLock(f"{folder}.lock"):
            done = folder / "built.json"
            if not done.is_file():
                shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
                folder.mkdir()
                done.write_text(json.dumps(build(folder)))
            return folder, json.loads(done.read_text())

    return get


@pytest.fixture(scope="session")
def sample_store(built_once):
    """sample_data/faces enrolled by ``ssgallery enroll FACES --store S --json`` (20
    clients, eigenface): {"store": path, "enrolled": the CLI result}. Read only."""
    def build(folder):
        store = folder / "enrollment.h5"
        return {"store": str(store),
                "enrolled": invoked(["enroll", sample_faces_path(), "--store", store, "--json"])}

    return built_once("sample-store", build)[1]


@pytest.fixture(scope="session")
def hard_sample_faces(built_once):
    """The sample set as it was before it was calibrated against AT&T: ``write_sample_data``
    at seed 0 and variation 1 (the generator's default, several times harder than AT&T
    for eigenfaces), the same bytes as sample_data/ up to 1fae391. For the tests that
    pin what its faces made compress do (c07's SVM at the C bound, strangers' counts).
    Built once per run: the faces folder (``faces/c01..c20``). Read only."""
    def build(root):
        from ssgallery.images.synth import write_sample_data

        write_sample_data(root / "s", seed=0, probes=0, variation=1.0)
        return str(root / "s" / "faces")

    return Path(built_once("hard-sample", build)[1])


@pytest.fixture(scope="session")
def sample_gallery_3(built_once, sample_store):
    """`sample_store` compressed by ``ssgallery compress --m 2 --clients c01,c02,c03
    --json`` (every other client trains as an impostor): {"gallery": path, "compressed":
    the CLI result}. Read only."""
    def build(folder):
        gallery = folder / "gallery.h5"
        return {"gallery": str(gallery),
                "compressed": invoked(["compress", "--store", sample_store["store"], "-o",
                                       gallery, "--m", "2", "--clients", "c01,c02,c03",
                                       "--json"])}

    return built_once("sample-gallery-3", build)[1]


@pytest.fixture(scope="session")
def external_built(built_once):
    """A store ``e.h5`` and a gallery ``g.h5`` (client c00 only) of the foreign external
    matcher (``tests/matchers/clipped_corr.py``, named by the host, never by the files) on
    synthetic faces (3 clients x 3 images, 16 x 12): (folder, faces folder). Read only:
    copy a file out before editing it."""
    def build(root):
        import sys

        from ssgallery.app.compress import CompressOptions, CompressRun, compress
        from ssgallery.app.enroll import enroll

        foreign = [sys.executable, str(Path(__file__).resolve().parent / "matchers"
                                       / "clipped_corr.py")]
        faces = make_faces(str(root / "faces"), n_clients=3, n_images=3, shape=(16, 12))
        enroll(faces, root / "e.h5", matcher="external", matcher_options={"command": foreign})
        compress(root / "e.h5", root / "g.h5",
                 CompressOptions(m=1, cv_folds=0, max_iter=2, solver="paper"),
                 CompressRun(clients="c00", matcher_cmd=foreign))
        return faces

    return built_once("external", build)


@pytest.fixture(scope="session")
def scale_store(built_once):
    """10 synthetic clients x 5 images (``helpers.make_faces``, seed 3) enrolled: the
    store's path (tests/test_scale.py, tests/test_resume.py). Built once per run. Read
    only."""
    def build(root):
        from ssgallery.app.enroll import enroll

        enroll(make_faces(str(root / "faces"), n_clients=10, n_images=5, seed=3),
               root / "e.h5")

    return built_once("scale-store", build)[0] / "e.h5"


@pytest.fixture(scope="session")
def synth_split_built(built_once):
    """Synthetic faces (``write_sample_data``: 40 identities x 6 images, seed 1): the first
    12 enrolled with 5 images each (``train/``, ``e.h5``); their 6th image and every image
    of the 28 others as probes (``probes/``). Built once per run: (folder, the 12 client
    ids). Read only: copy the folder first (``shutil.copytree``)."""
    def build(root):
        from ssgallery.app.enroll import enroll
        from ssgallery.images.synth import write_sample_data

        write_sample_data(root / "s", identities=40, images=6, seed=1, probes=0)
        ids = sorted(p.name for p in (root / "s" / "faces").iterdir())
        for i, subject in enumerate(ids):
            files = sorted((root / "s" / "faces" / subject).iterdir())
            for folder, chosen in (("train", files[:5] if i < 12 else []),
                                   ("probes", files[5:] if i < 12 else files)):
                for f in chosen:
                    (root / folder / subject).mkdir(parents=True, exist_ok=True)
                    shutil.copy(f, root / folder / subject / f.name)
        enroll(root / "train", root / "e.h5")
        return ids[:12]

    return built_once("synth-split", build)
