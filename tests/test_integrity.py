"""Trust the verdict (issue 8, part A): gallery/store format 2 digests, signatures,
semantic checks, links. Real files edited with h5py, real processes. No code from data
(a file never names the program that runs): tests/test_integrity_programs.py."""

import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from helpers import edit_h5, make_faces, rehash_gallery

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.app.verify import verify
from ssgallery.cli import main
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.gallery import read_client, read_gallery
from ssgallery.formats.gallery.protected import rewrite_gallery
from ssgallery.formats.store import load_store


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("trust")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5)
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "g.h5", CompressOptions(m=2))
    return root, faces


def _copy(src, dst):
    shutil.copy(src, dst)
    return dst


# ----------------------------------------------------------------------------- integrity

def test_v2_digests_are_checked_and_one_client_is_read(built, tmp_path):
    root, _ = built
    model = read_client(root / "g.h5", "c01")
    assert model.header["format_version"] == 2 and len(model.header["digest"]) == 64
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    with edit_h5(g) as f:
        f["clients/c02/beta"][0] += 1e-9
    read_client(g, "c01")  # another client's edit does not stop c01
    with pytest.raises(FormatError, match=r"g.h5: integrity check failed: client 'c02'"):
        read_client(g, "c02")
    with pytest.raises(FormatError, match=r"client 'c02'"):
        read_gallery(g)
    for edit, what in ((lambda f: f.attrs.__setitem__("target_far", 0.5), "the header"),
                       (lambda f: f["matcher/mean"].__setitem__(0, 7.0), "the matcher state")):
        g = _copy(root / "g.h5", tmp_path / "h.h5")
        with edit_h5(g) as f:
            edit(f)
        with pytest.raises(FormatError, match=f"integrity check failed: {what}"):
            read_client(g, "c01")


def test_injected_client_is_unknown_or_refused(built, tmp_path):
    root, _ = built
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    with edit_h5(g) as f:
        f.copy(f["clients/c01"], "clients/evil")
        f["clients/evil"].attrs["threshold"] = -1e300
    with pytest.raises(SsgalleryError, match=r"unknown client 'evil'"):
        read_client(g, "evil")
    with pytest.raises(FormatError, match=r"client groups and the client index differ"):
        read_gallery(g)
    rehash_gallery(g)  # consistent, but the model accepts everyone
    with pytest.raises(FormatError, match=r"client 'evil' would accept every probe"):
        read_client(g, "evil")


@pytest.mark.parametrize("client, name, value, message", [
    ("c01", "threshold", -1e9, "would accept every probe"),
    ("c01", "threshold", -np.inf, "NaN or infinite"),
    ("c01", "threshold", np.nan, "NaN or infinite"),
    ("c01", "intercept", 1e9, "would accept every probe"),
    ("c01", "similarity", json.dumps({"kind": "rbf", "gamma": -1.0}), "gamma"),
    ("c01", "beta", [np.inf, 1.0], "NaN or infinite"),
    ("c01", "beta", [1.0], "inconsistent prototypes"),
    ("c01", "prototypes", "zero-m", "inconsistent prototypes"),
    ("c01", "prototypes", "wrong-d", "dimension"),
    ("c01", "prototypes", "far", "far outside face space"),
    ("matcher", "components", "flip", "not orthonormal"),
    ("matcher", "mean", "nan", "NaN or infinite"),
    ("header", "image_shape", None, "image_shape"),
])
def test_rehashed_insane_values_are_refused(built, tmp_path, client, name, value, message):
    """Even a consistently re-hashed edit cannot make NaN, inf or accept-all."""
    root, faces = built
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    with edit_h5(g) as f:
        grp = f["clients/c01"]
        if client == "header":
            del f.attrs[name]
        elif client == "matcher":
            arr = f["matcher"][name][()]
            if value == "flip":
                arr[0, 5] = 1e3
            else:
                arr[3] = np.nan
            del f["matcher"][name]
            f["matcher"].create_dataset(name, data=arr)
        elif name in ("beta", "prototypes"):
            arr = grp[name][()]
            if isinstance(value, str):
                arr = {"zero-m": arr[:0], "wrong-d": arr[:, :-1], "far": arr * 1e6}[value]
            else:
                arr = np.asarray(value, dtype=float)
            del grp[name]
            grp.create_dataset(name, data=arr)
        else:
            grp.attrs[name] = value
    rehash_gallery(g)
    probe = os.path.join(faces, "c01", "0.png")
    with pytest.raises(FormatError, match=message) as info:
        verify(g, [probe], "c01")
    assert "\n" not in str(info.value) and str(g) in str(info.value)


def test_unreachable_threshold_is_read_and_rejects(built, tmp_path):
    """A threshold above the highest score the model can give rejects everyone (fail-safe):
    the gallery is read, verify says REJECT, and never_accepting names the client."""
    from ssgallery.formats.gallery import never_accepting, read_gallery

    root, faces = built
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    probe = os.path.join(faces, "c01", "0.png")
    score = verify(g, [probe], "c01")[0].score
    with edit_h5(g) as f:  # a reachable threshold first (below the probe's score)
        f["clients/c01"].attrs["threshold"] = score - 1.0
    rehash_gallery(g)
    assert verify(g, [probe], "c01")[0].accept
    # (on 4 people the pooled T at 1 % sits above the other clients' reach: 3 impostor
    # people each cannot place a 1 % tail)
    assert "c01" not in never_accepting(read_gallery(g, arrays=True).clients.values(), None)
    with edit_h5(g) as f:
        f["clients/c01"].attrs["threshold"] = 1e9
    rehash_gallery(g)
    rejected = verify(g, [probe], "c01")[0]
    assert not rejected.accept and rejected.score is not None
    assert "c01" in never_accepting(read_gallery(g, arrays=True).clients.values(), None)


@pytest.mark.parametrize("claim", ["/clients/c01", "c01/", "./c01", ".", "/matcher", "",
                                   "clients", "c01\n", "../g"])
def test_claims_are_names_not_paths(built, claim):
    root, faces = built
    probe = os.path.join(faces, "c01", "0.png")
    r = CliRunner().invoke(main, ["verify", probe, "--claim", claim, "--gallery",
                                  str(root / "g.h5")])
    assert r.exit_code == 2 and "unknown client" in r.stderr, r.output
    assert r.stderr.count("\n") == 1


def test_links_and_virtual_datasets_are_not_followed(built, tmp_path):
    root, _ = built
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["beta"] = np.array([1.0, 1.0])
    for kind in ("external", "soft", "virtual"):
        g = _copy(root / "g.h5", tmp_path / f"{kind}.h5")
        with edit_h5(g) as f:
            del f["clients/c01/beta"]
            if kind == "external":
                f["clients/c01/beta"] = h5py.ExternalLink(str(other), "beta")
            elif kind == "soft":
                f["clients/c01/beta"] = h5py.SoftLink("/clients/c02/beta")
            else:
                layout = h5py.VirtualLayout(shape=(2,), dtype="f8")
                layout[:] = h5py.VirtualSource(str(other), "beta", shape=(2,))
                f["clients/c01"].create_virtual_dataset("beta", layout)
        _rehash_ok = kind != "external"  # node_digest itself refuses the link
        with pytest.raises(FormatError, match=r"refused: /clients/c01/beta is (an external "
                           r"link|a soft link|a virtual)"):
            if _rehash_ok:
                rehash_gallery(g)
            read_client(g, "c01")


def test_signing(built, tmp_path, monkeypatch):
    root, faces = built
    key, other = tmp_path / "key", tmp_path / "other"
    key.write_bytes(os.urandom(32))
    other.write_bytes(os.urandom(32))
    probe = os.path.join(faces, "c01", "0.png")
    signed = tmp_path / "signed.h5"
    compress(root / "e.h5", signed, CompressOptions(m=1, cv_folds=0),
             CompressRun(clients="c01", key_file=str(key)))
    assert verify(signed, [probe], "c01", key_file=str(key))[0].accept
    with pytest.raises(FormatError, match="signature does not match the configured key"):
        verify(signed, [probe], "c01", key_file=str(other))
    with pytest.raises(FormatError, match="gallery is not signed"):
        verify(root / "g.h5", [probe], "c01", key_file=str(key))
    monkeypatch.setenv("SSGALLERY_KEY_FILE", str(key))  # the environment names the key
    with pytest.raises(FormatError, match="gallery is not signed"):
        verify(root / "g.h5", [probe], "c01")
    g = _copy(signed, tmp_path / "resigned.h5")
    with edit_h5(g) as f:
        f["clients/c01"].attrs["threshold"] = f["clients/c01"].attrs["threshold"] - 0.01
    rehash_gallery(g)  # consistent digests, but the old signature
    with pytest.raises(FormatError, match="signature does not match"):
        verify(g, [probe], "c01")
    short = tmp_path / "short"
    short.write_bytes(b"abc")
    with pytest.raises(SsgalleryError, match="key file must hold 16 to 4096 bytes"):
        verify(signed, [probe], "c01", key_file=str(short))
    with pytest.raises(SsgalleryError, match="key file is a character device, expected a "
                       "regular file"):
        verify(signed, [probe], "c01", key_file="/dev/zero")


def test_an_unsigned_gallery_refused_names_the_key_as_the_caller_gave_it(built, tmp_path):
    """The formats' readers take the key's bytes (``key``): refusing an unsigned gallery
    names ``key``, not the ``key_file`` they never took; the commands' functions, which
    take ``key_file``, and the command line (--key-file) still name the key file."""
    root, faces = built
    unsigned, key = root / "g.h5", os.urandom(32)
    key_file = tmp_path / "key"
    key_file.write_bytes(key)
    said = f"{unsigned}: gallery is not signed, and a signing key is configured"
    for read in (lambda: read_gallery(unsigned, key=key),
                 lambda: read_client(unsigned, "c01", key=key),
                 lambda: rewrite_gallery(unsigned, tmp_path / "copy.h5", key=key)):
        with pytest.raises(FormatError) as info:
            read()
        assert str(info.value) == f"{said} (`key`)"
    assert not (tmp_path / "copy.h5").exists()
    with pytest.raises(FormatError) as info:
        verify(unsigned, [os.path.join(faces, "c01", "0.png")], "c01", key_file=str(key_file))
    assert str(info.value) == f"{said} (`key_file` or $SSGALLERY_KEY_FILE)"
    result = _info(unsigned, "--key-file", str(key_file))
    assert result.exit_code == 2
    assert result.stderr == f"ssgallery: error: {said} (--key-file or $SSGALLERY_KEY_FILE)\n"


def test_version_1_and_store_digest(built, tmp_path):
    root, _ = built
    # the version a rewrite gives: a gallery is 2 or 3 (3 for uint8 prototypes only; it
    # said 3 of every gallery, and compress writes this eigenface one at version 2)
    for name, again in (("g.h5", r"re-run 'ssgallery compress' to write it \(version 2 or 3\)"),
                        ("e.h5", r"re-run 'ssgallery enroll FACES_DIR'.*\(version 2\)")):
        old = _copy(root / name, tmp_path / name)
        with edit_h5(old) as f:
            f.attrs["format_version"] = 1
        loader = (lambda p: read_client(p, "c01")) if name == "g.h5" else load_store
        with pytest.raises(FormatError, match=f"format version 1 has no integrity digest.*"
                           f"{again}"):
            loader(old)
    store = _copy(root / "e.h5", tmp_path / "s.h5")
    with edit_h5(store) as f:
        f["images"][0, 0, 0] = (int(f["images"][0, 0, 0]) + 1) % 256
    with pytest.raises(FormatError, match="integrity check failed: the store's content"):
        load_store(store)


def _rot(path, dataset):
    """Flip one bit of ``dataset``'s bytes in the file, without re-sealing (bit rot)."""
    with h5py.File(path, "r") as f:
        at = f[dataset].id.get_offset() + 3
    with open(path, "r+b") as handle:
        byte = os.pread(handle.fileno(), 1, at)
        os.pwrite(handle.fileno(), bytes([byte[0] ^ 0x10]), at)
    return path


def test_damaged_client_bytes_name_the_file_and_the_client(built, tmp_path):
    """Bit rot in one client's bytes: verify refuses in one line naming the file and the
    client read (the seal of that part of the file), exit 2."""
    root, faces = built
    g = _rot(_copy(root / "g.h5", tmp_path / "g.h5"), "clients/c00/prototypes")
    probe = str(next(Path(faces).glob("c01/*")))
    result = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", str(g)])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and f"{g}: corrupt ssgallery gallery: while reading client 'c00': its bytes" in line


def _info(gallery, *options):
    return CliRunner().invoke(main, ["info", "--gallery", str(gallery), *options])


def _refused(result, gallery, message):
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and f"{gallery}: " in result.stderr
    assert message in result.stderr, result.stderr


def _replace(group, name, data):
    del group[name]
    group.create_dataset(name, data=data)


@pytest.mark.parametrize("edit, rehash, message", [
    (lambda f: f["index/threshold"].__setitem__(0, -5.0), False,
     "integrity check failed: the search index does not match its digest"),
    (lambda f: f.attrs.__setitem__("target_far", 0.5), False,
     "integrity check failed: the header or the client index"),
    (lambda f: f["matcher/mean"].__setitem__(0, 7.0), False,
     "integrity check failed: the matcher state"),
    (lambda f: f.copy(f["clients/c01"], "clients/evil"), False,
     "the client groups and the client index differ ('evil')"),
    (lambda f: _replace(f["index"], "client_ids", np.array([b"c00", b"c01", b"c02", b"evil"])),
     True, "integrity check failed: the search index and the client index list different"),
    (lambda f: _replace(f["index"], "prototypes", f["index/prototypes"][()] * 1e6), True,
     "refused: the search index: eigenface: a prototype lies far outside face space"),
])
def test_info_refuses_an_edited_index_header_or_matcher(built, tmp_path, edit, rehash,
                                                       message):
    """info reads the header, /client_index, /index and /matcher, no client group: an
    edit of any of them (re-sealed, and even re-hashed for the values) is refused in one
    line naming the file, exit 2."""
    root, _ = built
    assert _info(root / "g.h5").exit_code == 0
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    with edit_h5(g) as f:
        edit(f)
    if rehash:
        rehash_gallery(g)
    _refused(_info(g), g, message)
    _refused(_info(g, "--json"), g, message)


def test_info_refuses_damaged_or_edited_client_groups(built, tmp_path):
    """Damaged bytes in a client group: the seal of the whole file refuses them (info
    checks every chunk, exit 2). A re-sealed edit of a client group: info does not open
    client groups, so only ``--svm`` (which reads and checks every one) and ``--client``
    of that client refuse it."""
    root, _ = built
    g = _rot(_copy(root / "g.h5", tmp_path / "rot.h5"), "clients/c02/beta")
    for options in ((), ("--svm",)):
        _refused(_info(g, *options), g, "corrupt ssgallery gallery: its bytes")
        assert "do not match its seal" in _info(g, *options).stderr
    g = _copy(root / "g.h5", tmp_path / "edit.h5")
    with edit_h5(g) as f:
        f["clients/c02/beta"][0] += 1e-9
    assert _info(g).exit_code == 0 and _info(g, "--client", "c01").exit_code == 0
    for options in (("--svm",), ("--client", "c02")):
        _refused(_info(g, *options), g, "integrity check failed: client 'c02' does not match "
                 "its digest")


def test_large_datasets_are_hashed_in_slices_to_the_same_digest(tmp_path, monkeypatch):
    import tracemalloc

    from ssgallery.formats import integrity

    rng = np.random.default_rng(0)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=rng.integers(0, 256, (3000, 64, 64), dtype=np.uint8))
        f.create_dataset("big_endian", data=rng.random((2000, 7)).astype(">f8"))
        f.create_dataset("rows", data=np.array([(b"c%03d" % i, i / 3) for i in range(500)],
                                               dtype=[("id", "S8"), ("x", "<f8")]))
    with h5py.File(path, "r") as f:
        whole = integrity.node_digest(f)  # every dataset under SLICE_BYTES: read whole
        monkeypatch.setattr(integrity, "SLICE_BYTES", 1 << 20)
        tracemalloc.start()
        try:
            sliced = integrity.node_digest(f)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert sliced == whole
    assert peak < 4 << 20  # the images alone are 12 MiB
