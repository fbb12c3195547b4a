"""``compress --update`` copies clients from the existing gallery: without a signing key
their provenance is data like a part's (issue 20). A re-hashed gallery whose client
provenance lacks a number of the summary, or holds a string there, is one line (exit 2,
the gallery unchanged), never exit 4 and never a string printed as it came; so is a
Z-norm whose n or std_source is not what compress writes."""

import json

import h5py
import pytest
from conftest import Workers, clean_error
from helpers import make_faces, rehash_gallery

from ssgallery.app.enroll import enroll

ARGS = ["--m", "1", "--cv-folds", "0", "--max-iter", "5", "-q"]
EDITS = {
    "svm_n_support removed": lambda p: {k: v for k, v in p.items() if k != "svm_n_support"},
    "m a terminal escape": lambda p: dict(p, m="\x1b]0;pwned\x07"),
    "cv_frr a list": lambda p: dict(p, cv_frr=[0.5]),
    "cv_off_scale a terminal escape": lambda p: dict(p, cv_off_scale="\x1b]0;pwned\x07"),
    "frr_heldout a terminal escape": lambda p: dict(p, frr_heldout="\x1b]0;pwned\x07"),
    "frr_heldout more rejected than genuine": lambda p: dict(p, frr_heldout=[11, 10]),
}


def _update_after(tmp_path, edit):
    """Compress clients c00, c01, apply ``edit(open h5py file)`` to the gallery, re-hash
    it (no key) and run ``compress --update`` (c02 to train): the update's result, the
    gallery and its bytes before the update."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=5)
    enroll(faces, tmp_path / "e.h5")
    gallery = tmp_path / "g.h5"
    pool = Workers(timeout=120)
    try:
        first = pool.run(["compress", "--store", tmp_path / "e.h5", "-o", gallery,
                          "--clients", "c00,c01", *ARGS])
        assert first["code"] == 0, first
        with h5py.File(gallery, "a") as f:
            edit(f)
        rehash_gallery(gallery)
        before = gallery.read_bytes()
        r = pool.run(["compress", "--store", tmp_path / "e.h5", "-o", gallery, "--update",
                      *ARGS])
    finally:
        pool.close()
    return r, gallery, before


@pytest.mark.parametrize("edit", EDITS)
def test_update_checks_the_kept_clients_provenance(tmp_path, edit):
    def provenance(f):
        attrs = f["clients"]["c00"].attrs
        attrs["provenance"] = json.dumps(EDITS[edit](json.loads(attrs["provenance"])))

    r, gallery, before = _update_after(tmp_path, provenance)
    assert clean_error(r) and "c00" in r["stderr"] and "provenance" in r["stderr"], r
    assert "\x1b" not in r["stdout"] + r["stderr"] and gallery.read_bytes() == before


NORMALIZATION_EDITS = {"n a string": {"n": "x"}, "n too large for an integer": {"n": 1e400},
                       "std_source a list": {"std_source": ["pooled"]}}


@pytest.mark.parametrize("edit", NORMALIZATION_EDITS)
def test_update_checks_the_kept_clients_normalization(tmp_path, edit):
    """The kept clients' Z-norm is read for its ``n`` and ``std_source`` (whether its
    spread was measured, `ssgallery.biometrics.openset.spread_measured`): one line
    naming the client, the gallery unchanged (before: exit 4, int('x'))."""
    def normalization(f):
        attrs = f["clients"]["c00"].attrs
        norm = json.loads(attrs["normalization"])
        assert norm["kind"] == "znorm" and isinstance(norm["n"], int)
        attrs["normalization"] = json.dumps(dict(norm, **NORMALIZATION_EDITS[edit]))

    r, gallery, before = _update_after(tmp_path, normalization)
    assert clean_error(r) and "c00" in r["stderr"] and "normalization" in r["stderr"], r
    assert gallery.read_bytes() == before


def test_update_never_joins_a_calibration_that_accepts_every_probe(tmp_path):
    """A re-hashed gallery (no key) whose recorded global threshold T is -1e9: the
    clients an update trains are set against it, to thresholds below any score they can
    give. One line naming the gallery, the gallery unchanged (before 9197b4b: written
    with those thresholds)."""
    def accept_all(f):
        calibration = json.loads(f.attrs["calibration"])
        assert calibration["mode"] == "znorm-global"
        f.attrs["calibration"] = json.dumps(dict(calibration, global_threshold=-1e9))

    r, gallery, before = _update_after(tmp_path, accept_all)
    assert clean_error(r) and "accept every probe" in r["stderr"], r
    assert f"{gallery}: " in r["stderr"] and gallery.read_bytes() == before, r
