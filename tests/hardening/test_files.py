"""Tampered, rotten and fuzzed galleries and stores, and bad probe images, through the
real CLI (worker processes, killed on a hang). Every case must end in a clean one-line
error (exit 2), a failure to acquire (exit 3) or an unchanged verdict: never an
accept, never a traceback, never a hang."""

import json
import os
import shutil

import h5py
import numpy as np
import pytest
from conftest import KINDS, classify, clean_error, report
from helpers import make_faces, rehash_gallery, rehash_store, write_non_faces

from ssgallery.app.compress import CompressOptions, compress
from ssgallery.app.enroll import enroll
from ssgallery.errors import FormatError
from ssgallery.formats.seal import USERBLOCK, seal_file

N_FUZZ = 120


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("hardening")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5)
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "g.h5", CompressOptions(m=2, cv_folds=0))
    impostor = os.path.join(faces, "c02", "0.png")  # claimed as c01: must never be accepted
    genuine = os.path.join(faces, "c01", "0.png")
    return {"root": root, "faces": faces, "impostor": impostor, "genuine": genuine}


def _verify_args(built, gallery):
    return ["verify", built["impostor"], built["genuine"], "--claim", "c01", "--gallery", gallery]


def _fuzz(path, out, rng, reseal):
    data = bytearray(path.read_bytes())
    for _ in range(int(rng.integers(1, 4))):
        lo = USERBLOCK if reseal else 0
        at = int(rng.integers(lo, len(data)))
        data[at] ^= int(rng.integers(1, 256))
    out.write_bytes(bytes(data))
    if reseal:
        seal_file(out)
    return out


@pytest.mark.parametrize("reseal", [False, True], ids=["raw", "resealed"])
def test_random_byte_corruptions_of_a_gallery(built, workers, tmp_path, reseal):
    """>= 100 galleries with 1-3 random bytes changed (fixed seed). raw: as bit rot
    leaves them (the seal refuses a damaged chunk before HDF5 parses a byte of it; verify
    reads a few chunks, so damage elsewhere leaves its verdict unchanged); resealed: the seal
    recomputed after the damage, so HDF5 and the in-file digests and checks see it."""
    gallery = built["root"] / "g.h5"
    baseline = workers.run(_verify_args(built, gallery))
    assert baseline["code"] == 1 and baseline["stdout"].split("\n")[0].endswith("REJECT")
    rng = np.random.default_rng(8 if reseal else 7)
    counts = dict.fromkeys(KINDS, 0)
    examples = {}
    for i in range(N_FUZZ):
        bad = _fuzz(gallery, tmp_path / f"g{i}.h5", rng, reseal)
        result = workers.run(_verify_args(built, bad))
        kind = classify(result, baseline)
        counts[kind] += 1
        examples.setdefault(kind, result)
        bad.unlink()
    line = report(f"corrupted galleries ({'re-sealed' if reseal else 'raw'}): {N_FUZZ}",
                  counts)
    assert counts["accepts"] == counts["tracebacks"] == counts["hangs"] == 0, \
        (line, examples)
    assert counts["other"] == 0, (line, examples.get("other"))
    if not reseal:  # HDF5 never gets a damaged byte: refused, or not read at all
        assert counts["clean errors"] + counts["unchanged verdicts"] == N_FUZZ, line


def test_random_byte_corruptions_of_a_store(built, workers, tmp_path):
    store = built["root"] / "e.h5"
    rng = np.random.default_rng(9)
    counts = {"clean errors": 0, "read unchanged": 0, "failures": 0}
    baseline = workers.run(["info", "--store", store, "--json"])
    assert baseline["code"] == 0
    for i in range(40):
        bad = _fuzz(store, tmp_path / f"e{i}.h5", rng, reseal=i % 2 == 1)
        result = workers.run(["info", "--store", bad, "--json"])
        if clean_error(result):
            counts["clean errors"] += 1
        elif result.get("code") == 0 and json.loads(result["stdout"])["store"]["n_images"] \
                == json.loads(baseline["stdout"])["store"]["n_images"]:
            counts["read unchanged"] += 1
        else:
            counts["failures"] += 1
            print("store failure:", result)
        bad.unlink()
    line = report("corrupted stores: 40", counts)
    assert counts["failures"] == 0, line


def _edit(f, name):
    """The issue's named edits, applied with h5py."""
    grp = f["clients/c01"]

    def replace(group, key, value):
        del group[key]
        group.create_dataset(key, data=value)

    if name == "threshold -inf":
        grp.attrs["threshold"] = -np.inf
    elif name == "threshold -1e9":
        grp.attrs["threshold"] = -1e9
    elif name == "intercept 1e9":
        grp.attrs["intercept"] = 1e9
    elif name == "beta inf":
        replace(grp, "beta", np.full(grp["beta"].shape, np.inf))
    elif name == "zero prototypes":
        replace(grp, "prototypes", grp["prototypes"][()][:0])
        replace(grp, "beta", grp["beta"][()][:0])
    elif name == "negative gamma":
        sim = json.loads(grp.attrs["similarity"])
        grp.attrs["similarity"] = json.dumps(dict(sim, gamma=-1.0))
    elif name == "injected client":
        f.copy(grp, "clients/c99")
        f["clients/c99"].attrs["threshold"] = -1e300
    elif name == "flipped PCA basis":
        comp = f["matcher/components"][()]
        raw = comp.view(np.uint8).copy()
        flat = raw.reshape(-1)
        flat[np.random.default_rng(0).integers(0, flat.size, 8)] ^= 0x40
        replace(f["matcher"], "components", raw.view(comp.dtype).reshape(comp.shape))
    elif name == "NaN threshold":
        grp.attrs["threshold"] = np.nan
    elif name == "NaN beta":
        replace(grp, "beta", np.full(grp["beta"].shape, np.nan))
    elif name == "NaN prototypes":
        replace(grp, "prototypes", np.full(grp["prototypes"].shape, np.nan))
    elif name == "NaN mean":
        replace(f["matcher"], "mean", np.full(f["matcher/mean"].shape, np.nan))
    elif name == "external link":
        other = os.path.join(os.path.dirname(f.filename), "elsewhere.h5")
        with h5py.File(other, "w") as g:
            g["beta"] = np.full(grp["beta"].shape, 1e9)
        del grp["beta"]
        grp["beta"] = h5py.ExternalLink(other, "beta")
    elif name == "virtual dataset":
        shape = grp["beta"].shape
        layout = h5py.VirtualLayout(shape=shape, dtype="f8")
        layout[:] = h5py.VirtualSource("missing.h5", "beta", shape=shape)
        del grp["beta"]
        grp.create_virtual_dataset("beta", layout, fillvalue=1e9)
    else:
        raise KeyError(name)


EDITS = ["threshold -inf", "threshold -1e9", "intercept 1e9", "beta inf", "zero prototypes",
         "negative gamma", "injected client", "flipped PCA basis", "NaN threshold",
         "NaN beta", "NaN prototypes", "NaN mean", "external link", "virtual dataset"]


def test_named_gallery_edits(built, workers, tmp_path):
    """Each edit of the issue three ways: as made (the seal refuses it), re-sealed (the
    in-file digests refuse it) and re-sealed after re-hashing the digests (the semantic
    checks refuse it). The injected client is claimed; the others claim c01."""
    baseline = workers.run(_verify_args(built, built["root"] / "g.h5"))
    counts = {"clean errors": 0, "failures": 0}
    failures = []
    for name in EDITS:
        for how in ("as made", "re-sealed", "re-hashed"):
            g = tmp_path / f"{name.replace(' ', '_')}-{how[:4]}.h5"
            shutil.copy(built["root"] / "g.h5", g)
            with h5py.File(g, "a") as f:
                _edit(f, name)
            if how == "re-hashed":
                try:
                    rehash_gallery(g)
                except FormatError:  # links cannot even be hashed: re-seal only
                    seal_file(g)
            elif how == "re-sealed":
                seal_file(g)
            args = _verify_args(built, g)
            if name == "injected client":
                args[4] = "c99"
            result = workers.run(args)
            ok = clean_error(result) and classify(result, baseline) == "clean errors"
            counts["clean errors" if ok else "failures"] += 1
            if not ok:
                failures.append((name, how, result))
    line = report(f"tampered galleries: {len(EDITS) * 3}", counts)
    assert not failures, (line, failures)


def test_tampered_stores(built, workers, tmp_path):
    edits = ["flipped image byte", "labels swapped", "matcher mean NaN"]
    counts = {"clean errors": 0, "failures": 0}
    failures = []
    for name in edits:
        for how in ("as made", "re-hashed"):
            s = tmp_path / f"{name.replace(' ', '_')}-{how[:4]}.h5"
            shutil.copy(built["root"] / "e.h5", s)
            with h5py.File(s, "a") as f:
                if name == "flipped image byte":
                    images = f["images"][()]
                    images[0, 0, 0] = images[0, 0, 0] ^ 0xFF
                    del f["images"]
                    f.create_dataset("images", data=images)
                elif name == "labels swapped":
                    labels = f["labels"][()][::-1]
                    del f["labels"]
                    f.create_dataset("labels", data=labels)
                else:
                    mean = np.full(f["matcher/mean"].shape, np.nan, dtype=np.float32)
                    del f["matcher/mean"]
                    f["matcher"].create_dataset("mean", data=mean)
            if how == "re-hashed":
                rehash_store(s)
            result = workers.run(["compress", "--store", s, "-o", tmp_path / "out.h5",
                                  "--m", "1", "--cv-folds", "0", "--max-iter", "2"])
            # a re-hashed edit of the images or labels is a store someone enrolled that
            # way (nothing to refuse); it must still end in a gallery or a clean error
            ok = clean_error(result) or (how == "re-hashed" and name != "matcher mean NaN"
                                         and result.get("code") == 0)
            counts["clean errors" if ok else "failures"] += 1
            if not ok:
                failures.append((name, how, result))
    line = report(f"tampered stores: {len(edits) * 2}", counts)
    assert not failures, (line, failures)


def test_bad_probe_images(built, workers, tmp_path):
    """Non-faces fail to acquire (exit 3); broken files are clean errors (exit 2)."""
    corpus = write_non_faces(str(tmp_path / "nonfaces"))
    with open(built["genuine"], "rb") as handle:
        head = handle.read(200)
    broken = {"text.png": b"this is text, not a PNG", "empty.png": b"",
              "truncated.png": head,
              "bomb-header.png": _png_header(200_000, 200_000)}
    for name, data in broken.items():
        corpus[name] = str(tmp_path / name)
        with open(corpus[name], "wb") as handle:
            handle.write(data)
    corpus["folder"] = str(tmp_path)
    counts = {"failures to acquire": 0, "clean errors": 0, "failures": 0}
    failures = []
    for name, path in corpus.items():
        result = workers.run(["verify", path, "--claim", "c01",
                              "--gallery", built["root"] / "g.h5"])
        if result.get("code") == 3 and "FAILURE-TO-ACQUIRE" in result["stdout"]:
            counts["failures to acquire"] += 1
        elif clean_error(result):
            counts["clean errors"] += 1
        else:
            counts["failures"] += 1
            failures.append((name, result))
    line = report(f"bad probe images: {len(corpus)}", counts)
    assert not failures, (line, failures)
    assert counts["failures to acquire"] >= 11  # every non-face of the corpus


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_special_file_probes(built, tmp_path, special):
    from conftest import Workers

    pool = Workers(timeout=15)
    path = "/dev/zero" if special == "/dev/zero" else str(tmp_path / "fifo.png")
    if special == "fifo":
        os.mkfifo(path)
    try:
        result = pool.run(["verify", path, "--claim", "c01", "--gallery", built["root"] / "g.h5"])
    finally:
        pool.close()
    assert clean_error(result), result


def _png_header(width, height):
    """A valid PNG signature and IHDR claiming a huge image, then nothing."""
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + chunk + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
