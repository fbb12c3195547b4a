"""Compact prototypes: a gallery stores its prototypes in the smallest dtype that holds
every value exactly (`ssgallery.formats.prototypes`). A black-box matcher's prototypes
are training images by default (``--max-iter auto`` is 0), whole numbers in [0, 255]:
uint8, 1 byte a value instead of 8, read back as the float64 values they were, so every
score is the float64 gallery's bit for bit. Real CLI, the example matcher program of
docs/external-matcher.md, fixed seeds."""

import json
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from helpers import edit_h5, make_faces, rehash_gallery, rehash_store

from ssgallery.cli import main
from ssgallery.errors import FormatError

PROGRAM = f"{sys.executable} {Path(__file__).resolve().parent / 'matchers' / 'example_mad.py'}"
ENV = {"SSGALLERY_MATCHER_CMD": PROGRAM}
SIGN, PRIVACY = b"s" * 32, b"p" * 32  # fixed keys


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], env=ENV)


@pytest.fixture(scope="module")
def black_box(tmp_path_factory):
    """A black-box store and its gallery from compress's defaults (m 5, never moved)."""
    root = tmp_path_factory.mktemp("compact")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=6, shape=(16, 12))
    res = _run("enroll", faces, "--store", root / "e.h5", "--matcher-cmd", PROGRAM, "-q")
    assert res.exit_code == 0, res.output
    res = _run("compress", "--store", root / "e.h5", "-o", root / "g.h5", "--cv-folds", "2",
               "-q")
    assert res.exit_code == 0, res.output
    probes = sorted(str(p) for p in Path(faces).glob("*/*.png"))
    return root, probes


def _float64_layout(src, dst):
    """``dst``: ``src`` as a gallery of format version 2 stores the same models (what
    ssgallery wrote before uint8 prototypes): float64 prototypes, digests made again."""
    shutil.copyfile(src, dst)
    with edit_h5(dst) as f:
        names = [f"clients/{c}/prototypes" for c in f["clients"]] + ["index/prototypes"]
        for name in names:
            values = f[name][()].astype(np.float64)
            del f[name]
            f.create_dataset(name, data=values)
        f.attrs["format_version"] = 2
    rehash_gallery(dst)
    return dst


def _info(gallery):
    res = _run("info", "--gallery", gallery, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["gallery"]


def _scores(gallery, probes, *keys):
    res = _run("verify", *probes, "--claim", "c01", "--gallery", gallery, "--json", *keys)
    assert res.exit_code in (0, 1), res.output
    return [(r["score"], r["accept"]) for r in json.loads(res.stdout)["results"]]


def test_black_box_prototypes_are_stored_as_uint8_and_info_counts_them(black_box, tmp_path):
    """412,216 bytes per client at m 5 on 92x112 images were float64 whole numbers: the
    gallery stores them as uint8 (format version 3), and info's bytes per client are
    m (d + 8) + 16, not m (d + 1) 8 + 16."""
    root, _ = black_box
    with h5py.File(root / "g.h5") as f:
        assert f.attrs["format_version"] == 3
        assert {f[f"clients/{c}/prototypes"].dtype for c in f["clients"]} == {np.dtype("u1")}
        assert f["index/prototypes"].dtype == np.uint8
    info = _info(root / "g.h5")
    d = info["dimension"]
    assert d == 16 * 12 and info["prototype_dtype"] == "uint8"
    assert [(r["m"], r["bytes"]) for r in info["clients"]] == [(5, 5 * (d + 8) + 16)] * 4
    old = _info(_float64_layout(root / "g.h5", tmp_path / "old.h5"))
    assert old["prototype_dtype"] == "float64"
    assert [r["bytes"] for r in old["clients"]] == [5 * (d + 1) * 8 + 16] * 4
    assert info["file_bytes"] < old["file_bytes"]
    res = _run("info", "--gallery", root / "g.h5", "--client", "c01")
    assert res.exit_code == 0 and f"m = 5, {5 * (d + 8) + 16} bytes" in res.output, res.output


def test_verify_scores_are_the_float64_gallerys_bit_for_bit(black_box, tmp_path):
    """The same models in the old float64 layout (version 2) still read, and every score
    and decision of verify, and every model read back, is the uint8 gallery's."""
    root, probes = black_box
    old = _float64_layout(root / "g.h5", tmp_path / "old.h5")
    with h5py.File(root / "g.h5") as f:
        assert f["clients/c01/prototypes"].dtype == np.uint8  # two layouts, one content
    scores = _scores(root / "g.h5", probes)
    assert scores == _scores(old, probes)
    assert {accept for _, accept in scores} == {True, False}
    from ssgallery.formats.gallery import read_gallery

    new, before = (read_gallery(g, arrays=True).clients for g in (root / "g.h5", old))
    for cid, model in new.items():
        assert model.prototypes.dtype == np.float64
        assert model.prototypes.tobytes() == before[cid].prototypes.tobytes()
        assert (model.prototype_dtype, before[cid].prototype_dtype) == ("uint8", "float64")
    res = _run("identify", probes[0], "--gallery", root / "g.h5", "--json")
    again = _run("identify", probes[0], "--gallery", old, "--json")
    assert res.exit_code == again.exit_code and res.exit_code in (0, 1), res.output
    ranked = [json.loads(r.stdout)["results"][0]["candidates"] for r in (res, again)]
    assert ranked[0] == ranked[1]


@pytest.mark.parametrize("where, forge, message", [
    ("clients/c01/prototypes", np.int32, ("client 'c01' has prototypes stored as int32; a "
                                          "format-3 gallery stores them as uint8")),
    ("clients/c01/prototypes", np.float32, "client 'c01' has prototypes stored as float32"),
    ("clients/c01/prototypes", "version 2", ("client 'c01' has prototypes stored as uint8; "
                                             "a format-2 gallery stores them as float64")),
    ("clients/c01/prototypes", "shape", "client 'c01' has prototypes of dimension 191"),
    ("index/prototypes", np.float32, "the search index has prototypes stored as float32"),
])
def test_a_forged_prototype_dtype_or_shape_is_refused_in_one_line(black_box, tmp_path,
                                                                  where, forge, message):
    """A re-hashed file (what anybody who can write an unsigned gallery can make) whose
    prototypes have a dtype its format version does not allow, or another shape, is
    refused with one line naming the file: exit 2, no traceback."""
    root, probes = black_box
    g = tmp_path / "forged.h5"
    shutil.copyfile(root / "g.h5", g)
    with edit_h5(g) as f:
        values = f[where][()]
        if forge == "version 2":
            f.attrs["format_version"] = 2
        else:
            values = values[:, :-1] if forge == "shape" else values.astype(forge)
            del f[where]
            f.create_dataset(where, data=values)
    rehash_gallery(g)
    if where.startswith("index"):
        res = _run("info", "--gallery", g)
    else:
        res = _run("verify", probes[0], "--claim", "c01", "--gallery", g)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and str(g) in res.stderr and message in res.stderr, \
        res.stderr


_INDEX = "the search index"


@pytest.mark.parametrize("forged, refusals", [
    (["clients/c02/prototypes"], {"c02": "client 'c02'", "--svm": "client 'c02'"}),
    (["index/prototypes"], {"identify": _INDEX, "--svm": _INDEX}),
    (["clients", "index/prototypes"], {"c01": "client 'c01'", "identify": _INDEX}),
], ids=["one-client", "index", "every-dataset"])
def test_a_version_3_gallery_holds_uint8_prototypes_only(black_box, tmp_path, forged,
                                                         refusals):
    """The writer gives version 3 only to a gallery whose prototypes are all uint8 (one
    dtype for the whole file, ``/index`` included; float64 ones are version 2): a
    re-hashed version-3 file with float64 prototypes (the same values) in one client, in
    the index or everywhere is refused with one line naming the file and what holds
    them, exit 2: by verify of that client, identify and info --svm (main read all
    three)."""
    root, probes = black_box
    g = tmp_path / "mixed.h5"
    shutil.copyfile(root / "g.h5", g)
    with edit_h5(g) as f:
        assert f.attrs["format_version"] == 3
        names = [f"clients/{c}/prototypes" for c in f["clients"]] if "clients" in forged \
            else []
        for name in names + [n for n in forged if n != "clients"]:
            values = f[name][()].astype(np.float64)
            del f[name]
            f.create_dataset(name, data=values)
    rehash_gallery(g)
    commands = {"identify": ("identify", probes[0], "--gallery", g),
                "--svm": ("info", "--gallery", g, "--svm")}
    for key, who in refusals.items():
        args = commands.get(key, ("verify", probes[0], "--claim", key, "--gallery", g))
        res = _run(*args)
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr == (f"ssgallery: error: {g}: refused: {who} has prototypes stored "
                              "as float64; a format-3 gallery stores them as uint8\n"), \
            (args, res.stderr)


@pytest.mark.parametrize("forge, found", [
    (str, "found str '{v}'"),
    (float, "found float {v}.0"),
    (lambda v: np.True_, "found bool True"),
    (lambda v: np.array([v]), "found an array of shape (1,)"),
], ids=["str", "float", "bool", "array"])
@pytest.mark.parametrize("name", ["g.h5", "e.h5"])
def test_a_format_version_that_is_not_an_integer_is_refused(black_box, tmp_path, name,
                                                            forge, found):
    """``format_version`` is an integer attribute (what every writer gives): the file's
    own version as a string ("3") or a float (3.0), a bool (True read as version 1) or an
    array in a re-hashed gallery (version 3) or store (version 2) is refused with one line
    naming the file, exit 2 (main read "3" and 3.0 as version 3)."""
    root, _ = black_box
    forged = tmp_path / name
    shutil.copyfile(root / name, forged)
    with h5py.File(forged, "a") as f:
        version = int(f.attrs["format_version"])
        f.attrs["format_version"] = forge(version)
    (rehash_gallery if name == "g.h5" else rehash_store)(forged)
    res = _run("info", "--gallery" if name == "g.h5" else "--store", forged)
    kind = "gallery" if name == "g.h5" else "enrollment store"
    assert res.exit_code == 2, res.output
    assert res.stderr == (f"ssgallery: error: {forged}: corrupt ssgallery {kind}: "
                          f"format_version must be an integer, {found.format(v=version)}\n"), \
        res.stderr


def test_signed_and_encrypted_uint8_gallery(black_box, tmp_path):
    """The signature and the encryption cover the uint8 layout: the encrypted gallery
    holds uint8 prototypes and scores as the plain one; a forged dtype in a signed
    gallery, re-hashed without the key, is refused by the signature."""
    from ssgallery.formats.gallery import FORMAT, FORMAT_VERSION, KIND, OLDEST_VERSION
    from ssgallery.formats.gallery.protected import rewrite_gallery
    from ssgallery.formats.hdf5 import open_checked

    root, probes = black_box
    sign, privacy = tmp_path / "sign.key", tmp_path / "privacy.key"
    sign.write_bytes(SIGN)
    privacy.write_bytes(PRIVACY)
    signed, enc = tmp_path / "signed.h5", tmp_path / "enc.h5"
    res = _run("compress", "--store", root / "e.h5", "-o", signed, "--cv-folds", "2", "-q",
               "--key-file", sign)
    assert res.exit_code == 0, res.output
    rewrite_gallery(signed, enc, key=SIGN, privacy_key=PRIVACY)  # signs a signed source only
    with open_checked(enc, FORMAT, FORMAT_VERSION, KIND, privacy_key=PRIVACY,
                      oldest=OLDEST_VERSION) as f:
        assert f["clients/c02/prototypes"].dtype == np.uint8 and f.attrs["hmac"]
    keys = ("--key-file", sign, "--privacy-key-file", privacy)
    assert _scores(enc, probes, *keys) == _scores(root / "g.h5", probes)
    with edit_h5(signed) as f:
        values = f["clients/c01/prototypes"][()].astype(np.float32)
        del f["clients/c01/prototypes"]
        f.create_dataset("clients/c01/prototypes", data=values)
    rehash_gallery(signed)
    res = _run("verify", probes[0], "--claim", "c01", "--gallery", signed, "--key-file", sign)
    assert res.exit_code == 2 and "signature does not match" in res.stderr, res.output


def test_moved_and_analytic_prototypes_stay_float64(tmp_path, black_box):
    """Prototypes that are not whole numbers in [0, 255] are never rounded: moved
    pixel prototypes (the black box's models with one client's prototypes scaled by
    0.999, written by write_gallery as compress does) and eigenface's keep float64 at
    format version 2, which older ssgallery reads, and read back bit for bit."""
    from ssgallery.formats.gallery import read_gallery, write_gallery
    from ssgallery.formats.hdf5 import read_state

    root, probes = black_box
    gallery = read_gallery(root / "g.h5", arrays=True)
    models = list(gallery.clients.values())
    models[1].prototypes = models[1].prototypes * 0.999
    with h5py.File(root / "g.h5") as f:
        state = read_state(f["matcher"])[0]
    write_gallery(tmp_path / "moved.h5", matcher_name=gallery.matcher_name,
                  matcher_config=gallery.matcher_config, matcher_state=state,
                  image_shape=gallery.header["image_shape"], clients=models)
    back = read_gallery(tmp_path / "moved.h5", arrays=True).clients
    assert all(back[m.client_id].prototypes.tobytes() == m.prototypes.tobytes()
               for m in models)
    assert _scores(tmp_path / "moved.h5", probes)[0][0] != _scores(root / "g.h5", probes)[0][0]
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5)
    for args in (("enroll", faces, "--store", tmp_path / "e.h5", "-q"),
                 ("compress", "--store", tmp_path / "e.h5", "-o", tmp_path / "eig.h5",
                  "--cv-folds", "2", "-q")):
        res = _run(*args)
        assert res.exit_code == 0, res.output
    for g in ("moved.h5", "eig.h5"):
        with h5py.File(tmp_path / g) as f:
            assert f.attrs["format_version"] == 2, g
            assert f["index/prototypes"].dtype == np.float64, g
            assert f["clients/c01/prototypes"].dtype == np.float64, g
        assert _info(tmp_path / g)["prototype_dtype"] == "float64"


@pytest.mark.parametrize("values, dtype", [
    ([[0.0, 255.0], [17.0, 3.0]], "uint8"),
    ([[0.0, 127.5]], "float64"),
    ([[0.0, 256.0]], "float64"),
    ([[-1.0, 3.0]], "float64"),
    ([[-0.0, 3.0]], "float64"),  # uint8 would give +0.0 back
    ([[np.nan, 3.0]], "float64"),
    ([[3.0 + 1e-13, 3.0]], "float64"),
])
def test_storage_dtype_is_uint8_only_when_exact(values, dtype):
    from ssgallery.formats.prototypes import storage_dtype, storage_version, stored_values

    arrays = [np.array(values), np.array([[1.0, 2.0]])]
    assert storage_dtype(arrays).name == dtype
    stored = arrays[0].astype(storage_dtype(arrays))
    version = storage_version(stored.dtype)
    assert version == {"uint8": 3, "float64": 2}[dtype]
    back, name = stored_values(stored, version, "client 'x'")
    assert name == dtype and back.dtype == np.float64
    assert back.tobytes() == arrays[0].tobytes()
    assert storage_dtype([]).name == "float64"
    with pytest.raises(FormatError, match="stored as uint8; a format-2 gallery"):
        stored_values(np.zeros((1, 2), np.uint8), 2, "client 'x'")
    with pytest.raises(FormatError, match="stored as float64; a format-3 gallery stores "
                       "them as uint8$"):
        stored_values(np.zeros((1, 2)), 3, "client 'x'")
