"""Issue 20 family 4: ``identify`` never trusts the search index (``/index``) where
``verify`` would refuse. The gallery is unsigned and every edit is re-hashed (what
anybody who can write the file can do): a 1:N threshold of -1e9, a row whose threshold
accepts everything, overlapping offsets, a forged row, a lowered threshold, a record
edited behind the index, a tiny Z-norm std or deleted failure-to-acquire limits are
each one line and exit 2, never an identification; and on the intact gallery every
probe identify identifies is one verify accepts for that client."""

import json
import os
import shutil

import h5py
import numpy as np
import pytest
from conftest import clean_error, report
from helpers import rehash_gallery

from ssgallery.app.compress import CompressOptions, compress
from ssgallery.app.identify import Records, identify
from ssgallery.app.verify import verify
from ssgallery.errors import FormatError
from ssgallery.formats.gallery import open_search, read_search
from ssgallery.formats.gallery.checks import index_score_range


@pytest.fixture(scope="module")
def site(tmp_path_factory, synth_split_built):
    """12 synthetic clients compressed unsigned (3-fold threshold CV: Z-norm and a 1:N
    operating point); probes: their held-out images and 28 strangers'."""
    shared, clients = synth_split_built
    root = tmp_path_factory.mktemp("index")
    shutil.copytree(shared, root, dirs_exist_ok=True)
    compress(root / "e.h5", root / "g.h5", CompressOptions(cv_folds=3))
    probes = sorted(str(p) for d in sorted((root / "probes").iterdir()) for p in d.iterdir())
    strangers = [p for p in probes if p.split("/")[-2] not in clients]
    (root / "probes.txt").write_text("".join(p + "\n" for p in probes))
    return {"root": root, "clients": clients, "probes": probes, "strangers": strangers}


def _rows(f, k):
    off = f["index/offsets"][()]
    return int(off[k]), int(off[k + 1])


def _set(f, name, k, value):
    data = f[name][()]
    data[k] = value
    f[name][...] = data


def _lenient(g):
    """A 1:N threshold just above the accept-all bound (it passes the value checks) and
    the share of strangers whose top candidate passes it."""
    index, matcher, header = read_search(g)
    scale = json.loads(header["open_set"])["scale"]
    t = float(np.max(index_score_range(index, matcher)[0] - index.norm_mean) / scale) + 1e-6
    return t


def _with_threshold(rec, t):
    """The 1:N record with threshold ``t`` and the flags an attacker would set to match
    it (``extrapolated``: T on the curve's tail; not ``resolved`` there), so that only
    the threshold's value is under test, not the header's consistency check."""
    above = rec["curve"].get("extrapolated_above")
    on_tail = above is not None and t >= above
    return rec | {"threshold": t, "extrapolated": on_tail,
                  "resolved": bool(rec["resolved"]) and not on_tail}


def _edits():
    """name -> edit(open h5py file, gallery path): every case an attacker without the
    signing key can write (the file re-hashed afterwards)."""
    def open_set(value):
        def edit(f, g):
            rec = json.loads(f.attrs["open_set"])
            f.attrs["open_set"] = json.dumps(_with_threshold(rec, value), sort_keys=True)
        return edit

    def forged_row(f, g):  # client 3's rows replaced by client 0's (same m)
        (a0, a1), (b0, b1) = _rows(f, 0), _rows(f, 3)
        for name in ("prototypes", "beta"):
            data = f[f"index/{name}"][()]
            data[b0:b1] = data[a0:a1]
            f[f"index/{name}"][...] = data
        for name in ("intercept", "threshold", "gamma", "norm_mean", "norm_std"):
            _set(f, f"index/{name}", 3, f[f"index/{name}"][0])

    def overlapping(f, g):  # client 1's segment grows into client 2's
        _set(f, "index/offsets", 2, f["index/offsets"][2] + 1)

    def decreasing(f, g):
        _set(f, "index/offsets", 2, f["index/offsets"][1] - 1)

    def record_only(f, g):  # the client group's threshold lowered, the index untouched
        grp = f["clients"][sorted(f["clients"])[5]]
        grp.attrs["threshold"] = float(grp.attrs["threshold"]) - 0.05

    def no_fta(f, g):
        for name in ("max_relative_dffs", "max_difs"):
            if name in f["matcher"].attrs:
                del f["matcher"].attrs[name]
            if name in f["matcher"]:
                del f["matcher"][name]

    def tiny_std_both(f, g):  # index and record alike: the floor still refuses it
        _set(f, "index/norm_std", 4, 1e-12)
        grp = f["clients"][sorted(f["clients"])[4]]
        norm = json.loads(grp.attrs["normalization"])
        grp.attrs["normalization"] = json.dumps(norm | {"std": 1e-12})

    return {
        "1:N threshold -1e9": (open_set(-1e9), "would accept every probe"),
        "1:N threshold just above the accept-all bound": (None, None),  # see the test
        "index threshold -1e9": (lambda f, g: _set(f, "index/threshold", 2, -1e9),
                                 "would accept every probe"),
        "index threshold lowered": (lambda f, g: _set(f, "index/threshold", 2,
                                                      f["index/threshold"][2] - 0.05),
                                    "threshold of client"),
        "forged row": (forged_row, "differs from the client's record"),
        "overlapping offsets": (overlapping, "differs from the client's record"),
        "decreasing offsets": (decreasing, "corrupt search index"),
        "record edited behind the index": (record_only, "differs from the client's record"),
        "tiny Z-norm std (index)": (lambda f, g: _set(f, "index/norm_std", 4, 1e-12),
                                    "Z-norm std"),
        "tiny Z-norm std (index and record)": (tiny_std_both, "Z-norm std"),
        "Z-norm mean without std": (lambda f, g: _set(f, "index/norm_std", 4, np.nan),
                                    "Z-norm std"),
        "failure-to-acquire limits deleted": (no_fta, "no failure-to-acquire limits"),
    }


def _wrong_accepts(gallery, site, **kwargs):
    """Probes identify identifies as a client whose verify rejects them (must be 0), and
    the number identified."""
    results, _, _ = identify(gallery, site["probes"], **kwargs)
    wrong = found = 0
    for r in results:
        if r.identified is not None:
            found += 1
            v = verify(gallery, [r.probe], r.identified)[0]
            wrong += v.status != "accept"
    return wrong, found


def test_hostile_search_indexes(site, workers, tmp_path):
    root = site["root"]
    counts = {"cases": 0, "clean errors": 0, "accepts": 0, "tracebacks": 0, "other": 0}
    failures = []
    for i, (name, (edit, expected)) in enumerate(_edits().items()):
        if edit is None:
            continue
        g = tmp_path / f"{i}.h5"
        shutil.copy(root / "g.h5", g)
        with h5py.File(g, "a") as f:
            edit(f, g)
        rehash_gallery(g)
        for args in (["--open-set"], ["--verification-thresholds"], []):
            r = workers.run(["identify", "--list", root / "probes.txt", "--gallery", g,
                             "-q", *args])
            counts["cases"] += 1
            if clean_error(r) and expected in r["stderr"]:
                counts["clean errors"] += 1
                continue
            kind = "tracebacks" if r.get("crash") or "Traceback" in r.get("stderr", "") \
                else "accepts" if r.get("code") in (0, 1, 3) else "other"
            counts[kind] += 1
            failures.append((name, args, r.get("code"), r.get("stderr", "")[-300:]))
    # verify refuses what identify refuses, where verify reads it (FTA limits, record)
    line = report("family 4, hostile search indexes", counts)
    assert not failures, (line, failures)
    assert counts["cases"] == 3 * (len(_edits()) - 1)


def test_verify_refuses_the_same_records(site, workers, tmp_path):
    """Deleted failure-to-acquire limits (which verify reads too) are refused by verify
    in the same words."""
    root, probe = site["root"], site["strangers"][0]
    g = tmp_path / "g.h5"
    shutil.copy(root / "g.h5", g)
    with h5py.File(g, "a") as f:
        for name in ("max_relative_dffs", "max_difs"):
            del f["matcher"].attrs[name]
    rehash_gallery(g)
    r = workers.run(["verify", probe, "--claim", site["clients"][0], "--gallery", g, "-q"])
    assert clean_error(r) and "no failure-to-acquire limits" in r["stderr"], r


def _huge(f, client, where, value=10**400):
    """Put ``value`` (10**400: a JSON integer no float holds) in one JSON field of the
    gallery."""
    grp = f["clients"][client]
    if where == "open_set":
        rec = json.loads(f.attrs["open_set"])
        f.attrs["open_set"] = json.dumps(_with_threshold(rec, value), sort_keys=True)
        return
    key = {"normalization": "mean", "similarity": "gamma"}.get(where, "std")
    where = "normalization" if where == "std" else where
    rec = json.loads(grp.attrs[where])
    grp.attrs[where] = json.dumps(rec | {key: value})


@pytest.mark.parametrize("where, value", [
    ("normalization", 10**400), ("similarity", 10**400), ("open_set", 10**400),
    ("similarity", 2**60), ("open_set", 2**60), ("normalization", 2**60),
    ("normalization", "0.5"), ("std", True), ("std", "1")])
def test_a_number_no_float_holds_is_one_line(site, workers, tmp_path, where, value):
    """A Z-norm mean, RBF gamma or 1:N threshold of 10**400 (the review of f6fee81:
    verify, identify and info --svm ended in 'internal error: OverflowError', exit 4)
    is one line naming the file, exit 2, for every reader that reads it; so is an
    integer beyond 2**53, which a float does not hold exactly
    (`ssgallery.checks.is_finite_real`: main read a gamma or a 1:N threshold of 2**60),
    and a Z-norm mean or std that is a string or a boolean (read with float() before:
    a std of true was a std of 1)."""
    root, probe, client = site["root"], site["strangers"][0], site["clients"][0]
    g = tmp_path / "g.h5"
    shutil.copy(root / "g.h5", g)
    with h5py.File(g, "a") as f:
        _huge(f, client, where, value)
    rehash_gallery(g)
    commands = [["identify", probe, "--open-set", "-q"], ["info"]] if where == "open_set" \
        else [["verify", probe, "--claim", client, "-q"], ["identify", probe, "-q"],
              ["info", "--svm"], ["info", "--client", client]]
    for args in commands:
        r = workers.run([*args, "--gallery", g])
        named = {"normalization": "normalization", "std": "normalization",
                 "similarity": "RBF gamma", "open_set": "open_set"}[where]
        assert clean_error(r) and named in r["stderr"] and str(g) in r["stderr"], (args, r)


def test_identify_never_accepts_what_verify_rejects(site, tmp_path):
    """On the intact gallery and on one whose 1:N threshold is just above the accept-all
    bound (valid, but far too lenient: almost every stranger passes it), every probe
    identify identifies is accepted by verify for that client."""
    root = site["root"]
    counts = {}
    wrong, found = _wrong_accepts(root / "g.h5", site, open_set=True)
    counts["intact: identified"], counts["intact: verify rejects"] = found, wrong
    g = tmp_path / "lenient.h5"
    shutil.copy(root / "g.h5", g)
    t = _lenient(g)
    with h5py.File(g, "a") as f:
        rec = json.loads(f.attrs["open_set"])
        f.attrs["open_set"] = json.dumps(_with_threshold(rec, t), sort_keys=True)
    rehash_gallery(g)
    wrong_l, found_l = _wrong_accepts(g, site, open_set=True)
    counts["lenient: identified"], counts["lenient: verify rejects"] = found_l, wrong_l
    results, _, _ = identify(g, site["strangers"], open_set=True)
    counts["lenient: strangers identified"] = sum(r.identified is not None for r in results)
    counts["strangers"] = len(site["strangers"])
    line = report("family 4, identify vs verify", counts)
    assert wrong == 0 and wrong_l == 0, line
    assert found > 0, line  # the rule does not reject the genuine identifications
    assert counts["lenient: strangers identified"] < len(site["strangers"]), line


def test_records_come_from_the_file_the_search_opened(site, tmp_path):
    """A gallery replaced while a search runs (its path now names a file whose record of
    a client was edited) changes nothing: the records are read from the open file."""
    g, edited = tmp_path / "g.h5", tmp_path / "edited.h5"
    shutil.copy(site["root"] / "g.h5", g)
    shutil.copy(site["root"] / "g.h5", edited)
    victim = site["clients"][5]
    with h5py.File(edited, "a") as f:
        f["clients"][victim].attrs["threshold"] = -1e9
    rehash_gallery(edited)
    with open_search(g) as (index, matcher, _, read):
        os.replace(edited, g)
        models = Records(index, matcher, read, g).get([victim, site["clients"][0]])
    assert sorted(models) == sorted([victim, site["clients"][0]])
    assert models[victim].threshold == index.threshold[list(index.client_ids).index(victim)]
    with pytest.raises(FormatError, match="would accept every probe"):  # the new file
        identify(g, site["probes"][:40])
