"""``info --key-file``: a gallery's signature checked before it is deployed, by the check
``verify`` makes (`ssgallery.formats.integrity.check_signature`), with verify's line and
status; without a key, a signed gallery's summary says its signature was not checked.
``show`` with a key checks it the same way before drawing anything, and so does the
library's ``rewrite_gallery`` before it signs a copy with the key."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner
from helpers import edit_h5, make_faces, opens_of, rehash_gallery

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.cli import main
from ssgallery.errors import FormatError
from ssgallery.formats.gallery.protected import rewrite_gallery

CHECKED = "signature: checked: signed with the configured key, not edited since"
NOT_CHECKED = "signature: signed, not checked"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A gallery signed with ``key`` (3 clients, m = 1), an edited copy re-hashed as
    anybody without the key can (``edited.h5``), an unsigned one, the keys and a probe."""
    root = tmp_path_factory.mktemp("info_key")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=4, seed=3)
    enroll(faces, root / "e.h5")
    (root / "key").write_bytes(bytes(range(32)))
    (root / "other").write_bytes(bytes(range(1, 33)))
    options = CompressOptions(m=1, cv_folds=0)
    compress(root / "e.h5", root / "signed.h5", options, CompressRun(key_file=str(root / "key")))
    compress(root / "e.h5", root / "unsigned.h5", options)
    shutil.copy(root / "signed.h5", root / "edited.h5")
    with edit_h5(root / "edited.h5") as f:  # a lower threshold: easier to pass
        f["index/threshold"][0] = f["index/threshold"][0] - 0.05
        f["clients/c00"].attrs["threshold"] = f["clients/c00"].attrs["threshold"] - 0.05
    rehash_gallery(root / "edited.h5")
    return root, os.path.join(faces, "c00", "0.png")


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], env={"SSGALLERY_KEY_FILE": None})


def _info(root, gallery, *options):
    return _run("info", "--gallery", root / gallery, *options)


def test_a_signed_gallery_is_checked_with_the_key(site):
    root, _ = site
    for options in ((), ("--client", "c01")):
        r = _info(root, "signed.h5", "--key-file", root / "key", *options)
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[1] == CHECKED, r.stdout
    r = _info(root, "signed.h5", "--key-file", root / "key", "--json")
    assert r.exit_code == 0, r.output
    g = json.loads(r.stdout)["gallery"]
    assert (g["signed"], g["signature_checked"]) == (True, True)
    r = _run("info", "--gallery", root / "signed.h5", "--client", "c01", "--json",
             "--key-file", root / "key")
    assert json.loads(r.stdout)["client"]["signature_checked"] is True
    # the environment names the key as it does for verify
    r = CliRunner().invoke(main, ["info", "--gallery", str(root / "signed.h5")],
                           env={"SSGALLERY_KEY_FILE": str(root / "key")})
    assert r.exit_code == 0 and CHECKED in r.stdout, r.output


@pytest.mark.parametrize("gallery, key, message", [
    ("signed.h5", "other", "gallery signature does not match the configured key"),
    ("edited.h5", "key", "gallery signature does not match the configured key"),
    ("unsigned.h5", "key", "gallery is not signed, and a signing key is configured"),
], ids=["another-key", "edited", "unsigned"])
def test_info_refuses_what_verify_refuses(site, gallery, key, message):
    """Signed with another key, edited after signing (and re-hashed), unsigned: info
    --key-file (the summary, --json, --client, --svm) refuses the gallery with verify's
    one line and status 2."""
    root, probe = site
    verify = _run("verify", probe, "--claim", "c00", "--gallery", root / gallery,
                  "--key-file", root / key)
    assert verify.exit_code == 2 and message in verify.stderr, verify.output
    for options in ((), ("--json",), ("--client", "c00"), ("--svm",)):
        r = _info(root, gallery, "--key-file", root / key, *options)
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", verify.stderr), (options, r.output)


def test_info_with_the_key_checks_every_client_against_the_signature(site, tmp_path):
    """A signed gallery whose client group was edited and the file re-sealed (no key
    needed: the seal is a checksum): verify of that client refused it, while info
    --key-file, the check before deploying, printed 'signature: checked: signed with
    the configured key, not edited since', exit 0 (it read no client group). Now it
    reads every client against its digest in the signed client index, as verify
    does; without a key info still reads no client group."""
    root, probe = site
    gallery = tmp_path / "regroup.h5"
    shutil.copy(root / "signed.h5", gallery)
    with edit_h5(gallery) as f:  # every probe above it: accepted
        f["clients/c01"].attrs["threshold"] = f["clients/c01"].attrs["threshold"] - 5.0
    line = "integrity check failed: client 'c01' does not match its digest"
    verify = _run("verify", probe, "--claim", "c01", "--gallery", gallery, "--key-file",
                  root / "key")
    assert verify.exit_code == 2 and line in verify.stderr, verify.output
    for options in ((), ("--json",)):
        r = _run("info", "--gallery", gallery, "--key-file", root / "key", *options)
        assert (r.exit_code, r.stdout) == (2, ""), (options, r.output)
        assert line in r.stderr and CHECKED not in r.output, r.output
    r = _run("info", "--gallery", gallery)  # no key: no client group read, as before
    assert r.exit_code == 0 and NOT_CHECKED in r.stdout, r.output


def test_without_a_key_info_says_the_signature_was_not_checked(site):
    """Without a key: a signed gallery's summary says its signature was not checked (and
    how to check it), the edited one's too; an unsigned one's says nothing of it, as
    before."""
    root, _ = site
    for gallery in ("signed.h5", "edited.h5"):
        r = _info(root, gallery)
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[1].startswith(NOT_CHECKED + " (--key-file"), r.stdout
        g = json.loads(_info(root, gallery, "--json").stdout)["gallery"]
        assert (g["signed"], g["signature_checked"]) == (True, False)
    r = _info(root, "unsigned.h5")
    assert r.exit_code == 0 and "signature" not in r.output, r.output
    g = json.loads(_info(root, "unsigned.h5", "--json").stdout)["gallery"]
    assert (g["signed"], g["signature_checked"]) == (False, False)


def test_key_file_needs_a_gallery(site):
    root, _ = site
    r = _run("info", "--store", root / "e.h5", "--key-file", root / "key")
    assert r.exit_code == 2 and "--key-file checks a gallery's signature" in r.stderr


@pytest.mark.parametrize("command", ["info", "show", "verify"])
@pytest.mark.parametrize("flag", ["--key-file", "--privacy-key-file"])
def test_a_key_file_that_is_a_folder_is_named(site, tmp_path, command, flag):
    """'--key-file DIR' (a folder given for the key file) said 'ssgallery: error: 3: Is
    a directory', naming a file descriptor (load_key opened the folder, and fdopen refused
    it before the regular-file check): now the folder and the problem, exit 2."""
    root, probe = site
    args = {"info": ["info", "--gallery", root / "signed.h5"],
            "show": ["show", "--claim", "c00", "--gallery", root / "signed.h5", "-o",
                     tmp_path / "p.png"],
            "verify": ["verify", probe, "--claim", "c00", "--gallery", root / "signed.h5"]}
    r = _run(*args[command], flag, tmp_path)
    assert r.exit_code == 2, r.output
    what = "privacy key file" if flag == "--privacy-key-file" else "key file"
    assert r.stderr == (f"ssgallery: error: {tmp_path}: {what} is a folder, expected a "
                        "regular file\n"), r.stderr
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("gallery, key", [("signed.h5", "other"), ("edited.h5", "key"),
                                          ("unsigned.h5", "key")],
                         ids=["another-key", "edited", "unsigned"])
def test_show_with_a_key_refuses_what_verify_refuses(site, tmp_path, gallery, key):
    """show --key-file KEY, or show with $SSGALLERY_KEY_FILE set, refuses a gallery signed
    with another key, edited after signing or unsigned with verify's one line and status
    2, and writes no montage (it drew the edited gallery's prototypes, status 0)."""
    root, probe = site
    verify = _run("verify", probe, "--claim", "c00", "--gallery", root / gallery,
                  "--key-file", root / key)
    assert verify.exit_code == 2, verify.output
    out = tmp_path / "c00.png"
    r = CliRunner().invoke(main, ["show", "--claim", "c00", "--gallery", str(root / gallery),
                                  "-o", str(out)], env={"SSGALLERY_KEY_FILE": str(root / key)})
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", verify.stderr), r.output
    r = _run("show", "--claim", "c00", "--gallery", root / gallery, "-o", out,
             "--key-file", root / key)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", verify.stderr), r.output
    assert not out.exists()


def test_show_draws_a_gallery_signed_with_the_key_and_any_without_one(site, tmp_path):
    """With the key a gallery it signed is drawn; without a key (as before) any gallery is,
    the edited and the unsigned one included."""
    root, _ = site
    r = _run("show", "--claim", "c00", "--gallery", root / "signed.h5",
             "-o", tmp_path / "signed.png", "--key-file", root / "key")
    assert r.exit_code == 0 and (tmp_path / "signed.png").is_file(), r.output
    for gallery in ("signed.h5", "edited.h5", "unsigned.h5"):
        out = tmp_path / f"nokey-{gallery}.png"
        r = _run("show", "--claim", "c00", "--gallery", root / gallery, "-o", out)
        assert r.exit_code == 0 and out.is_file(), (gallery, r.output)


@pytest.mark.parametrize("protect", [None, b"p" * 32], ids=["kept", "protected"])
@pytest.mark.parametrize("gallery, key", [("signed.h5", "other"), ("edited.h5", "key"),
                                          ("unsigned.h5", "key")],
                         ids=["another-key", "edited", "unsigned"])
def test_rewrite_gallery_with_a_key_refuses_what_verify_refuses(site, tmp_path, gallery, key,
                                                                 protect):
    """rewrite_gallery signs its copy with ``key``: a source signed with another key,
    edited after signing (re-hashed with h5py, as anybody without the key can) or unsigned
    is refused with verify's line naming the source, and nothing is written. It used to
    write the copy signed with the key, which verify --key-file then accepted. The key is
    named as this caller gave it: ``key`` (its bytes), where verify names its key file."""
    root, probe = site
    verify = _run("verify", probe, "--claim", "c00", "--gallery", root / gallery,
                  "--key-file", root / key)
    assert verify.exit_code == 2, verify.output
    out = tmp_path / "copy.h5"
    try:
        rewrite_gallery(root / gallery, out, key=(root / key).read_bytes(), protect=protect,
                        privacy_key=protect)
    except FormatError as exc:
        assert f"ssgallery: error: {exc}\n" == verify.stderr.replace(
            "(--key-file or $SSGALLERY_KEY_FILE)", "(`key`)")
    else:
        (tmp_path / "p.key").write_bytes(b"p" * 32)
        again = _run("verify", probe, "--claim", "c00", "--gallery", out, "--key-file",
                     root / key, *(("--privacy-key-file", tmp_path / "p.key") if protect else ()))
        pytest.fail(f"{gallery} was copied and signed with the key: verify of the copy "
                    f"exits {again.exit_code} ({again.stderr.strip()})")
    assert not out.exists()


def test_rewrite_gallery_copies_a_gallery_signed_with_the_key_and_any_without_one(site,
                                                                                  tmp_path):
    """With the key, a gallery it signed is copied (templates kept or protected) and the
    copy verifies with the key; without a key any gallery is copied, as before, and the
    copy is unsigned (verify with the key refuses it)."""
    root, probe = site
    privacy = tmp_path / "p.key"
    privacy.write_bytes(b"p" * 32)
    key = ("--key-file", root / "key")
    for protect, extra in ((None, ()), (privacy.read_bytes(), ("--privacy-key-file", privacy))):
        out = tmp_path / f"signed-{protect is None}.h5"
        rewrite_gallery(root / "signed.h5", out, key=(root / "key").read_bytes(),
                        protect=protect, privacy_key=protect)
        r = _run("verify", probe, "--claim", "c00", "--gallery", out, *key, *extra)
        assert r.exit_code in (0, 1), r.output
    for gallery in ("signed.h5", "edited.h5", "unsigned.h5"):
        out = tmp_path / f"nokey-{gallery}"
        rewrite_gallery(root / gallery, out)
        assert _run("verify", probe, "--claim", "c00", "--gallery", out).exit_code in (0, 1)
        r = _run("verify", probe, "--claim", "c00", "--gallery", out, *key)
        assert r.exit_code == 2 and "gallery is not signed" in r.stderr, r.output


@pytest.mark.parametrize("gallery, key", [("signed.h5", "other"), ("edited.h5", "key"),
                                          ("unsigned.h5", "key")],
                         ids=["another-key", "edited", "unsigned"])
def test_compress_update_with_a_key_refuses_what_verify_refuses(site, tmp_path, gallery, key):
    """compress --update --key-file signs a gallery holding the existing one's clients: it
    reads that gallery as verify does (with verify's line, status 2) and leaves it as it
    was. (A guard: it did so before rewrite_gallery was made to.)"""
    root, probe = site
    out = tmp_path / gallery
    shutil.copy(root / gallery, out)
    before = out.read_bytes()
    verify = _run("verify", probe, "--claim", "c00", "--gallery", out, "--key-file", root / key)
    r = _run("compress", "--store", root / "e.h5", "-o", out, "--update", "--m", "1",
             "--cv-folds", "0", "-q", "--key-file", root / key)
    assert (r.exit_code, r.stderr) == (2, verify.stderr), r.output
    assert out.read_bytes() == before


def test_rewrite_gallery_copies_only_the_source_it_checked(site, tmp_path):
    """rewrite_gallery checked ``src`` with the key in one read, then opened ``src`` again
    once per client for its rendered images: another gallery signed with the same key put
    at the path meanwhile gave the copy its images beside the checked gallery's
    prototypes, signed with the key. Shown with a real file replaced at the path, by an
    audit hook (`helpers.opens_of`, no code of ssgallery replaced), right after the
    opens one checked read makes: the copy is now exactly the checked source, and the
    path is never opened again."""
    import numpy as np

    from ssgallery.formats.gallery import read_client, read_gallery

    root, _ = site
    key = (root / "key").read_bytes()
    other = tmp_path / "other.h5"  # the same clients, other prototypes, the same key
    compress(root / "e.h5", other, CompressOptions(m=1, cv_folds=0, seed=1),
             CompressRun(key_file=str(root / "key")))

    def images(path):
        return [read_client(path, c, images=True, key=key).prototype_images
                for c in ("c00", "c01", "c02")]

    assert not any(np.array_equal(a, b) for a, b in zip(images(root / "signed.h5"),
                                                         images(other)))
    src = tmp_path / "src.h5"
    shutil.copy(root / "signed.h5", src)
    with opens_of(src) as one_read:
        read_gallery(src, arrays=True, key=key, matcher=True)  # one checked read
    with opens_of(src, swap_in=other, after=one_read["opens"]) as seen:
        rewrite_gallery(src, tmp_path / "copy.h5", key=key)
    opened_after = seen["opens"] - one_read["opens"]
    for c in ("c00", "c01", "c02"):
        mine = read_client(tmp_path / "copy.h5", c, key=key, images=True)
        theirs = read_client(root / "signed.h5", c, key=key, images=True)
        assert np.array_equal(mine.prototypes, theirs.prototypes), c
        assert np.array_equal(mine.prototype_images, theirs.prototype_images), c
    assert opened_after == 0, f"src opened {opened_after} more time(s) after its checked read"
