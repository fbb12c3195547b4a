"""Per client, the FAR of its own held-out impostor scores: ``compress`` records the
clients whose 95 % interval by impostor person lies wholly above the target FAR
(``far_clients``, ``far_high_clients``, ``far_worst``: `ssgallery.app.client_far`), and
``compress`` and ``info`` name them in a warning (`ssgallery.cli.operating.far_warning`).
Before, only the clients rejecting their own images were named (``frr_worst``)."""

import json

import h5py
from helpers import copied, invoked, refused, rehash_gallery

from ssgallery.app.client_far import far_record
from ssgallery.biometrics.calibration import person_sums
from ssgallery.cli.operating_far import far_warning

HEADER = "corrupt gallery header: calibration: "


def _sums(accepted_by_person, scores_each=10):
    """`person_sums` of one client's scores: ``scores_each`` per person, the given
    number of them accepted per person."""
    hits = [i < k for k in accepted_by_person for i in range(scores_each)]
    people = [f"p{j}" for j in range(len(accepted_by_person)) for _ in range(scores_each)]
    return person_sums([hits], [people])


def _rehashed(gallery, record):
    with h5py.File(gallery, "a") as f:
        f.attrs["calibration"] = json.dumps(record)
    rehash_gallery(gallery)


def _calibration(gallery):
    with h5py.File(gallery) as f:
        return json.loads(f.attrs["calibration"])


def test_far_record_names_only_clients_whose_interval_lies_above_the_target():
    # 40 people x 10 scores: "spread" accepts 1 score of each of 12 people (3 %, every
    # person alike: a narrow interval above 1 %); "one" accepts 12 of a single person's
    # (3 % too, but one person: "onelook": the interval reaches below 1 %); "fine" accepts 2
    spread = _sums([1] * 12 + [0] * 28)
    one = _sums([10, 2] + [0] * 38)
    fine = _sums([1, 1] + [0] * 38)
    rec = far_record({"spread": spread, "onelook": one, "fine": fine}, 0.01)
    assert rec["far_clients"] == 3 and rec["far_high_clients"] == 1
    assert [e["client"] for e in rec["far_worst"]] == ["spread", "onelook", "fine"]
    assert rec["far_worst"][0]["ci"][0] > 0.01 > rec["far_worst"][1]["ci"][0]
    text = far_warning({"target_far": 0.01, "clients": 3} | rec)
    assert text.startswith("1 of 3 clients accepts its own held-out impostors more "
                           "often than the target FAR (1%)")
    assert "spread (3.0%, 95% " in text and "12 of 400 scores of 40 people" in text
    assert "onelook" not in text and "fine" not in text
    # an update adds its clients to the kept record's counts and worst clients
    more = far_record({"new": _sums([1] * 20 + [0] * 20)}, 0.01, previous=rec)
    assert (more["far_clients"], more["far_high_clients"]) == (4, 2)
    assert [e["client"] for e in more["far_worst"]][:2] == ["new", "spread"]
    # kept clients whose counts are unknown (a record written before them): unknown
    assert far_record({"new": spread}, 0.01, previous={}) == {
        "far_clients": None, "far_high_clients": None, "far_worst": []}
    # nobody above the target: no warning; nor when a count says so but no entry's
    # interval (computed again from its sums) does (before: 'the worst 0, ;')
    assert far_warning({"target_far": 0.01} | far_record({"fine": fine}, 0.01)) is None
    assert far_warning({"target_far": 0.01} | far_record({"fine": fine}, 0.01)
                       | {"far_high_clients": 1}) is None


def test_a_record_with_a_lying_per_client_far_count_is_refused(sample_gallery_3,
                                                               sample_store, tmp_path):
    """The per-client FAR fields are data from a file, checked on read by every reader
    of the record (info, info --json, compress --update): counts no more than their
    totals, sums that counts give, clients the gallery holds. trust19's pass over
    dacd83c: far_high_clients 3 with far_worst [] made info warn 'the worst 0, ;'
    (exit 0), far_high_clients 0 beside an entry above the target was silent, and an
    entry of n 2**52 scores in a gallery of 570 was named and carried by --update."""
    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    cal = _calibration(gallery)
    assert cal["far_clients"] == 3 and cal["far_high_clients"] == 0
    entry = cal["far_worst"][0]
    readers = [["info", "--gallery", gallery], ["info", "--gallery", gallery, "--json"],
               ["compress", "--store", sample_store["store"], "-o", gallery, "--update",
                "--m", "2", "--clients", "c01,c02,c03,c04", "-q"]]
    rest = cal["far_worst"][1:]

    def first(**change):  # the worst entry edited, the others as written
        return {"far_worst": [entry | change, *rest]}

    many = {"clusters": 400, "k": 0.0, "n": 400.0, "kk": 0.0, "kn": 0.0, "nn": 400.0}
    lies = [({"far_high_clients": 4}, "far_high_clients 4 is more than far_clients 3"),
            ({"far_clients": 5, "far_high_clients": 1}, "far_clients 5 is more than the 3"),
            ({"far_clients": 2}, "far_worst must be a list of 2 entries (far_clients 2"),
            ({"far_clients": "3"}, "far_clients and far_high_clients must be whole"),
            ({"far_clients": None}, "far_clients and far_high_clients must be whole"),
            (first(sums=entry["sums"] | {"k": 1e6}), "far_worst: sums: k 1e+06 is above n"),
            (first(sums={**many, "clusters": 1, "n": 4e6, "nn": 1.6e13}, ci=[0.0, 0.5]),
             f"far_worst: sums: n 4e+06 is more than the {cal['impostors']} impostor"),
            (first(sums=many, ci=[0.0, 0.5]), "far_worst: sums: 400 people, more than the"),
            (first(ci=[0.5, 0.9]), "far_worst: ci must be"),
            ({"far_worst": [entry, entry, *rest[1:]]}, "far_worst names a client twice"),
            ({"far_high_clients": 1},
             "far_worst holds 0 clients above the target where far_high_clients 1 says 1"),
            (first(client="c09"), "naming client 'c09', which the gallery does not hold")]
    for patch, why in lies:
        _rehashed(gallery, cal | patch)
        for args in readers:
            refused(args, HEADER + ("a threshold calibration " if "naming" in why else "")
                    + why)


def test_a_gallery_written_before_the_per_client_far_still_reads(sample_gallery_3,
                                                                 sample_store, tmp_path):
    """A record without the fields (written before them) reads as before, without a
    warning; an update of it records the per-client counts as unknown (its kept clients'
    were never counted), not as the new clients' alone."""
    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    old = {k: v for k, v in _calibration(gallery).items() if not k.startswith("far_")
           or k == "far_by_person"}
    _rehashed(gallery, old)
    r = invoked(["info", "--gallery", gallery, "--json"])
    assert r["exit_code"] == 0, r["output"]
    assert json.loads(r["stdout"])["gallery"]["calibration"] == old
    assert "held-out impostors more often" not in r["stderr"]
    r = invoked(["compress", "--store", sample_store["store"], "-o", gallery, "--update",
                 "--m", "2", "--clients", "c01,c02,c03,c04", "-q"])
    assert r["exit_code"] == 0, r["output"]
    cal = _calibration(gallery)
    assert (cal["far_clients"], cal["far_high_clients"], cal["far_worst"]) == (None, None, [])
    assert cal["clients"] == 4


def test_compress_and_info_name_a_client_that_accepts_its_held_out_impostors(
        sample_gallery_3, sample_store, tmp_path):
    """A real gallery (sample_data, c01-c03 at m = 2) whose record says that c02's
    held-out impostor scores were accepted 2 times each for 8 of its 19 impostor people
    (16 of 190: an interval by person wholly above 1 %): info names c02 with its interval,
    info --json carries the counts, and compress --update (c04 added, c01-c03 kept)
    keeps the kept clients' counts and names c02 too. Before, neither said a word."""
    gallery = copied(sample_gallery_3["gallery"], str(tmp_path), "g.h5")
    cal = _calibration(gallery)
    assert cal["far_high_clients"] == 0  # the gallery as compress wrote it: nobody
    mine = {e["client"]: e["sums"] for e in cal["far_worst"]}
    mine["c02"] = _sums([2] * 8 + [0] * 11)
    _rehashed(gallery, cal | far_record(mine, cal["target_far"]))
    named = ("1 of 3 clients accepts its own held-out impostors more often than the "
             "target FAR (1%) by more than the 95% interval by impostor person allows: "
             "c02 (8.4%, 95% ")
    r = invoked(["info", "--gallery", gallery])
    assert r["exit_code"] == 0 and named in r["stderr"], r["output"]
    line = next(ln for ln in r["stderr"].splitlines() if named in ln)
    assert "16 of 190 scores of 19 people)" in line
    assert "c01 (" not in line and "c03 (" not in line
    r = invoked(["info", "--gallery", gallery, "--json"])
    out = json.loads(r["stdout"])["gallery"]["calibration"]
    assert (out["far_clients"], out["far_high_clients"]) == (3, 1)
    assert out["far_worst"][0]["client"] == "c02" and named in r["stderr"]
    r = invoked(["compress", "--store", sample_store["store"], "-o", gallery, "--update",
                 "--m", "2", "--clients", "c01,c02,c03,c04", "-q"])
    assert r["exit_code"] == 0, r["output"]
    assert named.replace("1 of 3", "1 of 4") in r["stderr"]
    cal = _calibration(gallery)
    assert cal["far_clients"] == 4 and cal["far_worst"][0]["client"] == "c02"
