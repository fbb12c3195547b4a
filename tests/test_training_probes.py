"""`roc --gallery G --probes DIR` on the gallery's own training images: its models were
fitted to those very images, so every figure is optimistic.

Before: no word of it (sample_gallery_3 on sample_data/faces, the folder it was enrolled
from: exit 0, stderr empty). The gallery's header names its store and the store records
its images' sha256: roc now says how many probes are such images, in one line, as info
says when a gallery was not compressed from the store beside it.
"""

import shutil

from helpers import invoked

from ssgallery.datasets import sample_faces_path
from ssgallery.formats.gallery import read_gallery

WARNED = "were trained on"


def _roc(gallery, probes, out):
    res = invoked(["roc", "--gallery", gallery, "--probes", probes, "-o", out])
    assert res["exit_code"] == 0, res["output"]
    return [ln for ln in res["stderr"].splitlines() if WARNED in ln]


def test_roc_on_the_enrolled_images_says_the_figures_are_optimistic(sample_gallery_3,
                                                                    sample_store, tmp_path):
    gallery, faces = sample_gallery_3["gallery"], sample_faces_path()
    lines = _roc(gallery, faces, tmp_path / "r")
    expected = (f"ssgallery: warning: 200 of 200 probes in {faces} are images {gallery}'s "
                "models were trained on (the same bytes as their training images in "
                f"{sample_store['store']}, the store it was compressed from): its models were "
                "fitted to these very images, so the figures are optimistic; evaluate on "
                "images that were not enrolled")
    assert lines == [expected], lines
    # images that were never enrolled: nothing to say
    probes = tmp_path / "probes"
    for client in ("c01", "c02", "c03"):
        (probes / client).mkdir(parents=True)
        for p in (faces.parent / "probes").glob(f"{client}_genuine_*.png"):
            shutil.copy(p, probes / client / p.name)
    assert _roc(gallery, probes, tmp_path / "r2") == []


def test_a_gallery_whose_store_is_gone_is_not_checked(tmp_path):
    faces = tmp_path / "faces"
    for client in ("c01", "c02", "c03"):
        (faces / client).mkdir(parents=True)
        for p in sorted((sample_faces_path() / client).iterdir())[:4]:
            shutil.copy(p, faces / client / p.name)
    assert invoked(["enroll", faces, "--store", tmp_path / "e.h5", "-q"])["exit_code"] == 0
    assert invoked(["compress", "--store", tmp_path / "e.h5", "-o", tmp_path / "g.h5",
                    "--m", "1", "-q"])["exit_code"] == 0
    assert len(_roc(tmp_path / "g.h5", faces, tmp_path / "r")) == 1
    (tmp_path / "e.h5").unlink()  # the training host's store is not on this host
    assert _roc(tmp_path / "g.h5", faces, tmp_path / "r2") == []


def test_only_the_images_the_models_trained_on_are_counted(tmp_path):
    """The count was of every image of the store (d6d92bb): c01 alone compressed
    (--clients) from a store of 4 people with --max-impostors 5 trains on its 10 images and
    5 impostor images, yet roc on the 40 enrolled images said '40 of 40'; the 25 the cap
    left out were never a training image of the gallery. And clients an --update kept from
    an earlier version of the store (enroll --add since): their rows in this one cannot be
    told, and the line says they are not counted."""
    faces = tmp_path / "faces"
    faces.mkdir()
    for client in ("c01", "c02", "c03", "c04"):
        (faces / client).symlink_to(sample_faces_path() / client)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    compress = ["compress", "--store", store, "-o", gallery, "--m", "1", "--max-impostors",
                "5", "--seed", "3", "-q"]
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    assert invoked([*compress, "--clients", "c01"])["exit_code"] == 0
    p = read_gallery(gallery).clients["c01"].provenance
    assert p["impostors_capped"] and p["n_genuine"] + p["n_impostor"] == 15
    lines = _roc(gallery, faces, tmp_path / "r")
    assert len(lines) == 1 and lines[0].startswith(
        f"ssgallery: warning: 15 of 40 probes in {faces} are images {gallery}'s models were "
        f"trained on (the same bytes as their training images in {store}, the store it was "
        "compressed from): "), lines
    (faces / "c05").symlink_to(sample_faces_path() / "c05")
    assert invoked(["enroll", faces, "--store", store, "--add", "-q"])["exit_code"] == 0
    assert invoked([*compress, "--clients", "c01,c05", "--update"])["exit_code"] == 0
    lines = _roc(gallery, faces, tmp_path / "r2")
    assert len(lines) == 1 and lines[0].startswith(
        f"ssgallery: warning: 15 of 50 probes in {faces} are images {gallery}'s models were "
        f"trained on (the same bytes as their training images in {store}, the store it was "
        "compressed from; not counted: the training images of 1 client, which cannot be "
        "told (trained on an earlier version of the store, "), lines


def test_enrolled_images_no_model_trained_on_are_named_as_the_basis_s(tmp_path):
    """An image of the store that no model trained on is still one the eigenface basis
    was fitted on (enroll fits it on every stored image), and such images score unlike
    new ones (docs/benchmarks/frr_heldout.md). roc said nothing of them (690e43d counts
    the training images only): c01 compressed with --max-impostors 2 from a store of 4
    people trains on one image of 2 of the 3 others, and a probe folder of the third
    one's 10 images (and 10 never enrolled) drew no word. Now the line names them, and their count beside the
    training images'."""
    import shutil

    faces = tmp_path / "faces"
    faces.mkdir()
    for client in ("c01", "c02", "c03", "c04"):
        (faces / client).symlink_to(sample_faces_path() / client)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    assert invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "--clients",
                    "c01", "--max-impostors", "2", "-q"])["exit_code"] == 0
    lines = _roc(gallery, faces, tmp_path / "r")
    assert len(lines) == 1 and (
        f"12 of 40 probes in {faces} are images {gallery}'s models were trained on ") in \
        lines[0] and ("so the figures are optimistic; 28 more are images the eigenface "
                      f"basis of {gallery} was fitted on, which score unlike new images") \
        in lines[0], lines
    said = []
    for other in ("c02", "c03", "c04"):  # its images, claimed as c01's
        probes = tmp_path / f"as_c01_{other}"
        shutil.copytree(sample_faces_path() / other, probes / "c01")
        shutil.copytree(sample_faces_path() / "c05", probes / "c05")  # never enrolled
        res = invoked(["roc", "--gallery", gallery, "--probes", probes, "-o",
                       tmp_path / f"r_{other}"])
        assert res["exit_code"] == 0, res["output"]
        said += [ln for ln in res["stderr"].splitlines() if "of 20 probes" in ln]
    unsampled = [ln for ln in said if ln.startswith("ssgallery: warning: 10 of 20 probes")]
    assert len(said) == 3 and len(unsampled) == 1, said
    assert (f"are images the eigenface basis of {gallery} was fitted on (the same bytes as "
            f"images of {store}, the store it was compressed from; no model of it trained "
            "on them), which score unlike new images") in unsampled[0], unsampled
