"""A client id may hold a comma (a folder ``doe, jane``: enroll takes every folder name
that is a client id), yet ``--clients`` and ``--background`` split their value on commas:
such a client was enrolled but could never be named, ``compress --clients 'doe, jane'``
refused 'not an enrolled client: doe, jane (enrolled: ..., doe, jane)'. A comma inside an
id is now written ``\\,`` (no id holds a backslash), by every option that takes a list of
ids, and a refusal of a split id says how to write it."""

import os

import h5py
from helpers import invoked, make_faces

HINT = "a comma inside an id is written '\\,' (e.g. 'doe\\, jane')"


def _faces(tmp_path):
    root = make_faces(str(tmp_path / "faces"), n_clients=6, n_images=6)
    os.rename(os.path.join(root, "c01"), os.path.join(root, "doe, jane"))
    os.rename(os.path.join(root, "c05"), os.path.join(root, "roe, r"))
    return root


def test_split_ids_reads_an_escaped_comma_as_part_of_the_id():
    from ssgallery.formats.hdf5 import split_ids

    assert split_ids("doe\\, jane,c01, c02,,") == ["doe, jane", "c01", "c02"]
    assert split_ids("a,b") == ["a", "b"]
    assert split_ids("a\\,b\\,c") == ["a,b,c"]
    assert split_ids(" , ") == []


def test_enroll_clients_and_background_name_ids_holding_a_comma(tmp_path):
    faces, store = _faces(tmp_path), tmp_path / "e.h5"
    bare = invoked(["enroll", faces, "--store", store, "--clients", "doe, jane,c00",
                    "--background", "c04"])
    assert bare["exit_code"] == 2 and not store.exists()
    assert bare["stderr"] == (f"ssgallery: error: {faces}: no client folder named doe, jane; "
                              f"{HINT}\n")
    out = invoked(["enroll", faces, "--store", store, "-q", "--clients", "doe\\, jane,c00",
                   "--background", "c04,roe\\, r"])
    assert out["exit_code"] == 0, out["output"]
    with h5py.File(store, "r") as f:
        kinds = {str(k.decode() if isinstance(k, bytes) else k)
                 for k in f["labels"][...]}
    assert kinds == {"doe, jane", "c00", "c04", "roe, r"}


def test_compress_clients_names_an_enrolled_id_holding_a_comma(tmp_path):
    faces, store, gallery = _faces(tmp_path), tmp_path / "e.h5", tmp_path / "g.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    bare = invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                    "--clients", "doe, jane"])
    assert bare["exit_code"] == 2 and not gallery.exists()
    assert bare["stderr"].endswith(f"(enrolled: c00, c02, c03, c04, doe, jane, roe, r); "
                                   f"{HINT}\n"), bare["stderr"]
    out = invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "-q",
                   "--clients", "doe\\, jane,c00"])
    assert out["exit_code"] == 0, out["output"]
    probe = os.path.join(faces, "doe, jane", "5.png")
    claim = invoked(["verify", "--gallery", gallery, "--claim", "doe, jane", probe])
    assert claim["exit_code"] in (0, 1) and claim["stdout"].startswith(probe), claim["output"]
    info = invoked(["info", "--gallery", gallery, "--json"])
    assert info["exit_code"] == 0, info["output"]
    assert '"doe, jane"' in info["stdout"] and '"roe, r"' not in info["stdout"]


def test_a_clients_value_naming_no_id_is_refused_as_such(tmp_path):
    """A --clients value that splits to no id ('', ',', ' , ': a script's empty variable,
    a typo) was taken for an empty list: compress said 'the store has no enrolled client
    to compress' of a store of 6 clients, and enroll 'no client folders (expected
    ROOT/<client>/<images>)' of a folder of 6. Both now name the option and its value."""
    faces, store, gallery = _faces(tmp_path), tmp_path / "e.h5", tmp_path / "g.h5"
    for value in ("", ",", " , "):
        out = invoked(["enroll", faces, "--store", store, "--clients", value])
        assert out["exit_code"] == 2 and not store.exists(), out["output"]
        assert out["stderr"] == (f"ssgallery: error: --clients names no client folder: "
                                 f"{value!r}\n")
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    for value in ("", ",", " , "):
        out = invoked(["compress", "--store", store, "-o", gallery, "--m", "1",
                       "--clients", value])
        assert out["exit_code"] == 2 and not gallery.exists(), out["output"]
        assert out["stderr"] == f"ssgallery: error: --clients names no client: {value!r}\n"
