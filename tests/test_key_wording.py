"""How a refusal names a key the caller did not give: a library function that takes the
key's bytes (``privacy_key``) names that parameter and the function that loads one; the
commands' functions (``privacy_key_file``) and the command line (--privacy-key-file)
name the key file and its variable. Real files, the real CLI."""

import os
import pickle

import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions
from ssgallery.app.verify import verify
from ssgallery.cli import main
from ssgallery.errors import SsgalleryError
from ssgallery.formats.encryption import PRIVACY_KEY_ENV
from ssgallery.formats.gallery import read_client, read_gallery
from ssgallery.formats.gallery.protected import rewrite_gallery
from ssgallery.formats.store import load_store

LIBRARY = ("(`privacy_key`: a key file's bytes, as "
           "ssgallery.formats.encryption.load_privacy_key(FILE) reads them)")
FUNCTIONS = "(`privacy_key_file` or $SSGALLERY_PRIVACY_KEY_FILE)"
COMMANDS = "(--privacy-key-file or $SSGALLERY_PRIVACY_KEY_FILE)"
ENCRYPTED = "ssgallery gallery is encrypted; reading it needs the privacy key"
PROTECTED = ("the gallery's templates are protected (rotated with a secret key); using them "
             "needs the privacy key")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An encrypted store, and its gallery plain, encrypted and protected (unencrypted)."""
    root = tmp_path_factory.mktemp("keys")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=6, shape=(48, 36))
    key = root / "privacy.key"
    key.write_bytes(os.urandom(32))
    enroll(faces, root / "plain_store.h5")
    enroll(faces, root / "enc_store.h5", privacy_key_file=str(key))
    compress(root / "plain_store.h5", root / "plain.h5", CompressOptions(m=2, cv_folds=2))
    secret = key.read_bytes()
    rewrite_gallery(root / "plain.h5", root / "enc.h5", privacy_key=secret)
    rewrite_gallery(root / "plain.h5", root / "prot.h5", protect=secret)
    return root, faces, key


def _refused(call):
    with pytest.raises(SsgalleryError) as info:
        call()
    return str(info.value)


def test_the_library_names_privacy_key_and_its_loader(site, tmp_path):
    """read_gallery, read_client, load_store and rewrite_gallery take the key's bytes as
    ``privacy_key``: they said '(`privacy_key_file` or $SSGALLERY_PRIVACY_KEY_FILE)', a
    parameter and a variable they neither take nor read."""
    root, _, _ = site
    enc, prot = root / "enc.h5", root / "prot.h5"
    assert _refused(lambda: read_gallery(enc)) == f"{enc}: {ENCRYPTED} {LIBRARY}"
    assert _refused(lambda: read_client(enc, "c01")) == f"{enc}: {ENCRYPTED} {LIBRARY}"
    assert _refused(lambda: rewrite_gallery(enc, tmp_path / "copy.h5")) == \
        f"{enc}: {ENCRYPTED} {LIBRARY}"
    assert _refused(lambda: load_store(root / "enc_store.h5")) == (
        f"{root / 'enc_store.h5'}: ssgallery enrollment store is encrypted; reading it "
        f"needs the privacy key {LIBRARY}")
    assert _refused(lambda: read_gallery(prot, matcher=True)) == f"{prot}: {PROTECTED} {LIBRARY}"
    # writing over an encrypted gallery without the key would leave it in plaintext
    target = tmp_path / "target.h5"
    target.write_bytes(enc.read_bytes())
    assert _refused(lambda: rewrite_gallery(root / "plain.h5", target)) == (
        f"{target}: is encrypted; writing it again without the privacy key would leave it "
        f"in plaintext: give the key {LIBRARY[:-1]}), or remove it first")
    assert not (tmp_path / "copy.h5").exists() and target.read_bytes() == enc.read_bytes()


def test_the_commands_functions_and_the_command_line_name_the_key_file(site, monkeypatch):
    """verify(privacy_key_file=...) and every command name the key file and its variable,
    as they did."""
    root, faces, _ = site
    monkeypatch.delenv(PRIVACY_KEY_ENV, raising=False)
    probe = os.path.join(faces, "c01", "0.png")
    for gallery, problem in (("enc.h5", ENCRYPTED), ("prot.h5", PROTECTED)):
        said = f"{root / gallery}: {problem}"
        assert _refused(lambda g=gallery: verify(root / g, [probe], "c01")) == \
            f"{said} {FUNCTIONS}"
        # info shows a protected gallery without the key (not its templates)
        info = [["info", "--client", "c01"]] if gallery == "enc.h5" else []
        for args in (["verify", probe, "--claim", "c01"], ["identify", probe], *info):
            result = CliRunner().invoke(main, [*args, "--gallery", str(root / gallery)])
            expected = f"ssgallery: error: {said} {COMMANDS}\n"
            assert (result.exit_code, result.stderr) == (2, expected), args
    result = CliRunner().invoke(main, ["compress", "--store", str(root / "enc_store.h5"),
                                       "-o", str(root / "never.h5")])
    assert result.exit_code == 2 and result.stderr.endswith(
        f"store is encrypted; reading it needs the privacy key {COMMANDS}\n")


def test_a_key_refusal_pickles_as_its_line():
    """A refusal raised in a worker process (loky, Dask) comes back with its wording."""
    from ssgallery.formats.integrity import KeyNeeded

    for refusal in (KeyNeeded("x needs it", path="a.h5"),
                    KeyNeeded("x needs it", path="a.h5").named_as_files()):
        again = pickle.loads(pickle.dumps(refusal))
        assert (str(again), again.from_files) == (str(refusal), refusal.from_files)
