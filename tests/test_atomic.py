"""Atomic writes: all or nothing, and one-line errors for bad output paths."""

import os

import pytest

from ssgallery.atomic import atomic_path, check_writable, write_text_atomic
from ssgallery.errors import SsgalleryError


def test_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    write_text_atomic(target, "first")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        with open(tmp, "w") as handle:
            handle.write("half")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "first"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # no temporary file left


def test_interrupt_leaves_no_file(tmp_path):
    target = tmp_path / "g.h5"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        open(tmp, "wb").close()
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_missing_folder_is_one_line_error(tmp_path):
    target = tmp_path / "nope" / "g.h5"
    with pytest.raises(SsgalleryError, match="nope: folder does not exist"):
        check_writable(target)
    with pytest.raises(SsgalleryError, match=r"nope: cannot write g\.h5 here"):
        write_text_atomic(target, "x")
