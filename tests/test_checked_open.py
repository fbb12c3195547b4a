"""A store or gallery is read from the open that was checked: its seal is checked on the
descriptor HDF5 then reads, and what ``info`` reports of the file (its size) comes from
that open, never from the path again (ssgallery.formats.hdf5.open_checked)."""

import contextlib
import os
import shutil
import sys

import h5py
import numpy as np
import pytest
from helpers import make_faces, opens_of

from ssgallery.app.enroll import enroll
from ssgallery.errors import FormatError
from ssgallery.formats import integrity
from ssgallery.formats.gallery import gallery_summary
from ssgallery.formats.store import load_store, store_summary


@contextlib.contextmanager
def swapped_after_open(path, other, at):
    """Put ``other`` at ``path`` (``os.replace``: a real file written there) at the first
    call of ``at`` (a function: ``os.stat``, or h5py's ``File.__init__``) made after
    ``path`` has been opened by Python (counted by `helpers.opens_of`'s audit hook);
    a profile hook (``sys.setprofile``) sees the call, no code of ssgallery is replaced.
    Yields a dict whose ``swapped`` says whether it happened."""
    state = {"swapped": False}
    code = getattr(at, "__code__", None)

    def hook(frame, event, arg):
        hit = (event == "c_call" and arg is at) or (
            event == "call" and code is not None and frame.f_code is code)
        if hit and seen["opens"] and not state["swapped"]:
            os.replace(other, path)
            state["swapped"] = True

    with opens_of(path) as seen:
        sys.setprofile(hook)
        try:
            yield state
        finally:
            sys.setprofile(None)


@pytest.fixture
def files(tmp_path):
    """An enrolled store and a compressed gallery (library calls)."""
    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressOptions, CompressRun

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=6, seed=1)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(faces, store)
    compress(store, gallery, CompressOptions(m=1, cv_folds=0), CompressRun())
    return store, gallery


def test_info_reports_the_size_of_the_file_it_read(files, tmp_path):
    """info's file_bytes was os.path.getsize(path) after the checked read had closed: a
    file written at the path in between (here the gallery where the store was, and the
    reverse) had its size reported as the checked file's. Now the size is the checked
    open's (fstat of the descriptor HDF5 read)."""
    store, gallery = files
    keep = {p: tmp_path / f"keep-{p.name}" for p in (store, gallery)}
    for p, copy in keep.items():
        shutil.copy(p, copy)
    sizes = {p: p.stat().st_size for p in keep}
    assert sizes[store] != sizes[gallery]
    for path, other, summary in ((gallery, store, gallery_summary),
                                 (store, gallery, store_summary)):
        shutil.copy(keep[other], tmp_path / "spare.h5")
        with swapped_after_open(path, tmp_path / "spare.h5", os.stat) as swap:
            found = summary(path)
        shutil.copy(keep[path], path)
        assert found["file_bytes"] == sizes[path], (path, swap)


def test_hdf5_reads_the_bytes_whose_seal_was_checked(files, tmp_path):
    """load_store and read_gallery checked the seal of the file the path named, then HDF5
    opened the path again: a file put there between the two (its rows edited and its
    digest made to match, but not re-sealed: load_store alone refuses it, 'do not match
    its seal') was read as the checked store, its edited pixels used. Now HDF5 reads the
    descriptor whose seal was checked: the rows are the checked store's."""
    store, _ = files
    before = load_store(store).images
    edited = tmp_path / "edited.h5"
    shutil.copy(store, edited)
    with h5py.File(edited, "a") as f:  # the seal is left as it was: stale
        f["images"][0] = 255 - f["images"][0]
        f.attrs["digest"] = integrity.node_digest(f, exclude=integrity.ROOT_EXCLUDED)
    with pytest.raises(FormatError, match="do not match its seal"):
        load_store(edited)
    with swapped_after_open(store, edited, h5py.File.__init__) as swap:
        read = load_store(store)
    assert swap["swapped"]
    np.testing.assert_array_equal(read.images, before)
