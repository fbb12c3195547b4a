"""The seal (formats/seal.py): raw bytes checked before HDF5 parses a file."""

import h5py
import numpy as np
import pytest

from ssgallery.errors import FormatError
from ssgallery.formats.seal import USERBLOCK, check_seal, seal_file


@pytest.fixture
def sealed(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w", userblock_size=USERBLOCK) as f:
        f["a"] = np.arange(1000.0)
    seal_file(path)
    return path


def test_round_trip_and_hdf5_still_reads_it(sealed):
    check_seal(sealed)
    assert sealed.read_bytes().startswith(b"SSGALLERY-SEAL 1\nsha256 ")
    with h5py.File(sealed, "r") as f:
        assert f["a"][3] == 3.0


@pytest.mark.parametrize("at", [0, 20, 300, 511, 512, 600, -1])
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
