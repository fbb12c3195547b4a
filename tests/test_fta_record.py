"""A store records what the folds of its failure-to-acquire limits held out.

Eigenface calibrates its limits on held-out folds; before 644eeb4 the folds held out
images, which refused some strangers' faces as not a face, and since then people. A
store's record did not say which (same format version, same state keys), so a store
enrolled before then could not be told apart: stores now record it (``fta_folds`` in the
matcher state), and ``info`` and ``compress`` say of a store without the record (and
``info`` of a gallery compressed from one), in one line, how to refit its limits.
"""

import json

import h5py
import numpy as np
import pytest
from helpers import invoked, make_faces, old_tree, refused, rehash_store

from ssgallery.errors import SsgalleryError
from ssgallery.formats.store import load_store
from ssgallery.matchers.eigenface import EigenfaceMatcher

WARNING = "failure-to-acquire limits were fitted before stores recorded how"


def _warnings(res):
    return [ln for ln in res["stderr"].splitlines() if WARNING in ln]


@pytest.mark.parametrize("commit", ["5cd4b9b", "13da628"])  # before 644eeb4; main before this
def test_a_store_enrolled_before_the_record_is_named_with_the_command_that_refits(
        tmp_path, commit):
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=4)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    old_tree(tmp_path, commit)("enroll", faces, "--store", store, "-q")
    old_limits = load_store(store, images=False).matcher_state["max_relative_dffs"]
    line = (f"ssgallery: warning: {store}: its {WARNING} (those enrolled before 2026-11-28 "
            "fitted them on held-out images, which refuse some strangers' faces as not a "
            "face: verify exit 3 instead of 1); enrol its faces again, without --add and "
            "with the options it was enrolled with (--clients, --background, the "
            "matcher's), to refit them on held-out people: ssgallery enroll FACES_DIR "
            f"--store {store} [OPTIONS]")
    shown = invoked(["info", "--store", store])
    assert shown["exit_code"] == 0 and _warnings(shown) == [line], shown["output"]
    as_json = invoked(["info", "--store", store, "--json"])
    assert json.loads(as_json["stdout"])["store"]["fta_folds"] == "unrecorded"
    assert _warnings(as_json) == [line]
    compressed = invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                          "--cv-folds", "2", "-q"])
    assert compressed["exit_code"] == 0 and _warnings(compressed) == [line], \
        compressed["output"]
    # the gallery carries the store's limits: info on it says so, and to compress again
    shown = invoked(["info", "--gallery", gallery])
    assert _warnings(shown) == [line.replace(f"{store}: its", f"{gallery}: its store's")
                                + ", then compress every client again (not --update)"], \
        shown["output"]
    # the command it names: the limits refitted, recorded, no warning
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    shown = invoked(["info", "--store", store, "--json"])
    assert json.loads(shown["stdout"])["store"]["fta_folds"] == "people"
    assert _warnings(shown) == []
    invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "--cv-folds", "2", "-q"])
    assert _warnings(invoked(["info", "--gallery", gallery])) == []
    refit = load_store(store, images=False).matcher_state["max_relative_dffs"]
    assert (refit != old_limits) == (commit == "5cd4b9b")  # folds of images -> of people


def test_a_fit_records_what_its_folds_held_out_and_a_state_without_it_stays_unrecorded():
    images = np.random.default_rng(0).uniform(0, 255, size=(12, 8, 6))
    people = np.repeat(["a", "b", "c"], 4)
    assert EigenfaceMatcher().fit(images, groups=people).get_state()["fta_folds"] == "people"
    assert EigenfaceMatcher().fit(images).get_state()["fta_folds"] == "images"
    assert EigenfaceMatcher().fit(images, groups=["a"] * 12).fta_folds_ == "images"
    m = EigenfaceMatcher().fit(images, groups=people)
    old = {k: v for k, v in m.get_state().items() if k != "fta_folds"}
    read = EigenfaceMatcher.from_state(m.get_config(), old)
    assert read.fta_folds_ == "unrecorded"
    assert "fta_folds" not in read.get_state()  # saved again, it never claims a record
    for bad in ("faces", 3, ""):
        with pytest.raises(SsgalleryError, match="fta_folds must be 'people' or 'images'"):
            EigenfaceMatcher.from_state(m.get_config(), dict(old, fta_folds=bad))


def test_an_edited_record_is_refused(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3)
    store = tmp_path / "e.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    with h5py.File(store, "a") as f:
        f["matcher"].attrs["fta_folds"] = "everything"
    rehash_store(store)
    refused(["info", "--store", store], "fta_folds must be 'people' or 'images'")
    refused(["compress", "--store", store, "-o", tmp_path / "g.h5"],
            "fta_folds must be 'people' or 'images'")
    assert not (tmp_path / "g.h5").exists()
