"""The 1:N operating point (the gallery's ``open_set`` record) describes the gallery it
sits in.

Real files: sample_data/faces enrolled as 3 clients (c01-c03) and 5 background people
(c04-c08), compressed; the same images enrolled as 2 clients (c03 a background person:
the same eigenface basis), so that ``compress --update`` from it leaves c03 out.
"""

import json

import h5py
import pytest
from helpers import copied, invoked, rehash_gallery

from ssgallery.datasets import sample_faces_path

FACES = sample_faces_path()
PROBE = min((FACES / "c01").iterdir())
BACKGROUND = "c04,c05,c06,c07,c08"


def _ok(args):
    r = invoked(args)
    assert r["exit_code"] == 0, (args, r["output"])
    return r


@pytest.fixture(scope="module")
def galleries(tmp_path_factory):
    """{"s3", "s2": the stores of 3 and of 2 clients, "g3": the 3 clients compressed
    (--m 2), "folder"}."""
    folder = tmp_path_factory.mktemp("osrec")
    s3, s2, g3 = (str(folder / n) for n in ("s3.h5", "s2.h5", "g3.h5"))
    _ok(["enroll", FACES, "--store", s3, "--clients", "c01,c02,c03", "--background",
         BACKGROUND, "-q"])
    _ok(["enroll", FACES, "--store", s2, "--clients", "c01,c02", "--background",
         "c03," + BACKGROUND, "-q"])
    _ok(["compress", "--store", s3, "-o", g3, "--m", "2", "-q"])
    return {"s3": s3, "s2": s2, "g3": g3, "folder": str(folder)}


def _open_set(gallery):
    """The 1:N record ``info --json`` reads from the gallery."""
    return json.loads(_ok(["info", "--gallery", gallery, "--json"])["stdout"])[
        "gallery"]["open_set"]


def _update(store, gallery, *args):
    """``compress --update`` (--m 2, as the gallery was made): the CLI result."""
    return _ok(["compress", "--store", store, "-o", gallery, "--m", "2", "--update", *args])


def _rehashed(gallery, patch):
    """The gallery's 1:N record changed by ``patch`` (None: a key removed), its digests
    made whole again (what anybody without the signing key can do)."""
    with h5py.File(gallery, "a") as f:
        rec = json.loads(f.attrs["open_set"])
        rec.update(patch)
        f.attrs["open_set"] = json.dumps({k: v for k, v in rec.items() if v is not None})
    rehash_gallery(gallery)


def _refused(args, what):
    res = invoked(args)
    errors = [ln for ln in res["stderr"].splitlines() if "warning" not in ln]
    assert res["exit_code"] == 2, (args, res["output"])
    assert len(errors) == 1 and what in errors[0], (args, res["output"])


def test_a_record_of_another_gallery_is_refused_by_every_reader(galleries):
    """Re-hashed to say 2 clients on the 3-client gallery, the record was read by info
    ('1:N search: ... for 2 clients', exit 0), by identify --open-set --threshold and
    in the closed set, by roc --gallery (its stored point evaluated), and by compress
    --update, which took it for a record pooling clients no longer enrolled and wrote
    a gallery without it (exit 0); only identify --open-set at the recorded point
    refused it ('the index has 3')."""
    gallery = copied(galleries["g3"], galleries["folder"], "other.h5")
    rec = _open_set(gallery)
    readers = [["info", "--gallery", gallery],
               ["identify", PROBE, "--gallery", gallery, "--open-set"],
               ["identify", PROBE, "--gallery", gallery, "--open-set", "--threshold", "3"],
               ["identify", PROBE, "--gallery", gallery],
               ["roc", "--store", galleries["s3"], "--gallery", gallery, "--probes", FACES,
                "-o", f"{galleries['folder']}/report", "--no-plot", "--force"],
               ["compress", "--store", galleries["s3"], "-o", gallery, "--m", "2",
                "--update", "-q"]]
    for clients in (2, 4):
        _rehashed(gallery, {"clients": clients})
        for args in readers:
            _refused(args, f"open_set: a 1:N operating point for {clients} clients in a "
                           "gallery of 3")
    _rehashed(gallery, {"clients": 3})
    assert _open_set(gallery) == rec
