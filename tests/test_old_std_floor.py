"""A gallery compressed before 2e8eaa3 (2026-11-26) with a client whose held-out impostor
scores had no spread (``--max-impostors 1``: one score) carries that client's Z-norm std
at the 1e-12 floor compress wrote then. Every reader refuses it since (its normalised
scores reach 1e12), which stays; but the refusal said 'weights far beyond its impostor
scores' spread, which compress never writes': false for that file (compress wrote it) and
no remedy named. The line now says where such a std comes from and what to do.

The file is this version's gallery with client c01's Z-norm as 4ea65a9 (2e8eaa3^, the last
compress that wrote the floor) wrote it: ``{"kind": "znorm", "mean": M, "n": 1, "std":
1e-12}`` and the search index's row at 1e-12, re-hashed (no key). It used to be written
by 4ea65a9's own code from ``git archive``, which errors outside a git checkout (a tree
exported with ``git archive main``); 4ea65a9's file gives the same refusal lines (its span
2.29: other prototypes)."""

import json

import h5py
from helpers import invoked, rehash_gallery

from ssgallery.datasets import sample_faces_path

FACES = sample_faces_path()
WHY = ("1e-12 below 1e-06 of its score span{}: the floor ssgallery wrote before 2026-11-26 "
       "(2e8eaa3) for a client whose held-out impostor scores had no spread (e.g. "
       "--max-impostors 1), which would put its normalised scores near 1e12: compress again "
       "with this version (every client: --update refuses it too)\n")


def _floored(gallery, client):
    """``client``'s Z-norm std at the 1e-12 floor, in its group and in the search index,
    as compress wrote it before 2e8eaa3 (no ``std_source``), the gallery re-hashed."""
    with h5py.File(gallery, "a") as f:
        attrs = f["clients"][client].attrs
        norm = json.loads(attrs["normalization"])
        attrs["normalization"] = json.dumps({"kind": "znorm", "mean": norm["mean"],
                                             "n": norm["n"], "std": 1e-12})
        ids = [i.decode() for i in f["index"]["client_ids"][()]]
        f["index"]["norm_std"][ids.index(client)] = 1e-12
    rehash_gallery(gallery)


def test_an_old_floored_std_is_refused_with_its_cause_and_its_remedy(tmp_path):
    store, gallery = tmp_path / "st.h5", tmp_path / "o.h5"
    for args in (["enroll", FACES, "--store", store, "--clients", "c01,c02,c03,c04",
                  "--background", "c05,c06,c07,c08,c09,c10", "-q"],
                 ["compress", "--store", store, "--max-impostors", "1", "--m", "5", "-o",
                  gallery, "-q"]):
        assert invoked(args)["exit_code"] == 0, args
    _floored(gallery, "c01")
    probe = FACES / "c01" / "10.png"
    record = f"ssgallery: error: {gallery}: refused: client 'c01' has a Z-norm std "
    row = (f"ssgallery: error: {gallery}: refused: the search index's row of client 'c01' "
           "has a Z-norm std ")
    for args, head, span in (
            (["verify", "--gallery", gallery, "--claim", "c01", probe], record, " 2.21"),
            (["info", "--gallery", gallery], row, ""),
            (["identify", "--gallery", gallery, probe], row, ""),
            (["compress", "--store", store, "-o", gallery, "--update", "--max-impostors", "1",
              "--m", "5", "-q"], record, " 2.21")):
        out = invoked(args)
        assert out["exit_code"] == 2, (args, out["output"])
        assert out["stderr"] == head + WHY.format(span), (args, out["stderr"])
    again = invoked(["compress", "--store", store, "-o", gallery, "--max-impostors", "1",
                     "--m", "5", "-q"])  # the remedy named
    assert again["exit_code"] == 0, again["output"]
    claim = invoked(["verify", "--gallery", gallery, "--claim", "c01", probe])
    assert claim["exit_code"] == 0 and "ACCEPT" in claim["stdout"], claim["output"]
