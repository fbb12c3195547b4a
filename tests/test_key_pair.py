"""One secret never both signs and encrypts: a key file given as both ``--key-file`` and
``--privacy-key-file`` (the same path, a link to it, or a file of the same bytes) is
refused by every command that takes both, and a library caller's ``key`` equal to its
``privacy_key`` likewise, through one check (`ssgallery.formats.encryption.distinct_keys`)."""

import os

import pytest
from helpers import invoked, refused

from ssgallery.app.parts import PartsFolder
from ssgallery.datasets import sample_faces_path
from ssgallery.errors import InputError
from ssgallery.formats.gallery import read_client, read_gallery, read_search
from ssgallery.formats.gallery.protected import rewrite_gallery
from ssgallery.formats.gallery.summary import client_summary, gallery_summary

PROBE = str(sample_faces_path().parent / "probes" / "c02_genuine_1.png")
SECRET = bytes(range(32))


def _commands(gallery, store, out):
    return {"verify": ["verify", PROBE, "--claim", "c02", "--gallery", gallery],
            "identify": ["identify", PROBE, "--gallery", gallery],
            "show": ["show", "--claim", "c02", "-o", out / "x.png", "--gallery", gallery],
            "info": ["info", "--gallery", gallery],
            "roc": ["roc", "--gallery", gallery, "--probes", sample_faces_path(), "-o",
                    out / "report"],
            "compress": ["compress", "--store", store, "-o", out / "g.h5", "--m", "2",
                         "--clients", "c01"]}


@pytest.mark.parametrize("command", ["verify", "identify", "show", "info", "roc", "compress"])
def test_every_command_refuses_one_file_as_both_keys(command, sample_gallery_3, sample_store,
                                                     tmp_path):
    key = tmp_path / "host.key"
    key.write_bytes(SECRET)
    args = _commands(sample_gallery_3["gallery"], sample_store["store"], tmp_path)[command]
    refused([*args, "--key-file", key, "--privacy-key-file", key],
            f"--key-file {key} and --privacy-key-file {key} are the same file (one secret "
            "would both sign and encrypt): give each key its own file")
    assert sorted(os.listdir(tmp_path)) == ["host.key"]  # nothing written


def test_a_link_another_spelling_or_the_same_bytes_are_refused(sample_gallery_3, tmp_path,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    verify = _commands(sample_gallery_3["gallery"], None, tmp_path)["verify"]
    (tmp_path / "k.key").write_bytes(SECRET)
    (tmp_path / "copy.key").write_bytes(SECRET)
    os.symlink("k.key", "soft.key")
    os.link("k.key", "hard.key")
    for other in ("soft.key", "hard.key", "./k.key"):
        refused([*verify, "--key-file", other, "--privacy-key-file", "k.key"],
                f"--key-file {other} and --privacy-key-file k.key are the same file")
    refused([*verify, "--key-file", "copy.key", "--privacy-key-file", "k.key"],
            "--key-file copy.key and --privacy-key-file k.key are two files that hold the "
            "same key bytes (one secret would both sign and encrypt): give each key its own "
            "secret")
    monkeypatch.setenv("SSGALLERY_KEY_FILE", "k.key")
    monkeypatch.setenv("SSGALLERY_PRIVACY_KEY_FILE", "hard.key")
    refused(verify, "$SSGALLERY_KEY_FILE k.key and $SSGALLERY_PRIVACY_KEY_FILE hard.key are "
            "the same file")
    (tmp_path / "p.key").write_bytes(SECRET[::-1])  # two secrets: read as before
    res = invoked([*verify, "--privacy-key-file", "p.key"])
    assert "is not signed" in res["stderr"] and res["exit_code"] == 2


def test_library_callers_passing_one_secret_as_both_keys_are_refused(sample_gallery_3,
                                                                     tmp_path):
    gallery = sample_gallery_3["gallery"]
    (tmp_path / "k.key").write_bytes(SECRET)
    calls = [lambda k, p: read_gallery(gallery, key=k, privacy_key=p),
             lambda k, p: read_client(gallery, "c02", key=k, privacy_key=p),
             lambda k, p: read_search(gallery, key=k, privacy_key=p),
             lambda k, p: gallery_summary(gallery, key=k, privacy_key=p),
             lambda k, p: client_summary(gallery, "c02", key=k, privacy_key=p),
             lambda k, p: rewrite_gallery(gallery, tmp_path / "out.h5", key=k, privacy_key=p),
             lambda k, p: PartsFolder(tmp_path / "g.h5", privacy_key=p, key=k)]
    for call in calls:
        for key, privacy_key in ((SECRET, SECRET), (SECRET, bytearray(SECRET))):
            with pytest.raises(InputError, match=r"^`key` and `privacy_key` are the same "
                               r"bytes \(one secret would both sign and encrypt\)"):
                call(key, privacy_key)
    assert sorted(os.listdir(tmp_path)) == ["k.key"]
    from ssgallery.formats.encryption import load_keys

    with pytest.raises(InputError, match="are the same file"):
        load_keys(tmp_path / "k.key", tmp_path / "k.key")
