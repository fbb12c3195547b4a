"""A prototype the learner gives no weight goes back to its start: nothing else holds it
where the data are (review24: compress refused its own model, exit 2, after training)."""

import numpy as np
import pytest
from helpers import invoked

from ssgallery.learn.learner import DEAD_BETA, _dead_at_start


def test_a_prototype_of_no_weight_goes_back_to_its_start_and_no_other_moves():
    Z0 = np.zeros((3, 4))
    Z = np.array([[1.0, 2, 3, 4], [900.0, -900, 900, -900], [0.5, 0, 0, 0]])
    out = _dead_at_start(Z, [0.7, 3e-199, -0.2], Z0)
    np.testing.assert_array_equal(out, [[1.0, 2, 3, 4], [0, 0, 0, 0], [0.5, 0, 0, 0]])
    assert Z[1, 0] == 900.0  # the solver's array is not written to
    # a small weight is a weight: only what is below DEAD_BETA of the largest goes back
    np.testing.assert_array_equal(_dead_at_start(Z, [0.7, 1e-90, -0.2], Z0), Z)
    assert DEAD_BETA * 0.7 < 1e-90
    np.testing.assert_array_equal(_dead_at_start(Z, [0.0, 0.0, 0.0], Z0), Z)


@pytest.mark.slow
def test_compress_keeps_its_own_model_when_a_prototype_dies(att_faces, tmp_path):
    """AT&T s1-s20 (images 1-5) with s21-s30 as background people (every image), client
    s3 at --impostors cohort --max-impostors 5: its second prototype gets beta 3e-199 and
    the repulsion phase threw it to norm 227 in PCA space, beyond the 141 the eigenface
    matcher allows; compress refused the gallery it had just trained (exit 2)."""
    faces, background = tmp_path / "faces", tmp_path / "background"
    for s in range(1, 31):
        folder = (faces if s <= 20 else background) / f"s{s}"
        folder.mkdir(parents=True)
        for i in range(1, 6 if s <= 20 else 11):
            (folder / f"{i}.pgm").symlink_to(att_faces / f"s{s}" / f"{i}.pgm")
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    res = invoked(["enroll", faces, "--background", background, "--store", store, "-q"])
    assert res["exit_code"] == 0, res["output"]
    res = invoked(["compress", "--store", store, "-o", gallery, "--impostors", "cohort",
                   "--max-impostors", "5", "--clients", "s3", "-q"])
    assert res["exit_code"] == 0, res["output"]
    res = invoked(["info", "--gallery", gallery, "--client", "s3"])
    assert res["exit_code"] == 0, res["output"]
