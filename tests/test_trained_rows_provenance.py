"""`roc --gallery`'s training-probes line reads each client's provenance to redraw the
rows it trained on (`ssgallery.app.training_sets.trained_rows`, 690e43d). A provenance is
data from the gallery file: an unsigned gallery edited (its digests made to match, as
anybody who can write it can) to hold a count of the wrong type made roc stop with an
internal error (exit 4: ``TypeError: '<=' not supported between instances of 'int' and
'str'`` for ``max_impostors: "x"``, a slice of 5.5, ``n_genuine: "10"`` added to an int).
Such a client's rows cannot be told: it is named as not counted, as one kept from an
earlier store is, and roc goes on (exit 0).
"""

import json

import h5py
import pytest
from helpers import invoked, rehash_gallery

from ssgallery.datasets import sample_faces_path

WARNED = "were trained on"
EDITS = {
    "max_impostors-text": {"max_impostors": "x"},
    "max_impostors-fraction": {"max_impostors": 5.5},
    "max_impostors-negative": {"max_impostors": -3},
    "n_genuine-text": {"n_genuine": "10"},
    "n_impostor-list": {"n_impostor": [5]},
    "impostors-list": {"impostors": ["cohort"]},
    "impostors_capped-text": {"impostors_capped": "yes"},
}


@pytest.fixture(scope="module")
def capped_gallery(tmp_path_factory):
    """c01 and c02 of four sample people, each trained on its 10 images and a sample of 5
    impostor images (--max-impostors 5)."""
    root = tmp_path_factory.mktemp("capped")
    faces = root / "faces"
    faces.mkdir()
    for client in ("c01", "c02", "c03", "c04"):
        (faces / client).symlink_to(sample_faces_path() / client)
    store, gallery = root / "e.h5", root / "g.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    assert invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                    "--max-impostors", "5", "--clients", "c01,c02", "-q"])["exit_code"] == 0
    return {"faces": faces, "store": store, "gallery": gallery}


def _roc_lines(gallery, faces, out):
    res = invoked(["roc", "--gallery", gallery, "--probes", faces, "-o", out])
    assert res["exit_code"] == 0, res["output"]
    return [ln for ln in res["stderr"].splitlines() if WARNED in ln]


def test_the_unedited_gallery_counts_both_clients(capped_gallery, tmp_path):
    lines = _roc_lines(capped_gallery["gallery"], capped_gallery["faces"], tmp_path / "r")
    assert len(lines) == 1 and "not counted" not in lines[0], lines


@pytest.mark.parametrize("edit", EDITS.values(), ids=list(EDITS))
def test_a_provenance_of_wrong_values_is_a_client_not_counted(capped_gallery, tmp_path,
                                                              edit):
    gallery = tmp_path / "g.h5"
    gallery.write_bytes(capped_gallery["gallery"].read_bytes())
    with h5py.File(gallery, "a") as f:
        group = f["clients/c01"]
        provenance = json.loads(group.attrs["provenance"])
        provenance.update(edit)
        group.attrs["provenance"] = json.dumps(provenance)
    rehash_gallery(gallery)
    lines = _roc_lines(gallery, capped_gallery["faces"], tmp_path / "r")
    assert len(lines) == 1, lines
    assert "not counted: the training images of 1 client, which cannot be told (" in lines[0]
    assert "or a provenance that does not record them)" in lines[0], lines
