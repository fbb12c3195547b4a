"""``compress --update`` and the interval by impostor person: one person, once.

The calibration record kept the interval's sums only, so an update added its new
clients' impostor people to the kept record's as other people: a person claimed against
both blocks counted twice, the interval too narrow, and info said "4 impostor people
(counted as 6: --update's blocks apart)" (7202653). The record now keeps each person's
counts under an id that names no one (`ssgallery.app.impostor_people`), and an update
adds them by person: the interval of one compress of every client. A record written
before the ids is still counted block by block, and says so. The ids are salted per
store (kept by --update): the galleries of two stores share no id, even trained against
the same background files (review25: unsalted, a public background set's people were the
same ids in every site's gallery).
"""

import json

import h5py
import pytest
from helpers import invoked, rehash_gallery

from ssgallery.datasets import sample_faces_path

CLIENTS = ["c01", "c02", "c03", "c04"]
BACKGROUND = ["c05", "c06", "c07", "c08", "c09", "c10"]


def _ok(*args):
    res = invoked([str(a) for a in args])
    assert res["exit_code"] == 0, res["output"]
    return res


def _calibration(gallery):
    with h5py.File(gallery, "r") as f:
        return json.loads(f.attrs["calibration"])


def _by_subject(root, cal):
    """The record's people by store subject: each id computed again from the store's
    files and the record's salt (what only the store's holder can do)."""
    from ssgallery.app.impostor_people import person_ids
    from ssgallery.formats.store import load_store

    store = load_store(root / "e.h5", images=False)
    far = cal["far_by_person"]
    names = {i: s for s, i in person_ids(store.labels, store.sha256, far["salt"]).items()}
    return {names[p]: [k, n] for p, k, n in far["people"]}


def _interval(cal):
    return {k: cal["far_by_person"][k] for k in ("ci", "design_effect", "sums")}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The sample faces: 4 clients and 6 background people, one store."""
    root = tmp_path_factory.mktemp("people")
    _ok("enroll", sample_faces_path(), "--clients", ",".join(CLIENTS), "--background",
        ",".join(BACKGROUND), "--store", root / "e.h5", "-q")
    return root


def _galleries(root, mode):
    """(updated, whole): c01-c02 compressed then ``--update`` to every client, and one
    compress of every client, both in threshold mode ``mode`` (at a target FAR that 90
    impostor scores per client resolve)."""
    args = ["compress", "--store", root / "e.h5", "--m", "1", "--threshold-mode", mode,
            "--target-far", "0.05", "-q"]
    updated, whole = root / f"up-{mode}.h5", root / f"all-{mode}.h5"
    _ok(*args, "-o", updated, "--clients", "c01,c02")
    first = _calibration(updated)["far_by_person"]["salt"]
    _ok(*args, "-o", updated, "--update")
    assert _calibration(updated)["far_by_person"]["salt"] == first  # kept: ids still match
    _ok(*args, "-o", whole)
    return updated, whole


def _by_person_line(gallery):
    info = _ok("info", "--gallery", gallery)["stdout"]
    return next(ln for ln in info.splitlines() if "by impostor person" in ln)


def test_an_update_counts_each_impostor_person_once_as_one_compress(store):
    """c01-c02 compressed, then --update to c01-c04 (the same store, the same 10 people):
    on main the interval counted 20 people (each block's 10 apart) and info said '10
    impostor people (counted as 20: --update's blocks apart)'. With per-client
    thresholds (``client``: each client's threshold its own, the same in both runs) the
    update's interval by person, its people and its counts are one compress's, to the
    last bit."""
    updated, whole = _galleries(store, "client")
    up, one = _calibration(updated), _calibration(whole)
    assert up["far_by_person"] == one["far_by_person"]  # one store: the same salt, ids
    assert _interval(up) == _interval(one)
    assert _by_subject(store, up) == _by_subject(store, one)  # person by person
    assert up["far_by_person"]["sums"]["clusters"] == 10 == len(up["far_by_person"]["people"])
    assert (up["impostor_people"], up["accepted"], up["impostors"]) == \
        (one["impostor_people"], one["accepted"], one["impostors"]) == \
        (10, one["accepted"], one["impostors"])
    line = _by_person_line(updated)
    assert "by impostor person: 10 impostor people, design effect" in line, line
    assert "counted as" not in line and line == _by_person_line(whole)
    # the ids name no one: no background subject's name is in the record
    text = json.dumps(up)
    assert not any(f'"{name}"' in text for name in BACKGROUND), text


def test_the_galleries_of_two_stores_share_no_id(tmp_path):
    """Two sites, other clients, the same background files (review25's case: unsalted,
    both galleries carried the same 10 ids): each store salts its own."""
    ids = []
    for clients in (CLIENTS[:2], CLIENTS[2:]):
        root = tmp_path / clients[0]
        _ok("enroll", sample_faces_path(), "--clients", ",".join(clients), "--background",
            ",".join(BACKGROUND), "--store", root / "e.h5", "-q")
        _ok("compress", "--store", root / "e.h5", "--m", "1", "-q", "-o", root / "g.h5")
        far = _calibration(root / "g.h5")["far_by_person"]
        assert set(_by_subject(root, {"far_by_person": far})) >= set(BACKGROUND)
        ids.append({p for p, _, _ in far["people"]})
    assert len(ids[0]) == len(ids[1]) == 8 and not ids[0] & ids[1]  # 2 clients + 6


def test_an_update_at_the_kept_threshold_counts_the_same_people(store):
    """In a global mode the new clients are set at the kept gallery's T, not at the T of
    one compress of every client, so their accepts differ: the exact relation is that
    the update's interval is by the same people, each with the same scores (one
    compress's ids and n per person), and its accepts are its own counts."""
    updated, whole = _galleries(store, "znorm-global")
    up, one = _calibration(updated), _calibration(whole)
    people = up["far_by_person"]["people"]
    assert {s: n for s, (_, n) in _by_subject(store, up).items()} == \
        {s: n for s, (_, n) in _by_subject(store, one).items()}
    assert up["far_by_person"]["sums"]["clusters"] == up["impostor_people"] == 10
    assert sum(k for _, k, _ in people) == up["accepted"]
    assert sum(n for _, _, n in people) == up["impostors"] == one["impostors"]
    line = _by_person_line(updated)
    assert "by impostor person: 10 impostor people, design effect" in line, line


@pytest.mark.parametrize("written_before", ["people", "salt"])
def test_a_kept_record_without_people_is_counted_block_by_block(store, tmp_path,
                                                                 written_before):
    """A gallery written before the ids keeps sums only (before the salt, c7a8e11:
    unsalted ids, which no new id matches): its update adds the new clients' people as
    other people, and info says how the interval counted them."""
    gallery = tmp_path / "g.h5"
    args = ["compress", "--store", store / "e.h5", "--m", "1", "-q", "-o", gallery]
    _ok(*args, "--clients", "c01,c02")
    with h5py.File(gallery, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        del cal["far_by_person"][written_before]
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(gallery)
    _ok(*args, "--update")
    cal = _calibration(gallery)
    assert "people" not in cal["far_by_person"]
    assert cal["far_by_person"]["sums"]["clusters"] == 20 and cal["impostor_people"] == 10
    line = _by_person_line(gallery)
    assert "by impostor person: 10 impostor people (counted as 20: --update's blocks " \
        "apart), design effect" in line, line


@pytest.mark.parametrize("edit, why", [
    (lambda p: p[0].__setitem__(2, p[0][2] + 1), "people give n "),
    (lambda p: p[1].__setitem__(0, p[0][0]), "people: an id given twice"),
    (lambda p: p[0].__setitem__(0, "c05"), "is not [id (32 hex digits), k, n]"),
    (lambda p: p.pop(), "people must be a list of 10 [id, k, n], one per cluster"),
    (None, "salt must be 32 hex digits, got str 'x'"),
], ids=["counts", "twice", "name", "missing", "salt"])
def test_recorded_people_that_are_not_the_sums_are_refused(store, tmp_path, edit, why):
    """``compress --update`` adds the kept record's people: an edited unsigned gallery's
    counts that are not the counts its sums were made of, an id twice, a name instead
    of an id or a salt that is not one are refused on read (one line, exit 2; on main:
    read, exit 0)."""
    gallery = tmp_path / "g.h5"
    _ok("compress", "--store", store / "e.h5", "--m", "1", "-q", "-o", gallery, "--clients",
        "c01,c02")
    with h5py.File(gallery, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        if edit is None:
            cal["far_by_person"]["salt"] = "x"
        else:
            edit(cal["far_by_person"]["people"])
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(gallery)
    res = invoked(["info", "--gallery", str(gallery)])
    assert res["exit_code"] == 2, res["output"]
    assert res["stderr"].startswith(f"ssgallery: error: {gallery}: corrupt gallery header: "
                                    "calibration: far_by_person: "), res["stderr"]
    assert why in res["stderr"] and len(res["stderr"].splitlines()) == 1, res["stderr"]


def test_an_interval_far_from_its_record_s_counts_or_a_lone_bad_salt_is_refused(store,
                                                                             tmp_path):
    """trust19's hostile pass: every person's k set to n, the sums made to match them,
    read as 'expected FAR 0.9% (... 78.20-100.00% by impostor person ...; 5 of 560
    held-out impostor scores)', exit 0, and --update merged it into the next gallery;
    and a salt without people was never checked. The sums add up to the record's own
    pooled counts (k of n: accepted of impostors; for the FRR, rejected of genuine), and
    a salt is checked with or without people: each refused on read, one line, exit 2."""
    from ssgallery.biometrics.intervals import cluster_sums

    gallery = tmp_path / "g.h5"
    _ok("compress", "--store", store / "e.h5", "--m", "1", "-q", "-o", gallery)
    original = gallery.read_bytes()

    def everyone_accepted(far):
        far["people"] = [[p, n, n] for p, _, n in far["people"]]
        far["sums"] = cluster_sums(*zip(*[(k, n) for _, k, n in far["people"]]))

    def lone_salt(far):
        del far["people"]
        far["salt"] = 12345

    cal = _calibration(gallery)
    n = cal["impostors"]
    far_off = f"far_by_person sums: k {n} of n {n}, where the record counts {cal['accepted']} of {n}"
    for edit, why in ((everyone_accepted, far_off),
                      (lone_salt, "far_by_person: salt must be 32 hex digits, got int 12345")):
        gallery.write_bytes(original)
        with h5py.File(gallery, "a") as f:
            cal = json.loads(f.attrs["calibration"])
            edit(cal["far_by_person"])
            f.attrs["calibration"] = json.dumps(cal)
        rehash_gallery(gallery)
        res = invoked(["info", "--gallery", str(gallery)])
        assert res["exit_code"] == 2, res["output"]
        assert res["stderr"] == (f"ssgallery: error: {gallery}: corrupt gallery header: "
                                 f"calibration: {why}\n"), res["stderr"]


@pytest.mark.parametrize("edit", ["salt", "id"])
def test_an_update_refuses_kept_people_that_are_no_subject_of_the_store(store, tmp_path,
                                                                        edit):
    """trust19's 12:50 (session 18): the salt edited to any 32 hex digits (or one
    person's id to another), the gallery re-hashed, and ``compress --update`` to c01-c04
    made every kept person new (ids salted with the edited salt match none of the new
    clients'): 20 people counted where there are 10, exit 0. The store holds every kept
    person (it only grows), so the update computes their ids under the kept salt and
    refuses one it does not find: one line naming the gallery, exit 2, the gallery as it
    was."""
    gallery = tmp_path / "g.h5"
    args = ["compress", "--store", store / "e.h5", "--m", "1", "-q", "-o", gallery]
    _ok(*args, "--clients", "c01,c02")
    with h5py.File(gallery, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        far = cal["far_by_person"]
        if edit == "salt":
            far["salt"] = "0" * 32
        else:
            far["people"][0][0] = "f" * 32
            far["people"].sort()
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(gallery)
    before = gallery.read_bytes()
    res = invoked([str(a) for a in args] + ["--update"])
    assert res["exit_code"] == 2, res["output"]
    foreign = 10 if edit == "salt" else 1
    assert res["stderr"] == (
        f"ssgallery: error: {gallery}: calibration: far_by_person: {foreign} of the 10 "
        "impostor people it counts are no subject of the store under its salt (an edited "
        "salt or id, or a gallery of another store): an update would count them twice; "
        "compress every client again without --update\n"), res["stderr"]
    assert gallery.read_bytes() == before
