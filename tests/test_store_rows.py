"""The enrollment store's rows read on demand (`ssgallery.formats.store_rows`: compress's
reads, a worker's, enroll --add's): only from the store and the bytes that were checked
(a store written or edited at the path meanwhile is one line naming it), each chunk
hashed once, and a store read that way saves as it was read. The store itself:
tests/test_store.py."""

import hashlib
import os

import h5py
import numpy as np
import pytest
from helpers import edit_h5, make_faces, rehash_store

from ssgallery.app.enroll import enroll
from ssgallery.errors import FormatError
from ssgallery.formats.store import load_store


def test_rows_are_read_only_from_the_store_that_was_checked(tmp_path):
    """load_store(images=False) (compress's read) checks the store's digest once, then
    opens the path again for each slice of rows: a store written at the path meanwhile
    (an enroll finishing while compress runs, atomically renamed over it) had its rows
    read as the checked store's. Now each open compares the file's digest with the
    checked one: one line naming the store. A store written by this process (enroll
    --add, whose rows are read lazily from the old file) reads from the file it wrote;
    one without a feature cache is read again after --add, and is not refused."""
    a = make_faces(str(tmp_path / "a"), n_clients=2, n_images=3, seed=1)
    b = make_faces(str(tmp_path / "b"), n_clients=2, n_images=3, seed=2)
    path, other = tmp_path / "s.h5", tmp_path / "other.h5"
    enroll(a, path)
    enroll(b, other)
    store = load_store(path, images=False)
    first = store.images[0:2]
    os.replace(other, path)
    with pytest.raises(FormatError, match=rf"^{path}: changed while this command read it "
                       r"\(seal SHA-256 \w{12}\.\.\. when checked, now \w{12}\.\.\.: another store "
                       r"was written here meanwhile\): run the command again$"):
        store.images[0:2]
    assert first.shape == (2, 32, 24)
    with edit_h5(tmp_path / "s.h5") as f:  # a store without a feature cache
        del f["features"]
    rehash_store(tmp_path / "s.h5")
    more = make_faces(str(tmp_path / "more"), n_clients=2, n_images=3, prefix="d", seed=3)
    summary = enroll(more, path, add=True)
    assert summary.dimension > 0 and len(load_store(path).images) == 12


def test_rows_are_read_only_from_the_bytes_that_were_checked(tmp_path):
    """compress's row reads (`StoreImages`) reopened an unencrypted store with h5py
    directly, checking nothing but the digest the file records: another file put at the
    path whose rows were edited, with the first store's digest left in it, had its
    pixels read as the checked store's (load_store refuses that file: its seal or its
    digest does not match), and its bytes reached HDF5 unchecked. Now each reopen is
    read through the seal (`ssgallery.formats.seal.SealedFile`, every chunk checked
    before HDF5 parses it), and the seal must be the one of the file load_store read:
    the same bytes or one line naming the store."""
    import shutil

    import h5py
    from helpers import reseal

    faces = make_faces(str(tmp_path / "a"), n_clients=2, n_images=3, seed=1)
    path, keep = tmp_path / "s.h5", tmp_path / "keep.h5"
    enroll(faces, path)
    shutil.copy(path, keep)
    edited = tmp_path / "edited.h5"  # rows edited, the recorded digest left as it was
    shutil.copy(path, edited)
    with h5py.File(edited, "a") as f:
        f["images"][0] = 255 - f["images"][0]
    resealed = tmp_path / "resealed.h5"
    shutil.copy(edited, resealed)
    reseal(resealed)
    for other, refusal in ((edited, "do not match its seal"),  # names what it compared
                           (resealed, (r"changed while this command read it \(seal SHA-256 "
                                       r"\w{12}\.\.\. when checked, now \w{12}\.\.\.: another "
                                       "store was written here meanwhile"))):
        with pytest.raises(FormatError):
            load_store(other, images=False)  # what it says of the file read alone
        store = load_store(path, images=False)
        first = store.images[0:1]
        shutil.copy(other, tmp_path / "swap.h5")
        os.replace(tmp_path / "swap.h5", path)
        with pytest.raises(FormatError, match=refusal):
            store.images[0:1]
        shutil.copy(keep, path)
        np.testing.assert_array_equal(load_store(path, images=False).images[0:1], first)


def _as_seal_1(path):
    """Rewrite the sealed file ``path`` as a seal-1 file (an older ssgallery's: one
    SHA-256 of every byte after a 512-byte block; HDF5 finds its superblock further on)."""
    from ssgallery.formats.seal import USERBLOCK

    body = bytes(USERBLOCK - 512) + path.read_bytes()[USERBLOCK:]
    head = f"SSGALLERY-SEAL 1\nsha256 {hashlib.sha256(body).hexdigest()}\nlength {len(body)}\n"
    path.write_bytes(head.encode().ljust(512, b"\0") + body)


def test_row_slices_hash_each_chunk_of_the_store_once(tmp_path, monkeypatch):
    """Each reopen of the store for a slice of rows (2efdb73) hashed again every chunk it
    read: a seal-1 store (an older ssgallery's, the whole file one chunk) was hashed whole
    at every slice (compress of a big store: its size times its slices; 40 slices of 10
    AT&T rows 0.04 s -> 0.40 s CPU). Now a chunk found good is not hashed again while
    the path holds that very file; another file put there is checked anew."""
    import shutil

    from ssgallery.formats import seal

    hashed = []
    real = seal._chunk_digest
    monkeypatch.setattr(seal, "_chunk_digest",
                        lambda data, size: hashed.append(len(data)) or real(data, size))
    faces = make_faces(str(tmp_path / "a"), n_clients=3, n_images=4, seed=2)
    path = tmp_path / "s.h5"
    enroll(faces, path)
    whole = load_store(path).images
    for sealed in ("seal 2", "seal 1"):
        if sealed == "seal 1":
            _as_seal_1(path)
        store = load_store(path, images=False)
        chunks = seal.SealedFile(path)._seal.digests
        del hashed[:]
        rows = [store.images[i:i + 1] for i in range(len(whole))]
        np.testing.assert_array_equal(np.concatenate(rows), whole)
        assert len(hashed) <= len(chunks), (sealed, len(hashed), len(chunks))
        shutil.copy(path, tmp_path / "copy.h5")  # the same bytes, another file
        os.replace(tmp_path / "copy.h5", path)
        del hashed[:]
        np.testing.assert_array_equal(store.images[0:1], whole[0:1])
        assert hashed, sealed


def _row_sum(rows, images):
    return float(images[rows].sum())


def test_an_edited_store_read_by_a_worker_is_one_line(tmp_path):
    """compress's jobs read a big store's rows in worker processes (loky), through the
    seal since 2efdb73; a chunk edited in place raised SealMismatch there, which could
    not be unpickled: the run ended 'BrokenProcessPool: A result has failed to
    un-serialize', not the line naming the store. Now the worker's error is that line."""
    from ssgallery.app.parallel import run_jobs

    faces = make_faces(str(tmp_path / "a"), n_clients=2, n_images=4, seed=3)
    path = tmp_path / "s.h5"
    enroll(faces, path)
    store = load_store(path, images=False)
    with h5py.File(path, "r") as f:
        at = f["images"].id.get_chunk_info(3).byte_offset + 10
    with open(path, "r+b") as handle:  # bit rot in place, after load_store checked it
        handle.seek(at)
        byte = handle.read(1)[0]
        handle.seek(at)
        handle.write(bytes([byte ^ 1]))
    with pytest.raises(FormatError, match=r"s\.h5: corrupt .*do not match its seal"):
        list(run_jobs(_row_sum, [slice(0, 4), slice(4, 8)], n_jobs=2, shared=store.images))


def test_a_lazily_read_store_saves_as_it_was_read(tmp_path):
    """EnrollmentStore.save of a store read with images=False (its rows on disk, a
    StoreImages) raised AttributeError: 'StoreImages' object has no attribute 'size'
    (no command reached it: enroll --add saves a StackedImages). Now it writes the same
    store, reading the rows a slice at a time, to another file or over the one it reads
    from, and reads its rows from the file written from then on."""
    faces = make_faces(str(tmp_path / "f"), n_clients=2, n_images=3, seed=1)
    path, copy = tmp_path / "s.h5", tmp_path / "copy.h5"
    enroll(faces, path)
    whole = load_store(path)
    for target in (copy, path):
        store = load_store(path, images=False)
        store.save(target)
        assert store.path == os.fspath(target)
        np.testing.assert_array_equal(store.images[0:6], whole.images)
        again = load_store(target)
        np.testing.assert_array_equal(again.images, whole.images)
        assert again.fingerprint == whole.fingerprint
        assert again.images.dtype == np.float32 and again.sha256 == whole.sha256
    with h5py.File(copy, "r") as f:
        assert f["images"].dtype == np.uint8  # 8-bit pixels stay 8-bit, as enroll wrote them
