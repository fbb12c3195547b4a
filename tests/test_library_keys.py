"""A key given to a library function as bytes is checked as a key file is (load_key): one
rule for both ways in (ssgallery.formats.integrity.key_problem)."""

import os

import pytest

from ssgallery.errors import InputError, SsgalleryError
from ssgallery.formats.gallery import read_gallery
from ssgallery.formats.gallery.protected import rewrite_gallery
from ssgallery.formats.integrity import load_key
from ssgallery.formats.store import load_store

BAD_KEYS = [(b"", "must hold 16 to 4096 bytes, it holds 0"),
            (b"k" * 15, "must hold 16 to 4096 bytes, it holds 15"),
            (b"k" * 4097, "must hold 16 to 4096 bytes, it holds 4097"),
            ("a key as text 123", "must be bytes, got str"),
            (12345, "must be bytes, got int"),
            (True, "must be bytes, got bool")]
LOADERS = {"key": "ssgallery.formats.integrity.load_key",
           "privacy_key": "ssgallery.formats.encryption.load_privacy_key"}


def _refusal(param, problem):
    return (f"`{param}` {problem} (a key file's bytes, as {LOADERS[param]}(FILE) reads "
            "them)")


@pytest.mark.parametrize(("key", "problem"), BAD_KEYS)
def test_a_key_given_as_bytes_is_checked_as_a_key_file_is(sample_store, sample_gallery_3,
                                                          tmp_path, key, problem):
    """A privacy key given to rewrite_gallery as b"" or 15 bytes encrypted the gallery
    with it (anyone can decrypt a file encrypted with an empty key), a str, an int or
    True ended in TypeError (an internal error), and load_store or read_gallery given
    such a key read the file as if it were a key; a key file of those bytes is refused
    ('key file must hold 16 to 4096 bytes'). Now every function that takes a key's bytes
    checks them by the same rule, before it reads or writes anything: InputError naming
    the parameter and how a key is read; nothing is written."""
    gallery, store = sample_gallery_3["gallery"], sample_store["store"]
    out = tmp_path / "out.h5"
    calls = {"privacy_key": [lambda: rewrite_gallery(gallery, out, privacy_key=key),
                             lambda: load_store(store, privacy_key=key),
                             lambda: read_gallery(gallery, privacy_key=key)],
             "key": [lambda: rewrite_gallery(gallery, out, key=key),
                     lambda: read_gallery(gallery, key=key)]}
    for param, functions in calls.items():
        for call in functions:
            with pytest.raises(InputError) as caught:
                call()
            assert str(caught.value) == _refusal(param, problem)
            assert not out.exists()


def test_a_key_file_is_refused_by_the_same_rule(tmp_path):
    """load_key's refusal of a short key file is the same rule, naming the file; of a
    file longer than it reads (4097 bytes), 'more than 4096', not 'it holds 4097'."""
    short = tmp_path / "short.key"
    short.write_bytes(b"k" * 15)
    with pytest.raises(SsgalleryError) as caught:
        load_key(short)
    assert str(caught.value) == f"{short}: key file must hold 16 to 4096 bytes, it holds 15"
    big = tmp_path / "big.key"  # read up to 4097 bytes: it said 'it holds 4097'
    big.write_bytes(b"k" * 1_000_000)
    with pytest.raises(SsgalleryError) as caught:
        load_key(big)
    assert str(caught.value) == (f"{big}: key file must hold 16 to 4096 bytes, it holds more "
                                 "than 4096")
    good = tmp_path / "good.key"
    good.write_bytes(os.urandom(16))
    assert load_key(good) == good.read_bytes()


def test_a_key_of_bytes_in_range_is_used(sample_gallery_3, tmp_path):
    """16 bytes, as bytes or a bytearray, encrypt and decrypt as a key file's bytes do."""
    key = bytearray(os.urandom(16))
    out = tmp_path / "enc.h5"
    rewrite_gallery(sample_gallery_3["gallery"], out, privacy_key=key)
    plain = read_gallery(sample_gallery_3["gallery"])
    again = read_gallery(out, privacy_key=bytes(key))
    assert sorted(again.clients) == sorted(plain.clients) == ["c01", "c02", "c03"]
