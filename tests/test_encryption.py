"""Encryption at rest (issue 23 item 2): stores (and galleries) encrypted with the host's
privacy key, AES-256-GCM in authenticated chunks, decrypted in memory only. Real files,
real HDF5, the real CLI."""

import os

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.app.enroll import enroll
from ssgallery.cli import main
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats import encryption
from ssgallery.formats.atomic import hdf5_format
from ssgallery.formats.encryption import CHUNK, HEADER, TAG, load_privacy_key
from ssgallery.formats.hdf5 import open_checked
from ssgallery.formats.store import FORMAT, FORMAT_VERSION, KIND, load_store


def _key(folder, name="privacy.key", data=None):
    path = folder / name
    path.write_bytes(data if data is not None else os.urandom(32))
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """One folder enrolled twice: plain and encrypted (the same images)."""
    root = tmp_path_factory.mktemp("enc")
    faces = make_faces(str(root / "faces"), n_clients=6, n_images=6, shape=(96, 84))
    key = _key(root)
    enroll(faces, root / "plain.h5")
    enroll(faces, root / "enc.h5", privacy_key_file=str(key))
    return root, key


def _plain_store(root):
    return load_store(root / "plain.h5")


def test_round_trip_equals_the_plain_store(stores):
    root, key = stores
    plain = _plain_store(root)
    secret = key.read_bytes()
    store = load_store(root / "enc.h5", privacy_key=secret)
    np.testing.assert_array_equal(store.images, plain.images)
    np.testing.assert_array_equal(store.features, plain.features)
    assert store.clients == plain.clients and store.fingerprint == plain.fingerprint
    lazy = load_store(root / "enc.h5", images=False, privacy_key=secret)
    np.testing.assert_array_equal(lazy.images[3:9], plain.images[3:9])
    np.testing.assert_array_equal(lazy.images[np.array([7, 1])], plain.images[[7, 1]])


def test_no_plaintext_reaches_the_disk(stores):
    """Nothing of the HDF5 image is in the file: no HDF5 signature, no client id, no
    path, and no 64-byte run of the plain store's pixels."""
    root, _ = stores
    data = (root / "enc.h5").read_bytes()
    assert data.startswith(encryption.MAGIC)
    assert b"\x89HDF" not in data and b"SSGALLERY-SEAL" not in data
    plain = (root / "plain.h5").read_bytes()
    for word in (b"eigenface", b"components", b"explained_variance",
                 str(root / "faces").encode()):
        assert word in plain and word not in data
    raw = _plain_store(root).images.astype(np.uint8).tobytes()
    assert not any(raw[i:i + 64] in data for i in range(0, len(raw) - 64, 4099))
    # and no temporary file was left beside it
    assert sorted(p.name for p in root.iterdir() if "tmp" in p.name) == []


def test_missing_and_wrong_key_are_one_line(stores, tmp_path):
    root, _ = stores
    with pytest.raises(FormatError, match="is encrypted; reading it needs the privacy key"):
        load_store(root / "enc.h5")
    with pytest.raises(FormatError, match="encrypted with another privacy key") as info:
        load_store(root / "enc.h5", privacy_key=os.urandom(32))
    assert "\n" not in str(info.value) and str(root / "enc.h5") in str(info.value)
    runner = CliRunner()
    for extra in ([], ["--privacy-key-file", str(_key(tmp_path, "other.key"))]):
        result = runner.invoke(main, ["info", "--store", str(root / "enc.h5"), *extra])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert "Traceback" not in result.output


def test_an_encrypted_store_given_for_a_gallery_is_named_as_a_plain_one_is(stores):
    """info --gallery enc.h5 (an encrypted store): named a store with who writes which,
    as c81b20b names a plain one (was: "not an ssgallery gallery (an encrypted
    'ssgallery-enrollment' file, expected 'ssgallery-gallery')"), with or without the key."""
    root, key = stores
    for extra in ([], ["--privacy-key-file", str(key)]):
        r = CliRunner().invoke(main, ["info", "--gallery", str(root / "enc.h5"), *extra])
        assert (r.exit_code, r.stderr) == (2, (
            f"ssgallery: error: {root / 'enc.h5'}: not an ssgallery gallery but an encrypted "
            "ssgallery enrollment store (format 'ssgallery-enrollment'; enroll writes a "
            "store, compress turns it into a gallery)\n")), r.output


def _tampered(root, key, tmp_path, edit):
    data = bytearray((root / "enc.h5").read_bytes())
    out = tmp_path / "t.h5"
    out.write_bytes(bytes(edit(data)))
    with pytest.raises(FormatError) as info:
        store = load_store(out, privacy_key=key.read_bytes())
        store.images[:]
    assert "\n" not in str(info.value)
    return str(info.value)


def _swap_chunks(data):
    step = CHUNK + TAG
    a, b = HEADER, HEADER + step
    data[a:a + step], data[b:b + step] = data[b:b + step], data[a:a + step]
    return data


def test_tampered_ciphertext_is_refused(stores, tmp_path):
    root, key = stores
    assert (root / "enc.h5").stat().st_size > HEADER + 2 * (CHUNK + TAG)

    def flip(at):
        def edit(data):
            data[at] ^= 0x01
            return data
        return edit

    for at in (HEADER, HEADER + CHUNK + 5, -1):
        assert "fail authentication" in _tampered(root, key, tmp_path, flip(at))
    assert "fail authentication" in _tampered(root, key, tmp_path, _swap_chunks)
    assert "truncated" in _tampered(root, key, tmp_path, lambda d: d[:-100])
    assert "truncated" in _tampered(root, key, tmp_path, lambda d: d + b"\0" * 16)
    # the header is authenticated: a changed length is a size mismatch or a bad tag,
    # a changed salt a wrong key (the key check), a damaged layout is named as such
    head = bytes((root / "enc.h5").read_bytes()[:HEADER])
    salt = head.split(b"salt ")[1][:64]
    other = bytes(salt[:-1]) + (b"0" if salt[-1:] != b"0" else b"1")
    assert "another privacy key" in _tampered(
        root, key, tmp_path, lambda d: d.replace(salt, other, 1))
    assert "damaged encryption header" in _tampered(
        root, key, tmp_path, lambda d: d.replace(b"cipher aes-256-gcm", b"cipher aes-128-gcm"))


def test_a_chunk_of_another_file_under_the_same_key_is_refused(stores, tmp_path):
    """Replay: the first chunk of another encryption of the same content with the same
    key (a replayed older file's block) does not authenticate here."""
    root, key = stores
    other = tmp_path / "again.h5"
    load_store(root / "enc.h5", privacy_key=key.read_bytes()).save(
        other, privacy_key=key.read_bytes())
    theirs = other.read_bytes()

    def splice(data):
        data[HEADER:HEADER + CHUNK + TAG] = theirs[HEADER:HEADER + CHUNK + TAG]
        return data

    assert "fail authentication" in _tampered(root, key, tmp_path, splice)


def test_whole_file_decryption_authenticates_every_chunk_and_keeps_one_copy(tmp_path):
    """decrypt (whole-file readers: enroll, compress, info, parts) checks every chunk
    before it returns, and holds the plaintext once: a 48 MiB file read whole costs about
    48 MiB more memory, not twice that (it was an io.BytesIO copy of a bytearray)."""
    key = os.urandom(32)
    plain = os.urandom(32 * CHUNK + 123)
    path = tmp_path / "f.enc"
    path.write_bytes(encryption.encrypt(plain, "ssgallery-test", key))
    reader = encryption.decrypt(path, "test file", "ssgallery-test", key)
    assert reader.read() == plain
    reader.seek(5 * CHUNK - 3)
    assert reader.read(10) == plain[5 * CHUNK - 3:5 * CHUNK + 7]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # the last chunk: refused by decrypt itself, before any read
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="fail authentication"):
        encryption.decrypt(path, "test file", "ssgallery-test", key)
    # memory, in a fresh process: the peak resident size while decrypting a 48 MiB file
    # above the resident size just before (Linux: /proc/self/clear_refs resets the peak)
    import subprocess
    import sys

    code = """if True:
        import os, sys
        from ssgallery.formats import encryption
        def status(field):
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith(field))
        key, path = os.urandom(32), sys.argv[1]
        with open(path, "wb") as handle:
            handle.writelines(encryption.encrypted_pieces(bytes(48 << 20), "t", key))
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status("VmRSS:")
        reader = encryption.decrypt(path, "test file", "t", key)
        print(status("VmHWM:") - before)
    """
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "big.enc")],
                         capture_output=True, text=True, check=True)
    grown = int(out.stdout)  # KiB
    assert 40 * 1024 < grown < 1.5 * 48 * 1024, grown


def test_lazy_reads_authenticate_each_chunk(stores, tmp_path):
    """Readers of a few parts (verify) decrypt only what HDF5 reads; a damaged chunk
    they read is one line, never handed to HDF5."""
    root, key = stores
    data = bytearray((root / "enc.h5").read_bytes())
    data[len(data) // 2] ^= 0x40
    out = tmp_path / "half.h5"
    out.write_bytes(bytes(data))
    with open_checked(out, FORMAT, FORMAT_VERSION, KIND, lazy=True,
                      privacy_key=key.read_bytes()) as f:
        assert f.attrs["format"] == FORMAT  # the header's chunks are intact
        names = []
        f.visit(names.append)
        with pytest.raises(FormatError, match="fail authentication"):
            for name in names:
                if hasattr(f[name], "shape"):
                    f[name][()]


def test_kind_is_known_without_the_key_and_a_plain_store_is_read_with_one(stores, tmp_path):
    root, key = stores
    assert hdf5_format(root / "enc.h5") == FORMAT  # compress -o enc.h5 stays refused
    store = load_store(root / "plain.h5", privacy_key=key.read_bytes())
    assert len(store.images) == len(_plain_store(root).images)


def test_enroll_with_a_key_rewrites_nothing_it_cannot_read(stores, tmp_path):
    """An encrypted store re-enrolled with the same key and folder is unchanged; with
    --add and no key, the encrypted store is refused, not clobbered."""
    root, key = stores
    before = (root / "enc.h5").read_bytes()
    summary = enroll(root / "faces", root / "enc.h5", privacy_key_file=str(key))
    assert not summary.changed and (root / "enc.h5").read_bytes() == before
    with pytest.raises(FormatError, match="needs the privacy key"):
        enroll(root / "faces", root / "enc.h5", add=True)
    assert (root / "enc.h5").read_bytes() == before


def test_privacy_key_file_rules(tmp_path, monkeypatch):
    with pytest.raises(SsgalleryError, match="privacy key file must hold 16 to 4096 bytes"):
        load_privacy_key(str(_key(tmp_path, "short.key", b"x" * 15)))
    monkeypatch.setenv(encryption.PRIVACY_KEY_ENV, str(_key(tmp_path, "env.key", b"k" * 20)))
    assert load_privacy_key() == b"k" * 20


def test_hkdf_matches_rfc5869_test_case_1():
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    okm = ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
           "34007208d5b887185865")
    assert encryption.hkdf(ikm, salt, info, 42).hex() == okm


def test_encrypted_and_signed_gallery_verifies_as_the_plain_one(tmp_path):
    """Signing and encryption compose: the HMAC is inside the ciphertext. verify reads
    the encrypted gallery chunk by chunk with the privacy key and gives the plain
    gallery's scores; without it, or with another, one line."""
    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressOptions, CompressRun
    from ssgallery.app.verify import verify
    from ssgallery.formats.gallery.protected import rewrite_gallery

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5)
    enroll(faces, tmp_path / "e.h5")
    sign, privacy = _key(tmp_path, "sign.key"), _key(tmp_path, "privacy.key")
    # signed: rewrite_gallery signs only a source signed with its key
    compress(tmp_path / "e.h5", tmp_path / "plain.h5", CompressOptions(m=2, cv_folds=2),
             CompressRun(key_file=str(sign)))
    rewrite_gallery(tmp_path / "plain.h5", tmp_path / "enc.h5", key=sign.read_bytes(),
                    privacy_key=privacy.read_bytes())
    assert (tmp_path / "enc.h5").read_bytes().startswith(encryption.MAGIC)
    probes = sorted(str(p) for p in (tmp_path / "faces").glob("*/*.png"))
    plain = verify(tmp_path / "plain.h5", probes, "c01")
    enc = verify(tmp_path / "enc.h5", probes, "c01", key_file=str(sign),
                 privacy_key_file=str(privacy))
    assert [r.score for r in enc] == [r.score for r in plain]
    runner = CliRunner()
    base = ["verify", probes[0], "--claim", "c01", "--gallery", str(tmp_path / "enc.h5")]
    for extra, message in (([], "needs the privacy key"),
                           (["--privacy-key-file", str(sign)], "another privacy key"),
                           (["--privacy-key-file", str(privacy), "--key-file",
                             str(_key(tmp_path, "s2.key"))], "signature does not match")):
        result = runner.invoke(main, base + extra)
        assert result.exit_code == 2 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    result = runner.invoke(main, ["info", "--gallery", str(tmp_path / "enc.h5"),
                                  "--privacy-key-file", str(privacy)])
    assert result.exit_code == 0 and "4 clients" in result.output, result.output


def test_enroll_with_a_key_encrypts_an_unchanged_plain_store(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4)
    enroll(faces, tmp_path / "e.h5")
    again = enroll(faces, tmp_path / "e.h5", privacy_key_file=str(_key(tmp_path)))
    assert again.changed
    assert (tmp_path / "e.h5").read_bytes().startswith(encryption.MAGIC)


def test_compress_parts_are_encrypted_with_the_privacy_key(tmp_path):
    """A part of an interrupted compress holds a client's plain template: with the
    privacy key it is written encrypted (no prototype bytes, no client id on disk) and
    read back with the key; with another key, or plain in a run with a key, it is not
    read (a bad part: reported, the client is redone)."""
    from ssgallery.app.parts import BadPart, ClientResult, PartsFolder

    key = os.urandom(32)
    rng = np.random.default_rng(0)
    result = ClientResult(client="alice", prototypes=rng.normal(size=(2, 40)),
                          beta=np.array([1.0, -0.5]), intercept=0.1, threshold=0.2,
                          provenance={"m": 2}, heldout={"impostor": rng.normal(size=30)},
                          row={"client": "alice"})
    parts = PartsFolder(tmp_path / "g.h5", key)
    parts.write(result, "run-key")
    (part,) = (tmp_path / "g.h5.parts").iterdir()
    raw = part.read_bytes()
    assert raw.startswith(encryption.MAGIC) and b"alice" not in raw
    assert result.prototypes.tobytes()[:64] not in raw and b"prototypes" not in raw
    back = parts.read("alice", "run-key")
    np.testing.assert_array_equal(back.prototypes, result.prototypes)
    np.testing.assert_array_equal(back.heldout["impostor"], result.heldout["impostor"])
    with pytest.raises(BadPart, match="another privacy key"):
        PartsFolder(tmp_path / "g.h5", os.urandom(32)).read("alice", "run-key")
    with pytest.raises(BadPart, match="needs the privacy key"):
        PartsFolder(tmp_path / "g.h5").read("alice", "run-key")
    plain = PartsFolder(tmp_path / "p.h5")
    plain.write(result, "run-key")
    assert plain.read("alice", "run-key").threshold == 0.2
    # a plain part (an earlier run without the key, or planted) is not read by a run with
    # the key: nothing authenticates it, and it would enter the encrypted, signed gallery
    with pytest.raises(BadPart, match="a plain part in a run with a privacy key"):
        PartsFolder(tmp_path / "p.h5", key).read("alice", "run-key")


def test_roc_on_an_encrypted_store_reads_it_with_the_privacy_key(stores, tmp_path):
    """roc's protocol on an encrypted store: the key from $SSGALLERY_PRIVACY_KEY_FILE (the
    variable the refusal names), the same figures as on the plain store."""
    import json

    root, key = stores
    args = ["--repetitions", "1", "--methods", "svm", "--enrolled", "3", "--no-plot", "--json",
            "-q"]
    runner = CliRunner()
    refused = runner.invoke(main, ["roc", "--store", str(root / "enc.h5"), *args, "-o",
                                   str(tmp_path / "r0")])
    assert refused.exit_code == 2 and "needs the privacy key" in refused.output
    summaries = []
    for name, env in (("plain.h5", {}), ("enc.h5", {encryption.PRIVACY_KEY_ENV: str(key)})):
        result = runner.invoke(main, ["roc", "--store", str(root / name), *args, "-o",
                                      str(tmp_path / name)], env=env)
        assert result.exit_code == 0, result.output
        summaries.append([{k: v for k, v in method.items() if k.startswith(("eer", "frr"))}
                          for method in json.loads(result.stdout)["methods"]])
    assert summaries[0] == summaries[1] and summaries[0][0]  # but for timings


@pytest.mark.parametrize("kind", ["encrypted", "sealed"])
def test_a_seek_before_the_start_is_refused(stores, kind):
    """The file objects HDF5 reads through (`ReadOnlyFile`) refuse a negative position
    or an unknown whence as io files do (ValueError) and stay where they were; it used
    to be taken, and the next read asked for chunk -1."""
    from ssgallery.formats.seal import SealedFile

    root, key = stores
    if kind == "encrypted":
        handle = encryption.EncryptedFile(root / "enc.h5", "store", FORMAT, key.read_bytes())
    else:
        handle = SealedFile(root / "plain.h5", "store")
    with handle:
        first = handle.read(64)
        for offset, whence in ((-1, os.SEEK_SET), (-65, os.SEEK_CUR),
                               (-(handle.seek(0, os.SEEK_END) + 1), os.SEEK_END)):
            handle.seek(64)
            with pytest.raises(ValueError, match="negative seek position"):
                handle.seek(offset, whence)
            assert handle.tell() == 64
        with pytest.raises(ValueError, match="invalid whence"):
            handle.seek(0, 7)
        assert handle.seek(-64, os.SEEK_CUR) == 0 and handle.read(64) == first
    with pytest.raises(ValueError):
        handle.seek(0)


def test_roc_takes_the_privacy_key_file_its_refusal_names(stores, tmp_path):
    """roc on an encrypted store or gallery without the key said '... needs the privacy
    key (--privacy-key-file or $SSGALLERY_PRIVACY_KEY_FILE)', and 'roc
    --privacy-key-file KEY' was then 'No such option': roc read the key from the variable
    only. Now roc takes --privacy-key-file, as verify, identify, info, show and compress
    do: the store's protocol gives the figures of the variable's run, and roc --gallery
    reads an encrypted gallery with it; a mode that reads no file names it ignored."""
    import json

    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressOptions, CompressRun

    root, key = stores
    args = ["--repetitions", "1", "--methods", "svm", "--enrolled", "3", "--no-plot", "--json",
            "-q"]
    runner = CliRunner()
    env = {encryption.PRIVACY_KEY_ENV: None}
    refused = runner.invoke(main, ["roc", "--store", str(root / "enc.h5"), *args, "-o",
                                   str(tmp_path / "r0")], env=env)
    assert refused.exit_code == 2 and refused.stderr.endswith(
        "needs the privacy key (--privacy-key-file or $SSGALLERY_PRIVACY_KEY_FILE)\n")
    figures = []
    for extra, given in ((["--privacy-key-file", str(key)], env),
                         ([], {encryption.PRIVACY_KEY_ENV: str(key)})):
        result = runner.invoke(main, ["roc", "--store", str(root / "enc.h5"), *args, *extra,
                                      "-o", str(tmp_path / f"r{len(figures) + 1}")], env=given)
        assert (result.exit_code, result.stderr) == (0, ""), result.output
        figures.append([{k: v for k, v in method.items() if k.startswith(("eer", "frr"))}
                        for method in json.loads(result.stdout)["methods"]])
    assert figures[0] == figures[1] and figures[0][0]
    gallery = tmp_path / "g.h5"
    compress(root / "enc.h5", gallery, CompressOptions(m=2, cv_folds=2),
             CompressRun(privacy_key_file=str(key)))
    assert gallery.read_bytes().startswith(encryption.MAGIC)
    base = ["roc", "--gallery", str(gallery), "--probes", str(root / "faces"), "--no-plot",
            "-q", "-o"]
    refused = runner.invoke(main, [*base, str(tmp_path / "g0")], env=env)
    assert refused.exit_code == 2 and "needs the privacy key (--privacy-key-file" in \
        refused.stderr
    result = runner.invoke(main, [*base, str(tmp_path / "g1"), "--privacy-key-file",
                                  str(key)], env=env)
    # the probes are the encrypted store's own images: found with the key, one line
    assert result.exit_code == 0 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith("ssgallery: warning: 36 of 36 probes in ") and \
        f"training images in {root / 'enc.h5'}, the store it was compressed from" in result.stderr
    assert result.stdout.startswith("method ")
    scores = sorted(str(p) for p in (tmp_path / "g1" / "scores").glob("*.txt"))
    result = runner.invoke(main, ["roc", "--scores", *scores, "--no-plot", "-q", "-o",
                                  str(tmp_path / "s1"), "--privacy-key-file", str(key)], env=env)
    assert result.exit_code == 0 and result.stderr == (
        "ssgallery: warning: --privacy-key-file is ignored: roc --scores recomputes the "
        "figures of the score files (no protocol, no matcher, no dev threshold)\n")
