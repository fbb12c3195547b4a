"""The 1:N operating point (the gallery's ``open_set`` record) describes the gallery it
sits in, and ``compress --update`` keeps it only as far as it stays true.

Real files: sample_data/faces enrolled as 3 clients (c01-c03) and 5 background people
(c04-c08), compressed; the same images enrolled as 2 clients (c03 a background person:
the same eigenface basis), so that ``compress --update`` from it leaves c03 out.
"""

import json

import h5py
import pytest
from helpers import copied, invoked, refused, rehash_gallery

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
            refused(args, f"open_set: a 1:N operating point for {clients} clients in a "
                          "gallery of 3")
    # a point measured on some clients names them: a client the gallery does not hold,
    # or names that do not match their count, are refused too
    foreign = ("open_set: a 1:N operating point measured on client 'c09', which the "
               "gallery does not hold")
    for patch, what in (({"measured_clients": 1, "measured": ["c09"]}, foreign),
                        ({"measured_clients": 2, "measured": ["c01"]},
                         "corrupt gallery header: open_set"),
                        ({"measured_clients": 2, "measured": ["c01", "c01"]},
                         "corrupt gallery header: open_set"),
                        ({"measured": ["c01"]}, "corrupt gallery header: open_set"),
                        # clients with training searches: 1 to the clients measured
                        ({"training_clients": 4}, "corrupt gallery header: open_set"),
                        ({"training_clients": 0}, "corrupt gallery header: open_set"),
                        ({"training_clients": "2"}, "corrupt gallery header: open_set")):
        _rehashed(gallery, {"clients": 3, "measured_clients": None, "training_clients": None,
                            **patch})
        for args in readers[:2]:
            refused(args, what)
    _rehashed(gallery, {"measured_clients": 2, "measured": ["c01", "c02"],
                        "training_clients": None})
    assert _open_set(gallery)["measured"] == ["c01", "c02"]
    _rehashed(gallery, {"measured_clients": None, "measured": None, "training_clients": 3})
    assert _open_set(gallery)["training_clients"] == 3
    _rehashed(gallery, {"training_clients": None})
    assert _open_set(gallery) == rec


LEFT_OUT = ("the gallery's 1:N operating point pooled the held-out searches of clients "
            "this update left out (no longer enrolled), which cannot be taken apart, and "
            "this update trained no client to measure one: none recorded")
WHY_NONE = ("or by an update that trained no client, of a gallery that recorded none or "
            "whose point pooled the held-out searches of clients the update left out")


def test_an_update_that_only_leaves_clients_out_says_why_it_records_no_point(galleries):
    """The 3 clients' curve pools c03's held-out searches, which cannot be taken out:
    an update from the 2-client store (c03 left out, nothing trained) records no point,
    and says why in its warning, in its summary and in identify --open-set's refusal.
    Before, the warning blamed 'none, or one that pooled clients no longer enrolled',
    and the summary and identify said the gallery was compressed before --target-fpir
    or 'updated from such a gallery without training a client'."""
    gallery = copied(galleries["g3"], galleries["folder"], "dropped.h5")
    r = _update(galleries["s2"], gallery)
    warned = [ln for ln in r["stderr"].splitlines() if "1:N operating point" in ln]
    assert len(warned) == 1 and LEFT_OUT in warned[0], r["stderr"]
    assert WHY_NONE in r["stdout"]
    assert _open_set(gallery) is None
    assert WHY_NONE in _ok(["info", "--gallery", gallery])["stdout"]
    res = invoked(["identify", PROBE, "--gallery", gallery, "--open-set"])
    assert res["exit_code"] == 2 and WHY_NONE in res["stderr"], res["output"]
    again = copied(galleries["g3"], galleries["folder"], "dropped2.h5")
    s = json.loads(_update(galleries["s2"], again, "--json")["stdout"])
    assert s["trained"] == [] and s["kept"] == ["c01", "c02"]
    assert s["open_set"] is None and s["open_set_dropped"] is True


def test_successive_updates_keep_what_the_curve_still_measures(galleries):
    """add, retrain, leave out: the record names the clients it was measured on
    (``measured``), so an update discards the curve only when it pooled a client the
    update trains again or leaves out. c01, then c02, then c03 trained again (--seed 5):
    measured on c01, then on c01 and c02, then on all 3 (a point measured on every
    client again). Before, each update discarded the last one's measurement: measured
    on c01, then c02 alone, then c03 alone. Then c03 (not measured) left out: the
    point is kept, read for 2 clients (before: none recorded)."""
    gallery = copied(galleries["g3"], galleries["folder"], "successive.h5")
    seen = []
    for client in ("c01", "c02"):
        _update(galleries["s3"], gallery, "--clients", client, "--seed", "5", "-q")
        rec = _open_set(gallery)
        seen.append((rec["measured_clients"], rec["measured"], rec["searches_inseparable"]))
    assert seen == [(1, ["c01"], True), (2, ["c01", "c02"], True)]
    assert rec["clients"] == 3 and rec["blocks"] == 2
    partial = copied(gallery, galleries["folder"], "partial.h5")
    _update(galleries["s3"], gallery, "--clients", "c03", "--seed", "5", "-q")
    rec = _open_set(gallery)
    assert rec["clients"] == 3 and rec["blocks"] == 3
    assert not {"measured_clients", "measured", "searches_inseparable"} & set(rec)
    assert "measured on" not in _ok(["info", "--gallery", gallery])["stdout"]
    # measured on c01 and c02: leaving out c03 (trained with --seed 0) keeps the point
    r = _update(galleries["s2"], partial, "--seed", "5", "--json")
    s = json.loads(r["stdout"])
    assert s["trained"] == [] and s["kept"] == ["c01", "c02"]
    kept = _open_set(partial)
    assert kept["clients"] == 2 and not {"measured_clients", "measured"} & set(kept)
    assert kept["searches"] == rec["searches"] - 70 == 140  # c01's and c02's searches
