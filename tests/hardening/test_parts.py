"""Issue 20 families 1 and 2: ``compress`` parts are data. A forged, unsigned, NaN,
accept-all, truncated, oversized or zip-bomb part is reported and its client trained
again, never signed into a gallery; the parts folder and its files are never followed
through a symbolic link (no file outside the output is ever written), a FIFO never
blocks. Every run goes through the real CLI; the part names are derived from public
data, as an attacker derives them (no interrupted run is needed)."""

import io
import os
import shutil
import stat
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import Workers, clean_error, report
from helpers import make_faces

from ssgallery.app.client_training import summary_row, threshold_at_far, znorm_parameters
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions, resolve_training
from ssgallery.app.parts import (
    PART_MAGIC,
    UNSIGNED,
    ClientResult,
    PartsFolder,
    encode_result,
    run_key,
)
from ssgallery.formats.store import load_store
from ssgallery.images.ingest import read_image
from ssgallery.learn.supersparse import resolve_init

ARGS = ["--m", "1", "--cv-folds", "0", "--max-iter", "5", "--threshold-mode", "client"]
OPTIONS = CompressOptions(m=1, cv_folds=0, max_iter=5, threshold_mode="client")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("parts")
    faces = make_faces(str(root / "faces"), n_clients=6, n_images=5)
    enroll(faces, root / "e.h5")
    (root / "key").write_bytes(b"k" * 32)
    (root / "other-key").write_bytes(b"o" * 32)
    store = load_store(root / "e.h5")
    impostor = os.path.join(faces, "c02", "0.png")  # claimed as c01: never accepted
    matcher = store.matcher()
    features = matcher.transform(read_image(impostor, size=(24, 32))[None])
    options = resolve_training(  # as compress resolves them for eigenface
        replace(OPTIONS, init=resolve_init(OPTIONS.init, matcher.similarity())), False)
    return {"root": root, "faces": faces, "impostor": impostor, "features": features,
            "key": run_key("c01", store.fingerprint, options),
            "fingerprint": store.fingerprint, "options": options}


PROVENANCE = {"m": 1, "svm_n_support": 3, "svm_threshold": 0.1, "cv_far": 0.0,
              "cv_frr": 0.0, "svm_cv_frr": 0.0, "teacher_gap": None, "omega": 1.0,
              "n_impostor": 15}


def _forged(site, **change):
    """c01's model centred on the impostor: s(impostor, z) = 1 > threshold 0.9, a
    threshold above the lowest possible score, as an honest result carries it: the
    threshold and Z-norm those of its held-out impostor scores at the target FAR, a
    full provenance and summary row (it passes the value checks)."""
    impostor = np.array([0.5, np.nextafter(0.9, -np.inf)])  # threshold_at_far: 0.9
    values = {"client": "c01", "prototypes": site["features"].astype(float),
              "beta": np.ones(1), "intercept": 0.0, "threshold": 0.9,
              "provenance": dict(PROVENANCE), "normalization": znorm_parameters(impostor),
              "heldout": {"impostor": impostor, "genuine": np.array([1.0]),
                          "impostor_row": np.array([5, 10])},
              "row": summary_row("c01", PROVENANCE, 0.9, [1.0], 0.0,
                                 znorm_parameters(impostor)), "seconds": 1.0}
    values.update(change)
    return ClientResult(**values)


def _calibrating_to_accept_all(site, target_far):
    """Held-out impostor scores that give the part's own threshold (0.9) and Z-norm at
    ``target_far``, one more than its share at the threshold and the rest far below:
    pooled in ``znorm-global`` with the other clients', they calibrate c01's final
    threshold below any score."""
    high = int(np.floor(target_far * 20 + 1e-9)) + 1
    # far below, in two values 0.1 % apart: people of constant scores would leave the
    # Z-norm of the others (one person out) no spread but rounding error
    low = np.resize([-1e9, -1.001e9], 20 - high)
    impostor = np.r_[low, [np.nextafter(0.9, -np.inf)] * high]
    assert threshold_at_far(impostor, target_far) == 0.9
    return _forged(site, heldout={"impostor": impostor, "genuine": np.array([1.0]),
                                  "impostor_row": np.resize(np.arange(5, 20), 20)},
                   normalization=znorm_parameters(impostor))


def _low_heldout(site):
    """Held-out impostor scores far below any score c01's model can give (with the
    threshold and Z-norm they imply): a calibrated threshold that accepts every probe."""
    impostor = np.array([-1e9] * 13 + [0.8, 0.8])
    return _forged(site, heldout={"impostor": impostor, "genuine": np.array([1.0]),
                                  "impostor_row": np.arange(5, 20)},
                   normalization=znorm_parameters(impostor),
                   threshold=threshold_at_far(impostor, OPTIONS.target_far))


def _plant(site, gallery, result, key=None, raw=None):
    """Write ``result`` as c01's part (signed with ``key``), or the bytes ``raw``."""
    parts = PartsFolder(gallery, key=key)
    if raw is None:
        parts.write(result, site["key"])
        return parts._shown("c01")
    os.makedirs(parts.path, mode=0o700, exist_ok=True)
    path = parts._shown("c01")
    with open(path, "wb") as handle:
        handle.write(raw)
    return path


def _bomb():
    """A part whose npz member inflates to 300 MB from about 300 KB."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("prototypes.npy", "w", force_zip64=True) as member:
        block = bytes(1 << 20)
        for _ in range(300):
            member.write(block)
    return PART_MAGIC + UNSIGNED + b"\n" + buffer.getvalue()


def _cases(site, tmp):
    """name -> (signing key file or None, how to plant the part given the gallery path)."""
    key, other = site["root"] / "key", site["root"] / "other-key"
    k, o = key.read_bytes(), other.read_bytes()
    honest = encode_result(_forged(site, threshold=0.95), "")

    def fifo(g):
        os.makedirs(f"{g}.parts", mode=0o700, exist_ok=True)
        os.mkfifo(PartsFolder(g)._shown("c01"))

    def link(g):
        os.makedirs(f"{g}.parts", mode=0o700, exist_ok=True)
        os.symlink(tmp / "victim.txt", PartsFolder(g)._shown("c01"))

    def linked_folder(g):
        elsewhere = tmp / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        os.symlink(tmp / "victim.txt", elsewhere / PartsFolder(g)._name("c01"))
        os.symlink(elsewhere, f"{g}.parts")

    def oversized(g):
        path = _plant(site, g, None, raw=PART_MAGIC + UNSIGNED + b"\n" + honest)
        os.truncate(path, 300 << 20)  # a hole: no disk used

    def open_folder(g):
        _plant(site, g, _forged(site))
        os.chmod(f"{g}.parts", 0o777)

    return {
        "forged, unsigned (key set)": (key, lambda g: _plant(site, g, _forged(site))),
        "forged, another key": (key, lambda g: _plant(site, g, _forged(site), key=o)),
        "signed part, payload edited": (key, lambda g: _edit_payload(
            _plant(site, g, _forged(site), key=k))),
        "NaN prototypes (key set)": (key, lambda g: _plant(
            site, g, _forged(site, prototypes=np.full((1, site["features"].shape[1]),
                                                      np.nan)))),
        "NaN prototypes (no key)": (None, lambda g: _plant(
            site, g, _forged(site, prototypes=np.full((1, site["features"].shape[1]),
                                                      np.nan)))),
        "accept-all threshold (no key)": (None, lambda g: _plant(
            site, g, _forged(site, threshold=-1e9))),
        "NaN held-out scores (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout={"impostor": np.array([np.nan])}))),
        "wrong dimension (no key)": (None, lambda g: _plant(
            site, g, _forged(site, prototypes=np.ones((1, 3))))),
        "held-out scores missing (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout=None))),
        "held-out impostor scores empty (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout={"impostor": np.zeros(0), "genuine": np.ones(1),
                                            "impostor_row": np.zeros(0, dtype=int)}))),
        "held-out genuine scores only (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout={"genuine": np.ones(1)}))),
        "held-out search rows missing (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout={"impostor": np.array([0.5, 0.6]),
                                            "genuine": np.ones(1)}))),
        "threshold not that of its held-out scores (no key)": (None, lambda g: _plant(
            site, g, _forged(site, heldout=_low_heldout(site).heldout))),
        "Z-norm not that of its held-out scores (no key)": (None, lambda g: _plant(
            site, g, _forged(site, normalization={"kind": "znorm", "mean": -1e6,
                                                  "std": 1.0, "n": 2}))),
        "Z-norm with one more entry, NaN (no key)": (None, lambda g: _plant(
            site, g, _forged(site, normalization=dict(_forged(site).normalization,
                                                      junk=float("nan"))))),
        "Z-norm mean an integer too large for a float (no key)": (None, lambda g: _plant(
            site, g, _forged(site, normalization={"kind": "znorm", "mean": 10 ** 400,
                                                  "std": 1.0, "n": 2}))),
        "provenance omega an integer too large for a float (no key)": (None, lambda g: _plant(
            site, g, _forged(site, provenance=dict(PROVENANCE, omega=10 ** 400)))),
        "provenance without m, row without m (no key)": (None, lambda g: _plant(
            site, g, _forged(site, provenance={k: v for k, v in PROVENANCE.items()
                                               if k != "m"}, row={"client": "c01"}))),
        "summary row printed raw: a terminal escape (no key)": (None, lambda g: _plant(
            site, g, _forged(site, row=dict(_forged(site).row, m="\x1b]0;pwned\x07"),
                             provenance=dict(PROVENANCE, m="\x1b]0;pwned\x07")))),
        "provenance cv_off_scale not a pair of counts (no key)": (None, lambda g: _plant(
            site, g, _forged(site, provenance=dict(PROVENANCE, cv_off_scale=5)))),
        "truncated": (None, lambda g: _plant(site, g, None, raw=(
            PART_MAGIC + UNSIGNED + b"\n" + honest)[:300])),
        "zip bomb": (None, lambda g: _plant(site, g, None, raw=_bomb())),
        "300 MiB part (sparse)": (None, oversized),
        "FIFO": (None, fifo),
        "part is a symlink to a victim": (None, link),
        "folder is a symlink": (None, linked_folder),
        "folder writable by others": (None, open_folder),
    }


def _edit_payload(path):
    data = bytearray(Path(path).read_bytes())
    data[-20] ^= 0xFF
    Path(path).write_bytes(bytes(data))


REFUSED_FOLDERS = ("folder is a symlink", "folder writable by others")


def test_hostile_parts(site, tmp_path):
    victim = tmp_path / "victim.txt"
    pool = Workers(timeout=120)
    counts = {"cases": 0, "retrained": 0, "refused": 0, "accepts": 0,
              "files written outside": 0, "exit 4": 0, "hangs": 0, "failures": 0}
    failures = []
    try:
        for name, (key, plant) in _cases(site, tmp_path).items():
            victim.write_text("precious\n")
            gallery = tmp_path / f"g{counts['cases']}.h5"
            plant(gallery)
            env = {"SSGALLERY_KEY_FILE": str(key) if key else None}
            # not -q: the client table and summary (which a forged part's row would
            # reach) are printed
            r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery,
                          "--resume", *ARGS], env=env)
            counts["cases"] += 1
            counts["hangs"] += bool(r.get("hang"))
            counts["exit 4"] += r.get("code") == 4
            counts["files written outside"] += victim.read_text() != "precious\n"
            if name in REFUSED_FOLDERS:
                ok = clean_error(r) and "parts folder" in r["stderr"]
                counts["refused" if ok else "failures"] += 1
            else:
                verdict = pool.run(["verify", site["impostor"], "--claim", "c01",
                                    "--gallery", gallery, "-q"], env=env)
                counts["accepts"] += verdict.get("code") == 0
                ok = r.get("code") == 0 and "trained again" in r["stderr"] \
                    and verdict.get("code") == 1 \
                    and "\x1b" not in r["stdout"] + r["stderr"]
                counts["retrained" if ok else "failures"] += 1
            if not ok:
                failures.append((name, r))
            shutil.rmtree(f"{gallery}.parts", ignore_errors=True)
            if os.path.islink(f"{gallery}.parts"):
                os.unlink(f"{gallery}.parts")
    finally:
        pool.close()
    line = report("families 1-2, hostile compress parts", counts)
    assert not failures, (line, failures)
    assert counts["accepts"] == counts["files written outside"] == counts["exit 4"] == 0, line


def test_plain_compress_never_writes_through_a_parts_symlink(site, tmp_path):
    """Without --resume: a parts folder that is a link to a folder holding a link named
    like a part, to a victim file: refused before any training; the victim untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    gallery = tmp_path / "g.h5"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for client in ("c00", "c01", "c02", "c03"):
        os.symlink(victim, elsewhere / PartsFolder(gallery)._name(client))
    os.symlink(elsewhere, f"{gallery}.parts")
    pool = Workers()
    try:
        r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery, "-q",
                      *ARGS])
    finally:
        pool.close()
    assert clean_error(r) and "symbolic link" in r["stderr"], r
    assert victim.read_text() == "precious\n" and not gallery.exists()
    assert all(stat.S_ISLNK(os.lstat(p).st_mode) for p in elsewhere.iterdir())


def test_a_part_calibrating_to_accept_all_is_never_written(site, tmp_path):
    """A part consistent on its own (threshold and Z-norm those of its held-out scores)
    whose held-out scores calibrate, pooled with the other clients' in ``znorm-global``,
    to a threshold that accepts every probe: one line, no gallery (before: written with
    that threshold; verify then refused the gallery). 6 clients at target FAR 0.1, where
    honest clients of 5 impostor people accept: at 1 %, or with 3 impostor people (also
    at 0.1-0.3), the pooled T, leaving one person out, sits above every score the
    clients give, c01's forged ones included: no client accepts anyone, nothing to
    refuse."""
    far = 0.1
    gallery = tmp_path / "g.h5"
    PartsFolder(gallery).write(_calibrating_to_accept_all(site, far), run_key(
        "c01", site["fingerprint"], replace(site["options"], target_far=far)))
    pool = Workers(timeout=120)
    try:
        r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery,
                      "--resume", "-q", *ARGS[:-1], "znorm-global",
                      "--target-far", str(far)])
    finally:
        pool.close()
    assert clean_error(r) and "after the calibration" in r["stderr"], r
    assert "c01" in r["stderr"] and not gallery.exists()


def _many_members(n):
    """An npz-looking payload: one empty local member ``beta.npy`` and a zip directory
    listing it ``n`` times (46 + 8 bytes an entry)."""
    import struct

    name = b"beta.npy"
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0)
    entry = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0,
                        len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                      len(entry) * n, len(local) + len(name), 0)
    return local + name + entry * n + end


def test_a_zip_directory_of_a_million_entries_is_refused_unparsed():
    """A part or a Dask result of 54 MB whose zip directory lists a member a million
    times: refused from the zip's end record, before the directory is parsed (before:
    a million ZipInfo objects, 555 MB peak RSS and 11 s, only then a bad part)."""
    import tracemalloc

    from ssgallery.app.parts import BadPart, decode_result

    payload = _many_members(1_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(BadPart, match="zip directory"):
            decode_result(payload, "g.h5.parts/x.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def test_signed_parts_are_bound_to_their_client_run_and_store(site, tmp_path):
    """The part's HMAC covers its client and run key (store fingerprint, options
    digest), so a part signed with the host's key for anything else is never taken:
    another client's part under c01's name, c01's part of a run with other options or
    of another store. The control, signed for this very run, is taken: the key is what
    vouches for a part."""
    import json

    k = (site["root"] / "key").read_bytes()
    other_options = replace(site["options"], m=2)
    plants = {
        "another client's part": ("c00", run_key("c00", site["fingerprint"],
                                                 site["options"])),
        "another run's options": ("c01", run_key("c01", site["fingerprint"], other_options)),
        "another store": ("c01", run_key("c01", "0" * 64, site["options"])),
        "this run (control)": ("c01", site["key"]),
    }
    env = {"SSGALLERY_KEY_FILE": str(site["root"] / "key")}
    pool = Workers(timeout=120)
    try:
        for name, (client, key) in plants.items():
            gallery = tmp_path / f"{len(os.listdir(tmp_path))}.h5"
            parts = PartsFolder(gallery, key=k)
            parts.write(_forged(site, client=client), key)
            if client != "c01":  # planted under c01's name
                os.rename(parts._shown(client), parts._shown("c01"))
            r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery,
                          "--resume", "--json", *ARGS], env=env)
            assert r["code"] == 0, (name, r)
            resumed = json.loads(r["stdout"])["resumed"]
            assert resumed == (["c01"] if name.endswith("(control)") else []), (name, r)
    finally:
        pool.close()


def test_a_part_of_another_run_with_a_provenance_not_an_object_is_a_bad_part(site, tmp_path):
    """``--resume`` reads a part of another run for its provenance, to name its client
    (`ssgallery.app.update.warn_retrained`): a provenance that is not a JSON object is
    a bad part, reported, its client trained again (was an AttributeError)."""
    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressRun

    gallery = tmp_path / "g.h5"
    PartsFolder(gallery).write(_forged(site, provenance=["not", "an", "object"]),
                               run_key("c01", "0" * 64, site["options"]))
    said = []
    s = compress(site["root"] / "e.h5", gallery, OPTIONS,
                 CompressRun(clients="c01", resume=True, warn=said.append))
    assert s.resumed == [] and s.trained == ["c01"]
    shown = PartsFolder(gallery)._shown("c01")
    assert said == [(f"{shown}: unreadable (TypeError: meta or its provenance is not a JSON "
                     "object); a bad part: client 'c01' is trained again")]


def test_held_out_scores_whose_spread_overflows_are_a_bad_part(site, tmp_path):
    """A part whose held-out impostor scores are finite but of 1e308 (its threshold that of
    those scores at the target FAR): compress --resume computed their Z-norm to compare
    with the part's and numpy printed 'RuntimeWarning: overflow encountered in square'
    and a line of its source on stderr before calling it a bad part. Now the part is bad
    for that reason, in one warning line, and its client trained again."""
    impostor = np.array([1e308, -1e308, 0.5])
    part = _forged(site, heldout={"impostor": impostor, "genuine": np.array([1.0]),
                                  "impostor_row": np.array([5, 10, 11])},
                   threshold=threshold_at_far(impostor, OPTIONS.target_far),
                   normalization={"kind": "znorm", "mean": 0.1, "std": 1.0, "n": 3})
    gallery = tmp_path / "g.h5"
    _plant(site, gallery, part)
    pool = Workers(timeout=120)
    try:
        r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery,
                      "--resume", *ARGS])
    finally:
        pool.close()
    assert r.get("code") == 0, r
    assert "held-out impostor scores whose mean or spread overflows a float; a bad part: " \
           "client 'c01' is trained again" in r["stderr"], r["stderr"]
    assert "Warning:" not in r["stderr"] and "_methods.py" not in r["stderr"], r["stderr"]


def test_weights_beyond_the_part_s_own_objective_are_a_bad_part(site, tmp_path):
    """A part whose weights its own provenance's training objective cannot have given
    (beta 1e6 beside omega 1 and lambda_abs 1e-4: ||beta|| <= 100, Eq. 2) passed the
    result checks (they built the model without its provenance) and was written into
    the gallery, where every reader refuses the client since the record check
    (`ssgallery.formats.gallery.checks`): compress --resume said nothing, exit 0.
    The part is checked as a gallery's record is: a bad part, its client trained again,
    and the gallery it writes is read."""
    part = _forged(site, beta=np.array([1e6]),
                   provenance=dict(PROVENANCE, lambda_abs=1e-4))
    gallery = tmp_path / "g.h5"
    _plant(site, gallery, part)
    pool = Workers(timeout=120)
    try:
        r = pool.run(["compress", "--store", site["root"] / "e.h5", "-o", gallery,
                      "--resume", *ARGS])
        verdict = pool.run(["verify", site["impostor"], "--claim", "c01", "--gallery",
                            gallery, "-q"])
    finally:
        pool.close()
    assert r.get("code") == 0, r
    assert "has weights beyond its training objective: ||beta|| 1e+06 > sqrt(omega / " \
           "lambda_abs) 100 (Eq. 2)" in r["stderr"], r["stderr"]
    assert "client 'c01' is trained again" in r["stderr"], r["stderr"]
    assert verdict.get("code") == 1, verdict
