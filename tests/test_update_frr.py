"""compress --update's table: the clients it keeps show the FRR they were compressed
with (each client's ``frr_heldout`` in its provenance; in a gallery written before it,
what the calibration record's ``frr_worst`` names), and the legend says why an FRR is
"—" (session 18 printed "—" for every kept client, though the record knew some)."""

import json

import h5py
from helpers import copied, invoked, rehash_gallery


def _rows(stdout):
    """client -> FRR column of compress's table."""
    lines = stdout.splitlines()
    return {ln.split()[0]: ln.split()[3] for ln in lines[2:lines.index(next(
        ln for ln in lines if ln.startswith("threshold: accept")))]}


def _legend(stdout):
    return next(ln for ln in stdout.splitlines() if ln.startswith("threshold: accept"))


def _update(sample_store, gallery):
    r = invoked(["compress", "--store", sample_store["store"], "-o", gallery, "--m", "2",
                 "--clients", "c04", "--update"])
    assert r["exit_code"] == 0, r["output"]
    return r["stdout"]


def test_update_shows_the_kept_clients_frr(sample_store, sample_gallery_3, tmp_path):
    first = {r["client"]: r["frr"] for r in
             json.loads(sample_gallery_3["compressed"]["stdout"])["clients"]}
    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    out = _update(sample_store, gallery)
    rows = _rows(out)
    assert {c: rows[c] for c in first} == {c: f"{100 * f:.0f}%" for c, f in first.items()}
    assert "FRR —" not in _legend(out)
    with h5py.File(gallery, "r") as f:  # the kept ones keep their record
        assert json.loads(f["clients"]["c01"].attrs["provenance"])["frr_heldout"] == \
            [round(first["c01"] * 10), 10]


def test_a_gallery_without_the_record_shows_what_its_calibration_names(
        sample_store, sample_gallery_3, tmp_path):
    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:  # as every gallery before frr_heldout
        for c in f["clients"]:
            attrs = f["clients"][c].attrs
            attrs["provenance"] = json.dumps({k: v for k, v in json.loads(
                attrs["provenance"]).items() if k != "frr_heldout"})
        cal = json.loads(f.attrs["calibration"])
        worst = {c: frr for c, frr in cal["frr_worst"]}
        cal["frr_worst"] = [[c, frr] for c, frr in cal["frr_worst"] if c != "c02"]
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(gallery)
    out = _update(sample_store, gallery)
    rows = _rows(out)
    assert worst.keys() >= {"c01", "c02"}  # the sample's c01, c02 reject some of theirs
    assert rows["c01"] == f"{100 * worst['c01']:.0f}%" and rows["c02"] == "—"
    assert _legend(out).endswith(
        "; FRR —: kept from a gallery written before it recorded each client's FRR (its "
        "calibration names the few worst): c02; compress them again without --update to "
        "see it")


def test_info_client_says_what_frr_heldout_counts(sample_gallery_3):
    first = {r["client"]: r["frr"] for r in
             json.loads(sample_gallery_3["compressed"]["stdout"])["clients"]}
    r = invoked(["info", "--gallery", sample_gallery_3["gallery"], "--client", "c01"])
    assert r["exit_code"] == 0, r["output"]
    assert f"  frr_heldout: [{round(first['c01'] * 10)}, 10] (its held-out genuine images " \
        "rejected at the threshold, of those held out)" in r["stdout"].splitlines(), r["stdout"]
