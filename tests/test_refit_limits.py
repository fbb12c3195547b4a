"""``compress --update`` of a gallery whose store was enrolled again to refit its
failure-to-acquire limits (what ``info`` and ``compress`` ask of a store enrolled before
stores recorded how, 94c6f0f / abd386d: "enrol its faces again ... and compress again").

The refit keeps the basis (the PCA of the same images) and changes the limits (and adds
their record, ``fta_folds``), so the store's matcher state is no longer the gallery's and
the gallery's clients cannot be kept. Before: the update said "the matcher basis changed
since the gallery was written; stale clients: c00, c01, c02, c03: compress them all
again", which the basis had not. Now it names what changed and how to compress again.
"""

import re

from helpers import invoked, make_faces, old_tree


def test_an_update_after_the_limits_were_refitted_says_what_changed(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=4)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    old = old_tree(tmp_path, "13da628")  # main before stores recorded their limits' folds
    old("enroll", faces, "--store", store, "-q")
    old("compress", "--store", store, "-o", gallery, "--m", "1", "-q")
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0  # refits
    res = invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "--update",
                   "-q"])
    assert res["exit_code"] == 2, res["output"]
    errors = [ln for ln in res["stderr"].splitlines() if "error" in ln]
    expected = (f"ssgallery: error: {gallery}: the matcher's failure-to-acquire limits "
                "changed since the gallery was written (its store was enrolled again: the "
                "basis is the same, the limits refitted); its clients keep the old limits: "
                "compress every client again, without --update")
    assert errors == [expected], res["stderr"]
    # as the line says: a compress without --update writes the gallery with the new limits
    assert invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                    "-q"])["exit_code"] == 0
    assert not [ln for ln in invoked(["info", "--gallery", gallery])["stderr"].splitlines()
                if "failure-to-acquire" in ln]


def test_an_update_after_a_new_basis_still_says_the_basis_changed(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=4)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    assert invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                    "-q"])["exit_code"] == 0
    assert invoked(["enroll", faces, "--store", store, "--variance", "0.9",
                    "-q"])["exit_code"] == 0
    res = invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "--update",
                   "-q"])
    assert res["exit_code"] == 2, res["output"]
    assert "the matcher basis changed since the gallery was written; stale clients: " \
        "c00, c01, c02, c03: compress them all again" in res["stderr"], res["stderr"]


def test_enroll_s_help_says_when_enrolling_the_same_folder_again_rewrites_the_store():
    """Its help said 'Re-running on the same folder changes nothing.', false since
    94c6f0f for a store of unrecorded limits (the refit rewrites it)."""
    out = invoked(["enroll", "--help"])["stdout"]
    shown = " ".join(re.sub(r"-\n\s*", "-", out).split())  # click wraps at a hyphen too
    assert "Re-running on the same folder changes nothing, except in a store whose " \
        "failure-to-acquire limits were fitted before stores recorded how (info and " \
        "compress say so): they are fitted again." in shown, shown
