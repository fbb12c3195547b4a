"""Failure to acquire for external matchers: the optional quality score of the contract
(``"quality": true`` in ``--describe``, ``--quality-list`` one-shot and the
``quality_list`` request of ``--serve``). Real programs, real files, the real CLI."""

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import write_non_faces

from ssgallery.cli import main
from ssgallery.formats.store import load_store
from ssgallery.matchers.external import quality_threshold

HERE = Path(__file__).resolve().parent
MATCHERS = HERE / "matchers"
SAMPLE = HERE.parent / "sample_data" / "faces"
PROGRAMS = {"one-shot": [sys.executable, str(MATCHERS / "example_mad.py")],
            "served": [sys.executable, str(MATCHERS / "serve_mad.py")],
            "no quality": [sys.executable, str(MATCHERS / "clipped_corr.py")]}


def _cli(args, command):
    result = CliRunner().invoke(main, [str(a) for a in args],
                                env={"SSGALLERY_MATCHER_CMD": shlex.join(command)})
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture(scope="module", params=list(PROGRAMS))
def gallery(request, tmp_path_factory):
    """A store and gallery of sample_data's c01 (c02, c03 background) at 23x28 pixels."""
    root = tmp_path_factory.mktemp("quality")
    faces = root / "faces"
    faces.mkdir()
    for name in ("c01", "c02", "c03"):
        (faces / name).symlink_to(SAMPLE / name, target_is_directory=True)
    command = PROGRAMS[request.param]
    run = _cli(["enroll", faces, "--store", root / "e.h5", "--matcher", "external",
                "--size", "23x28", "--clients", "c01", "--background", "c02,c03"], command)
    assert run.exit_code == 0, run.output
    run = _cli(["compress", "--store", root / "e.h5", "-o", root / "g.h5", "--m", "1",
                "--cv-folds", "0", "--max-iter", "2", "--solver", "paper"], command)
    assert run.exit_code == 0, run.output
    non_faces = write_non_faces(root / "non_faces", shape=(28, 23))
    return request.param, command, root, non_faces


def test_threshold_is_learned_from_the_training_images(gallery):
    kind, _, root, _ = gallery
    state = load_store(root / "e.h5").matcher_state
    if kind == "no quality":
        assert state["quality"] == 0 and np.isnan(state["quality_threshold"])
        return
    assert state["quality"] == 1
    # the example's quality of the 30 training images (sent as float32), computed here (float64)

    def quality(x):
        contrast = np.abs(x - x.mean()).mean()
        return 1 - np.abs(x - x[:, ::-1]).mean() / contrast

    q = [quality(x.astype(np.float32).astype(float)) for x in load_store(root / "e.h5").images]
    assert state["quality_threshold"] == pytest.approx(quality_threshold(q), abs=1e-6)
    assert 0 < state["quality_threshold"] < min(q)


def test_verify_reports_non_faces_as_failures_to_acquire(gallery):
    kind, command, root, non_faces = gallery
    probes = [non_faces[n] for n in ("black", "grey128", "noise", "gauss_noise")]
    genuine = sorted((SAMPLE / "c01").glob("*.png"))[:2]
    run = _cli(["verify", *probes, *genuine, "--claim", "c01", "--gallery", root / "g.h5",
                "--json"], command)
    results = json.loads(run.stdout)["results"]
    statuses = [r["status"] for r in results]
    if kind == "no quality":  # exactly as before the quality score: every probe scored
        assert "failure-to-acquire" not in statuses and run.exit_code in (0, 1)
        assert all(r["quality"] is None for r in results)
        return
    assert statuses[:4] == ["failure-to-acquire"] * 4, results
    assert all(s in ("accept", "reject") for s in statuses[4:]), results
    assert run.exit_code == 1 or (run.exit_code == 3 and "reject" not in statuses)
    assert all(r["score"] is None for r in results[:4])
    run = _cli(["verify", non_faces["noise"], "--claim", "c01", "--gallery", root / "g.h5"],
               command)
    assert run.exit_code == 3 and "FAILURE-TO-ACQUIRE" in run.output
