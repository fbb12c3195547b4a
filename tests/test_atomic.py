"""Atomic writes: all or nothing, and one-line errors for bad output paths."""

import os

import pytest

from ssgallery.errors import SsgalleryError
from ssgallery.formats.atomic import atomic_path, check_writable, write_text_atomic


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


def test_output_that_is_a_folder(tmp_path):
    with pytest.raises(SsgalleryError, match="is a folder"):
        check_writable(tmp_path)


def test_cli_unwritable_output_is_one_line(tmp_path, monkeypatch):
    """An output that cannot be written (here: a folder where the PNG should go) is one
    line naming it, exit 2, whichever layer notices."""
    from click.testing import CliRunner

    from ssgallery.cli import main
    from ssgallery.datasets import sample_faces_path

    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(main, ["enroll", str(sample_faces_path()), "--clients",
                                "c01,c02,c03"]).exit_code == 0
    assert runner.invoke(main, ["compress", "--m", "1", "--cv-folds", "0"]).exit_code == 0
    os.mkdir("protos.png")  # `show` cannot replace a folder with its PNG
    result = runner.invoke(main, ["show", "--claim", "c01", "-o", "protos.png"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ssgallery: error: ")
    assert "Traceback" not in result.output and "protos.png" in lines[0]
