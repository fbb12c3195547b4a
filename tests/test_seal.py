"""The seal (formats/seal.py): raw bytes checked before HDF5 parses a file."""

import h5py
import numpy as np
import pytest

from ssgallery.errors import FormatError
from ssgallery.formats.seal import (
    MIN_CHUNK,
    USERBLOCK,
    SealedFile,
    SealMismatch,
    check_seal,
    head_of,
    seal_file,
)


@pytest.fixture
def sealed(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w", userblock_size=USERBLOCK) as f:
        f["a"] = np.arange(40000.0)  # 320 kB: several chunks
    seal_file(path)
    return path


def test_round_trip_and_hdf5_still_reads_it(sealed):
    check_seal(sealed)
    assert sealed.read_bytes().startswith(b"SSGALLERY-SEAL 2\nlength ")
    with h5py.File(sealed, "r") as f:
        assert f["a"][3] == 3.0


@pytest.mark.parametrize("at", [0, 20, 300, 511, 512, USERBLOCK - 1, USERBLOCK, USERBLOCK + 600,
                                -1])
def test_any_changed_byte_is_refused(sealed, at):
    data = bytearray(sealed.read_bytes())
    data[at] ^= 0x01
    sealed.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=r"x\.h5: (corrupt|not an)") as info:
        check_seal(sealed, "ssgallery gallery")
    assert "\n" not in str(info.value)


def test_truncated_appended_unsealed_and_foreign(sealed, tmp_path):
    data = sealed.read_bytes()
    sealed.write_bytes(data[:-10])
    with pytest.raises(FormatError, match="truncated or appended to"):
        check_seal(sealed)
    sealed.write_bytes(data + b"\0")
    with pytest.raises(FormatError, match="truncated or appended to"):
        check_seal(sealed)
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["a"] = 1
    with pytest.raises(FormatError, match="without ssgallery's seal"):
        check_seal(plain)
    with pytest.raises(ValueError, match="user block"):
        seal_file(plain)  # a writer that forgot userblock_size
    text = tmp_path / "t.h5"
    text.write_text("hello")
    with pytest.raises(FormatError, match="not a readable HDF5"):
        check_seal(text)


def test_sealed_file_checks_only_the_chunks_read(sealed):
    """h5py reads through SealedFile; a damaged chunk that is never read goes unnoticed,
    one that is read raises SealMismatch naming its bytes, before HDF5 sees them."""
    with h5py.File(SealedFile(sealed), "r") as f:
        assert f["a"][123] == 123.0
    data = bytearray(sealed.read_bytes())
    data[-100] ^= 0x01  # inside the dataset's last chunk
    sealed.write_bytes(bytes(data))
    with pytest.raises(SealMismatch, match=r"x\.h5: corrupt ssgallery file: its bytes \d+-\d+ "), \
            h5py.File(SealedFile(sealed), "r") as f:
        f["a"][()]
    reader = SealedFile(sealed)
    reader.seek(USERBLOCK)
    assert len(reader.read(MIN_CHUNK)) == MIN_CHUNK  # the first chunk is intact


def test_seal_1_files_are_still_read(tmp_path):
    """Files sealed before seal 2 (one SHA-256 over all the bytes, a 512-byte block)."""
    import hashlib

    path = tmp_path / "old.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        f["a"] = np.arange(10.0)
    data = bytearray(path.read_bytes())
    body = bytes(data[512:])
    head = f"SSGALLERY-SEAL 1\nsha256 {hashlib.sha256(body).hexdigest()}\nlength {len(body)}\n"
    path.write_bytes(head.encode().ljust(512, b"\0") + body)
    check_seal(path)
    with h5py.File(SealedFile(path), "r") as f:
        assert f["a"][4] == 4.0
    with h5py.File(path, "r") as f:  # what load_store records of a store's seal is what
        sealed = head.encode().ljust(512, b"\0")  # a reopen's SealedFile compares
        assert head_of(f.id.get_vfd_handle()) == SealedFile(path).head == sealed
    path.write_bytes(head.encode().ljust(512, b"\0") + body[:-1] + b"x")
    with pytest.raises(FormatError, match="do not match its seal"):
        check_seal(path)
