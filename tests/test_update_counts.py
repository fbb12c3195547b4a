"""``compress --update`` counts each client once in the gallery's calibration record.

The record pools every client's held-out scores into its FAR and FRR counts with no
per-client share; an update that trains again a client the record counted (or leaves one
out) cannot take that client's old scores out, so it records the counts as unknown
(``counts_unknown``) instead of adding the client's new scores to its old ones. An
update that only adds clients merges as before.

So for the 1:N operating point (the ``open_set`` record): its curve pools every client's
held-out searches, so an update that trains clients again (or leaves some out) sets it
from the held-out searches of the clients it trains only, taken as typical of all
(``measured_clients``, ``searches_inseparable``), never the old searches with the new
ones; an update that only adds clients merges the curves as before."""

import json
from pathlib import Path

from helpers import copied, growing_faces, invoked, refused, rehash_gallery

from ssgallery.datasets import sample_faces_path
from ssgallery.formats.gallery import read_gallery


def _ok(args):
    r = invoked(args)
    assert r["exit_code"] == 0, r["output"]
    return r


def _recorded(gallery):
    """The calibration record ``info --json`` reads from the gallery."""
    return json.loads(_ok(["info", "--gallery", gallery, "--json"])["stdout"])[
        "gallery"]["calibration"]


def _open_set(gallery):
    """The 1:N operating point ``info --json`` reads from the gallery."""
    return json.loads(_ok(["info", "--gallery", gallery, "--json"])["stdout"])[
        "gallery"]["open_set"]


def _training(gallery):
    """The gallery's clients whose thresholds were set on training scores (provenance)."""
    return sorted(c for c, m in read_gallery(gallery).clients.items()
                  if m.provenance.get("threshold_folds") == 0)


NOT_KNOWN = ("expected FAR and FRR not known: an update trained again (or left out) some "
             "of the clients the gallery's counts pooled")


def _assert_unknown(cal, n_clients, training):
    for key in ("accepted", "impostors", "expected_far", "expected_far_ci", "rejected",
                "genuine", "expected_frr", "expected_frr_ci", "frr_high_clients",
                "unresolved"):
        assert cal[key] is None, (key, cal[key])
    assert cal.get("counts_unknown") is True and cal["clients"] == n_clients
    assert cal["frr_worst"] == [] and cal["training_clients"] == training


def test_an_update_that_retrains_clients_records_unknown_counts_not_twice(sample_store,
                                                                          tmp_path):
    """review9's reproduction: sample_data (20 clients), compress --max-impostors 1, then
    compress --update --clients c01,c02 --seed 5 (other options: c01 and c02 trained
    again, with the default impostors, held out). Before: 'the target FAR (1%) cannot
    be estimated for 20 of 20 clients' (22 of 20 when the update kept --max-impostors 1),
    '175 of 400 training impostor scores' (20 + 380: c01's and c02's old score counted
    with their new ones) and '0 of 220 training genuine' (200 + 20), training_clients
    20 of which 2 no longer are."""
    store, gallery = sample_store["store"], str(tmp_path / "g.h5")
    _ok(["compress", "--store", store, "-o", gallery, "--max-impostors", "1", "--json"])
    r = _ok(["compress", "--store", store, "-o", gallery, "--update", "--clients", "c01,c02",
             "--seed", "5"])
    training = _training(gallery)
    assert len(training) == 18 and "c01" not in training and "c02" not in training
    assert NOT_KNOWN in r["stdout"] and "compress every client again without --update" \
        in r["stdout"]
    assert "cannot be estimated for" not in r["stderr"]
    assert " of 400 " not in r["stdout"] and " of 220 " not in r["stdout"]
    cal = _recorded(gallery)
    _assert_unknown(cal, 20, 18)
    info = _ok(["info", "--gallery", gallery])
    assert NOT_KNOWN in info["stdout"] and "cannot be estimated for" not in info["stderr"]
    # review9's exact case (the update keeps --max-impostors 1: every client on training
    # scores); before: 'cannot be estimated for 22 of 20 clients', 0 of 22 impostor scores
    again = str(tmp_path / "again.h5")
    args = ["compress", "--store", store, "-o", again, "--max-impostors", "1"]
    _ok(args)
    r = _ok([*args, "--update", "--clients", "c01,c02", "--seed", "5", "--json"])
    _assert_unknown(json.loads(r["stdout"])["calibration"], 20, 20)
    assert _recorded(again) == json.loads(r["stdout"])["calibration"]
    # an update that trains nothing keeps them unknown (the record says so)
    r = _ok([*args, "--update", "--clients", "c01,c02", "--seed", "5", "--json"])
    s = json.loads(r["stdout"])
    assert s["trained"] == [] and len(s["kept"]) == 20
    _assert_unknown(s["calibration"], 20, 20)


def test_default_options_update_retraining_one_client(sample_gallery_3, sample_store,
                                                      tmp_path):
    """Default options (held-out scores, no --max-impostors): c01 of the 3-client gallery
    trained again by --seed 5. Before: its 190 held-out impostor and 10 genuine scores
    were counted twice (760 impostors, 40 genuine for 3 clients of 190 and 10)."""
    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    first = _recorded(gallery)
    assert first["impostors"] == 570 and first["genuine"] == 30
    r = _ok(["compress", "--store", sample_store["store"], "-o", gallery, "--update",
             "--m", "2", "--clients", "c01", "--seed", "5", "--json"])
    s = json.loads(r["stdout"])
    assert s["trained"] == ["c01"] and s["kept"] == ["c02", "c03"]
    _assert_unknown(s["calibration"], 3, 0)
    assert s["calibration"]["global_threshold"] == first["global_threshold"]
    point = s["open_set"]  # c01's new searches only, taken as typical of the 3
    assert point["measured_clients"] == 1 and point["clients"] == 3 and point["blocks"] == 1
    assert point["searches_inseparable"] is True
    assert _open_set(gallery)["threshold"] == point["threshold"]


def test_an_update_that_only_adds_clients_merges_the_counts(tmp_path):
    """enroll --add two clients, compress --update trains only them: the record keeps the
    first 6 clients' counts and adds the new clients' held-out scores (one score per
    held-out image: their ``n_impostor`` and ``n_genuine``), at the gallery's T."""
    add = growing_faces(str(tmp_path))
    store, gallery = str(tmp_path / "e.h5"), str(tmp_path / "g.h5")
    faces = str(tmp_path / "faces")
    _ok(["enroll", faces, "--store", store])
    args = ["compress", "--store", store, "-o", gallery, "--m", "1", "--cv-folds", "2"]
    first = json.loads(_ok([*args, "--json"])["stdout"])["calibration"]
    add()
    point = _open_set(gallery)
    _ok(["enroll", faces, "--store", store, "--add"])
    s = json.loads(_ok([*args, "--update", "--json"])["stdout"])
    grown = s["open_set"]  # the 6 clients' curve merged with the 2 new ones' searches
    assert grown["clients"] == 8 and grown["blocks"] == 2
    assert grown["searches"] > point["searches"] and grown["scale"] == point["scale"]
    assert "measured_clients" not in grown and "searches_inseparable" not in grown
    assert s["trained"] == ["c06", "c07"] and len(s["kept"]) == 6
    cal = s["calibration"]
    new = [read_gallery(gallery).clients[c].provenance for c in ("c06", "c07")]
    assert "counts_unknown" not in cal and cal["clients"] == 8
    assert cal["impostors"] == first["impostors"] + sum(p["n_impostor"] for p in new)
    assert cal["genuine"] == first["genuine"] + sum(p["n_genuine"] for p in new)
    assert cal["accepted"] >= first["accepted"] and cal["rejected"] >= first["rejected"]
    assert cal["global_threshold"] == first["global_threshold"]
    assert cal["training_clients"] == first["training_clients"] == 0
    line = _ok(["info", "--gallery", gallery])["stdout"]
    assert (f"{cal['accepted']} of {cal['impostors']} held-out impostor scores"
            in line) and f"{cal['rejected']} of {cal['genuine']} held-out genuine" in line
    from ssgallery.tables import counted

    # the kept clients' searches covered more clients than the new run's: the line gives
    # the smallest and says so (it read as if every search covered that few)
    assert point["search_size"] > grown["search_size"] == 1
    assert (f"{grown['searches']} held-out searches of 1 client or more in 2 runs merged by "
            "--update)") in line and "measured on" not in line
    # the intervals by cluster: the update adds the new clients' people and clients to
    # the copied record's (ssgallery.biometrics.intervals), and info says so
    assert cal["far_by_person"]["sums"]["n"] == cal["impostors"]
    assert cal["far_by_person"]["sums"]["k"] == cal["accepted"]
    assert cal["frr_by_client"]["sums"]["clusters"] == 8
    assert cal["frr_by_client"]["sums"]["n"] == cal["genuine"]
    assert "by impostor person: " in line and "by client: 8 clients, design effect" in line
    assert grown["curve"]["interval_people"] >= 1  # (T on the tail here: its interval)
    from ssgallery.cli.operating import open_set_line

    measured = grown | {"extrapolated": False}  # the line of a point on the searches
    assert (f"% by probe person: {counted(grown['curve']['interval_people'], 'person', 'people')}"
            f"; {grown['searches']} held-out searches") in open_set_line(measured)
    old = measured | {"curve": {k: v for k, v in grown["curve"].items()
                                if k != "interval_people"}}  # a record written before
    assert "in 2 runs merged by --update, counted as independent)" in open_set_line(old)


SEARCHES_POOLED = ("measured on 2 of the 20 clients (the others' held-out searches were "
                   "pooled with those of clients an update trained again or left out, which "
                   "cannot be taken apart)")


def test_an_update_that_retrains_clients_measures_the_1n_point_on_them_only(sample_store,
                                                                            tmp_path):
    """The 1:N reproduction: sample_data (20 clients, 200 images), compress, then
    compress --update --clients c01,c02 --seed 5 (c01 and c02 trained again). Before:
    '400 held-out searches of 1 clients in 2 runs merged by --update': the gallery's 200
    searches (c01's and c02's old models among them) added to c01's and c02's new 200,
    at the old 1% CI's weight. Now the point is set from c01's and c02's new searches
    only (each of the 200 images a search of the clients that held it out), taken as
    typical of all 20, and compress, info and identify --open-set say so."""
    from ssgallery.biometrics import openset

    store, gallery = sample_store["store"], str(tmp_path / "g.h5")
    _ok(["compress", "--store", store, "-o", gallery])
    first = _open_set(gallery)
    assert first["searches"] == 200 and first["clients"] == 20 and first["blocks"] == 1
    assert "measured_clients" not in first and "searches_inseparable" not in first
    r = _ok(["compress", "--store", store, "-o", gallery, "--update", "--clients", "c01,c02",
             "--seed", "5"])
    rec = _open_set(gallery)
    assert (rec["searches"], rec["search_size"], rec["blocks"]) == (200, 1, 1)
    assert rec["clients"] == 20 and rec["measured_clients"] == 2
    assert rec["searches_inseparable"] is True
    assert " of 400 " not in r["stdout"] and "merged by --update" not in r["stdout"]
    assert "200 held-out searches of 1 client)" in r["stdout"]
    assert SEARCHES_POOLED in r["stdout"]
    warned = [ln for ln in r["stderr"].splitlines() if "1:N operating point" in ln]
    assert len(warned) == 1 and "cannot be taken apart" in warned[0]
    assert "held-out searches of the 2 client(s) trained by updates" in warned[0]
    # T is the new searches' curve read for the gallery's 20 clients, on the scale
    # pooled from the 20 clients it holds now (c01's and c02's new spreads)
    assert (rec["threshold"], rec["resolved"]) == openset.threshold_at_fpir(rec["curve"], 0.01)
    stds = [m.normalization["std"] for _, m in sorted(read_gallery(gallery).clients.items())]
    assert rec["scale"] == openset.pooled_scale(stds)
    assert SEARCHES_POOLED in _ok(["info", "--gallery", gallery])["stdout"]
    image = min((Path(sample_faces_path()) / "c03").iterdir())
    res = invoked(["identify", str(image), "--gallery", gallery, "--open-set", "--json"])
    assert res["exit_code"] in (0, 1), res["output"]
    point = json.loads(res["stdout"])["operating_point"]
    assert point["threshold"] == rec["threshold"] and point["measured_clients"] == 2
    assert point["searches_inseparable"] is True
    res = invoked(["identify", str(image), "--gallery", gallery, "--open-set"])
    assert SEARCHES_POOLED in res["stdout"]
    # an update that trains nothing keeps the point and its mark
    r = _ok(["compress", "--store", store, "-o", gallery, "--update", "--clients", "c01,c02",
             "--seed", "5"])
    assert _open_set(gallery) == rec and SEARCHES_POOLED in r["stdout"]


def _rehashed(gallery, attr, record):
    """The gallery's header ``attr`` (JSON) set to ``record`` and its digests made whole
    again (what anybody without the signing key can do)."""
    import h5py

    with h5py.File(gallery, "a") as f:
        f.attrs[attr] = json.dumps(record)
    rehash_gallery(gallery)


HEADER = "corrupt gallery header: "


def test_a_rehashed_calibration_record_of_wrong_values_is_refused(sample_gallery_3,
                                                                  sample_store, tmp_path):
    """The calibration record is data from a file, checked on read as the 1:N record is
    (review9b). Before, re-hashed: compress --update exited 4 ('internal error:
    TypeError') on accepted 'x', rejected 'x', frr_worst [5], global_threshold 'x' or
    target_far 'x'; info printed 'x of 570 held-out impostor scores', '50 of -30
    held-out genuine scores', 'expected FAR 700.00%' and '570.5' impostor scores; a
    counts_unknown of 'yes', or true beside counts, was read without a word; an
    ``unresolved`` of 50 clients in the 3-client gallery made info print 'expected FAR
    not estimated' and 'the target FAR (1%) cannot be estimated for 50 of 3 clients'
    (exit 0), and compress --update carried it into the gallery it wrote."""
    import h5py

    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    with h5py.File(gallery) as f:
        cal = json.loads(f.attrs["calibration"])
    update = ["compress", "--store", sample_store["store"], "-o", gallery, "--update",
              "--m", "2", "--clients", "c01,c02,c03,c04", "-q"]
    bad = [{"accepted": "x"}, {"rejected": "x"}, {"frr_worst": [5]},
           {"frr_worst": [["c01", 1.5]]}, {"global_threshold": "x"}, {"target_far": "x"},
           {"target_far": 1.0}, {"genuine": -30, "rejected": 50}, {"expected_far": 7.0},
           {"expected_frr_ci": [0.3, 0.1]}, {"impostors": 570.5}, {"accepted": 571},
           {"counts_unknown": "yes"}, {"counts_unknown": True}, {"clients": True},
           {"training_clients": 4}, {"frr_high_clients": -1},
           {"unresolved": {"clients": 50, "people": [1, 2], "far": 0.5, "training": 0}}]
    for patch in bad:
        _rehashed(gallery, "calibration", cal | patch)
        refused(["info", "--gallery", gallery], f"{HEADER}calibration")
        refused(update, f"{HEADER}calibration")
    # what an update that trained clients again writes, and a record written before the
    # FRR counts and the clients' number, still read
    unknown = cal | {k: None for k in ("accepted", "impostors", "expected_far",
                                       "expected_far_ci", "rejected", "genuine",
                                       "expected_frr", "expected_frr_ci", "frr_high_clients")}
    old = {k: cal[k] for k in ("mode", "target_far", "global_threshold", "accepted",
                               "impostors", "expected_far", "expected_far_ci")}
    for record in (unknown | {"counts_unknown": True, "frr_worst": []}, old):
        _rehashed(gallery, "calibration", record)
        assert _recorded(gallery) == record


def test_a_calibration_record_of_another_gallery_is_refused_by_every_reader(
        sample_gallery_3, sample_store, tmp_path):
    """The calibration record describes the gallery it sits in, as the 1:N record does
    (`_describes_gallery`, one check for both). Before, re-hashed onto the 3-client
    gallery: a record for 1 client (1 on training scores) made info print '2 of 210
    training impostor scores' (exit 0); one for 20 clients was read by info --json as
    the gallery's, and compress --update took it for a record pooling clients no longer
    enrolled and wrote the FAR and FRR counts as unknown (exit 0); a ``frr_worst``
    naming c09 was read as the gallery's worst client."""
    import h5py

    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    with h5py.File(gallery) as f:
        cal = json.loads(f.attrs["calibration"])
    assert cal["clients"] == 3
    readers = [["info", "--gallery", gallery], ["info", "--gallery", gallery, "--json"],
               ["compress", "--store", sample_store["store"], "-o", gallery, "--update",
                "--m", "2", "--clients", "c01,c02,c03,c04", "-q"]]
    what = "calibration: a threshold calibration"
    # every count of clients within the 1 (since the person-out pooled T, 2 of the 3
    # reject half their images, and unresolved may count all 3): only the number differs
    for patch, refusal in (({"clients": 1, "training_clients": 1, "frr_high_clients": 1,
                             "unresolved": None, "far_clients": 1, "far_high_clients": 0,
                             "far_worst": cal["far_worst"][:1]},
                            f"{what} for 1 client in a gallery of 3"),
                           ({"clients": 20}, f"{what} for 20 clients in a gallery of 3")):
        _rehashed(gallery, "calibration", cal | patch)
        for args in readers:
            refused(args, HEADER + refusal)
    _rehashed(gallery, "calibration", cal)
    assert _recorded(gallery) == cal


def test_a_worst_client_the_gallery_lacks_is_left_out_not_refused(sample_gallery_3, tmp_path):
    """Before 21a5f6a, compress --update kept the FRR record's worst clients of the
    clients it left out: sample_data c01-c03 (background c04-c08) compressed, then
    updated from a store of c01-c02 (c03 moved to the background), wrote 'clients': 2,
    'frr_worst': [['c03', 0.1]]. Since 1625883 every reader refused that gallery
    ('a threshold calibration naming client 'c03', which the gallery does not hold',
    exit 2) while verify and identify read it. Such a name is left out on read."""
    import h5py

    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    with h5py.File(gallery) as f:
        cal = json.loads(f.attrs["calibration"])
    worst = [["c09", 1.0], *cal["frr_worst"]][:5]
    _rehashed(gallery, "calibration", cal | {"frr_worst": worst})
    assert _recorded(gallery)["frr_worst"] == worst[1:]
    r = _ok(["info", "--gallery", gallery])
    assert "c09" not in r["output"]


def test_a_worst_client_named_twice_is_named_once(sample_gallery_3, tmp_path):
    """A calibration whose ``frr_worst`` names one client twice (an update before 21a5f6a
    that trained a named client again kept its old entry beside the new one) was read
    as it was: info warned '2 client(s) reject at least half of their own held-out
    images: c01 (100%), c01 (100%)' (exit 0). Each client is named once, its first
    entry kept."""
    import h5py

    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    with h5py.File(gallery) as f:
        cal = json.loads(f.attrs["calibration"])
    first = ["c01", 1.0]
    worst = [first, first, *[w for w in cal["frr_worst"] if w[0] != "c01"]][:5]
    _rehashed(gallery, "calibration", cal | {"frr_worst": worst,
                                             "frr_high_clients": max(cal["frr_high_clients"], 1)})
    assert _recorded(gallery)["frr_worst"] == [first, *worst[2:]]
    r = _ok(["info", "--gallery", gallery])
    assert r["output"].count("c01 (100%)") == 1, r["output"]


def test_searches_inseparable_on_a_point_measured_on_every_client_is_refused(
        sample_gallery_3, tmp_path):
    """``searches_inseparable`` marks a 1:N point measured on only some clients (an
    update's ``measured_clients`` < ``clients``): re-hashed onto a point measured on
    every one it was read, and identify --json passed it on, a mark no writer gives
    (review9b)."""
    import h5py

    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    with h5py.File(gallery) as f:
        rec = json.loads(f.attrs["open_set"])
    probe = min((Path(sample_faces_path()) / "c03").iterdir())
    for patch in ({"searches_inseparable": True},
                  {"searches_inseparable": True, "measured_clients": rec["clients"]}):
        _rehashed(gallery, "open_set", rec | patch)
        refused(["info", "--gallery", gallery], f"{HEADER}open_set")
        refused(["identify", probe, "--gallery", gallery, "--open-set"],
                f"{HEADER}open_set")
    _rehashed(gallery, "open_set", rec | {"searches_inseparable": True,
                                          "measured_clients": rec["clients"] - 1})
    assert _open_set(gallery)["searches_inseparable"] is True
