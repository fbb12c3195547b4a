"""Score files, montages (``show -o``) and ``synth``'s files are written under the output
lock, as stores, galleries and roc's report files are (54a8145): a second writer of the
same path waits for the lock, then finds an output of another kind and is refused; it is
never told it wrote a file that the first writer's rename then replaces. And ``synth``
replaces its ``attributes.csv`` and ``README.txt`` only when it wrote them (or forced),
never a store or a gallery."""

import glob
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import copied, invoked, make_faces, run_at_rename


def _scores(target):
    from ssgallery.biometrics.scores import read_scores, write_scores

    source = target.parent.parent / "s.txt"
    source.write_text("a a p1 0.9\na b p2 0.1\nb b p3 0.8\nb a p4 0.2\n")
    write_scores(target, read_scores(source))


def _montage(target):
    from ssgallery.images.montage import save_montage

    save_montage(target, np.zeros((2, 12, 10)), np.array([1.0, -0.5]))


def _synth(target):
    from ssgallery.images.synth import write_sample_data

    write_sample_data(target.parent, identities=2, images=2, probes=0)


# writer, the file its rename puts in place (below tmp_path), how that file starts
WRITERS = {"score file": (_scores, "out/scores/svm.r0.txt", b"a a p1 "),
           "montage": (_montage, "out/m.png", b"\x89PNG"),
           "synth": (_synth, "out/attributes.csv", b"path,identity,")}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_second_writer_waits_and_is_refused(writer, tmp_path):
    """On main these writers took no lock: checked writable (nothing there), written to a
    temporary file, renamed. enroll writing a store at that path meanwhile (it takes the
    lock: nobody held it) said it wrote it (exit 0), and the rename then replaced the
    store by a score file, a PNG or a CSV. Now enroll waits for the lock (1 s here) and
    is refused ('another ssgallery run'), exit 2; the writer's file is there. The
    second process is real, started by an audit hook at the rename."""
    write, name, ours = WRITERS[writer]
    target = tmp_path / name
    target.parent.mkdir(parents=True)
    make_faces(tmp_path / "faces", n_clients=3, n_images=5)
    command = [sys.executable, "-m", "ssgallery", "enroll", str(tmp_path / "faces"),
               "--store", str(target), "-q"]
    with run_at_rename(target, command) as results:
        write(target)
    (enrolled,) = results
    replaced = target.read_bytes().startswith(ours)  # the writer's file, not enroll's store
    assert enrolled.returncode != 0 or not replaced, \
        f"enroll said it wrote the store, and the {writer} replaced it"
    assert enrolled.returncode == 2 and "another ssgallery run" in enrolled.stderr, \
        enrolled.stderr


def test_score_lock_files_are_never_read_as_score_files(tmp_path):
    """The locks are hidden (``.svm.r0.txt.lock``): ``roc --scores out/scores/*``, the
    glob its help suggests, names the score file and its side-car only; a listing of
    the whole folder (``ls -A``, ``find -type f``) names the locks too, and
    read_score_files skips the lock of a file given, as it skips its side-car."""
    from ssgallery.biometrics.scores import read_score_files

    target = tmp_path / "out" / "scores" / "svm.r0.txt"
    target.parent.mkdir(parents=True)
    _scores(target)
    folder = target.parent
    listing = [str(folder / n) for n in sorted(os.listdir(folder))]
    assert [os.path.basename(p) for p in listing] == [
        ".svm.r0.txt.json.lock", ".svm.r0.txt.lock", "svm.r0.txt", "svm.r0.txt.json"]
    assert sorted(glob.glob(str(folder / "*"))) == [str(target), f"{target}.json"]
    (table,) = read_score_files(listing)
    assert table.method == "s" and len(table.score) == 4  # the side-car of s.txt's table


@pytest.mark.parametrize("name", ["attributes.csv", "README.txt"])
def test_synth_never_replaces_a_gallery_beside_its_folders(name, tmp_path,
                                                           sample_gallery_3):
    """synth wrote attributes.csv and README.txt with no kind: any regular file there was
    replaced, a gallery too (main: exit 0, the gallery gone). Now refused before
    anything is drawn, even with --force: one line, exit 2, the gallery kept."""
    out = tmp_path / "set"
    out.mkdir()
    gallery = Path(copied(sample_gallery_3["gallery"], out, name))
    before = gallery.read_bytes()
    for force in ([], ["--force"]):
        res = invoked(["synth", out, "--identities", "2", "--images", "2", "--probes", "0",
                       *force])
        assert res["exit_code"] == 2, res["output"]
        assert res["stderr"] == (f"ssgallery: error: {gallery}: an ssgallery gallery, not an "
                                 "output of this kind; refusing to replace it, even forced "
                                 "(choose another name)\n")
    assert gallery.read_bytes() == before
    assert not (out / "faces").exists()
