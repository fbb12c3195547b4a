"""Renewable, unlinkable templates (issue 23 item 3): a keyed orthogonal rotation of the
matcher space applied to prototypes and probes alike. Real galleries, real CLI."""

import os

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.identify import identify
from ssgallery.app.options import CompressOptions, CompressRun
from ssgallery.app.verify import verify
from ssgallery.biometrics.metrics import linkability
from ssgallery.cli import main
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.gallery import read_client
from ssgallery.formats.gallery.protected import protect_gallery
from ssgallery.formats.protect import new_protection
from ssgallery.matchers.rotation import RotatedMatcher, secret_offset, secret_rotation


@pytest.fixture(scope="module")
def galleries(tmp_path_factory):
    root = tmp_path_factory.mktemp("protect")
    faces = make_faces(str(root / "faces"), n_clients=5, n_images=6, shape=(32, 24))
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "plain.h5", CompressOptions(m=2, cv_folds=2))
    key = root / "privacy.key"
    key.write_bytes(os.urandom(32))
    protect_gallery(root / "plain.h5", root / "protected.h5", key.read_bytes())
    probes = sorted(str(p) for p in (root / "faces").glob("*/*.png"))
    return root, key, probes


def test_rotation_is_orthogonal_deterministic_and_keyed():
    Q = secret_rotation(b"k" * 32, 40)
    np.testing.assert_allclose(Q @ Q.T, np.eye(40), atol=1e-12)
    np.testing.assert_array_equal(Q, secret_rotation(b"k" * 32, 40))
    assert np.abs(Q - secret_rotation(b"j" * 32, 40)).max() > 0.1


def test_rotation_preserves_decision_values_and_verdicts(galleries):
    root, key, probes = galleries
    for claim in ("c00", "c03"):
        plain = verify(root / "plain.h5", probes, claim)
        prot = verify(root / "protected.h5", probes, claim, privacy_key_file=str(key))
        np.testing.assert_allclose([r.score for r in prot], [r.score for r in plain],
                                   rtol=0, atol=1e-10)
        assert [r.status for r in prot] == [r.status for r in plain]
        assert {r.status for r in plain} == {"accept", "reject"}  # both verdicts occur
    a = identify(root / "plain.h5", probes, top=5)[0]
    b = identify(root / "protected.h5", probes, top=5, privacy_key_file=str(key))[0]
    assert [[c.client for c in r.candidates] for r in a] == \
        [[c.client for c in r.candidates] for r in b]


def test_protected_gallery_holds_no_image_and_no_plain_prototype(galleries):
    root, _, _ = galleries
    plain = read_client(root / "plain.h5", "c02", images=True)
    prot = read_client(root / "protected.h5", "c02", images=True, matcher=False)
    assert plain.prototype_images is not None and prot.prototype_images is None
    assert np.abs(prot.prototypes - plain.prototypes).max() > 0.1
    gap = lambda P: np.linalg.norm(P[0] - P[1])  # an isometry keeps distances, not norms
    assert gap(prot.prototypes) == pytest.approx(gap(plain.prototypes), rel=1e-9)
    assert np.abs(np.linalg.norm(prot.prototypes, axis=1)
                  - np.linalg.norm(plain.prototypes, axis=1)).min() > 1.0


def test_without_the_key_or_with_another_one_it_is_one_line(galleries, tmp_path):
    root, _, probes = galleries
    other = tmp_path / "other.key"
    other.write_bytes(os.urandom(32))
    with pytest.raises(FormatError, match="templates are protected .*needs the privacy key"):
        verify(root / "protected.h5", probes[:1], "c00")
    with pytest.raises(FormatError, match="protected with another privacy key"):
        verify(root / "protected.h5", probes[:1], "c00", privacy_key_file=str(other))
    runner = CliRunner()
    for cmd in (["verify", probes[0], "--claim", "c00"], ["identify", probes[0]],
                ["show", "--claim", "c00", "-o", str(tmp_path / "x.png")]):
        for extra in ([], ["--privacy-key-file", str(other)]):
            result = runner.invoke(main, [*cmd, "--gallery", str(root / "protected.h5"),
                                          *extra])
            assert result.exit_code == 2, result.output
            assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "x.png").exists()
    # info needs no key for protected templates (it scores nothing)
    result = runner.invoke(main, ["info", "--gallery", str(root / "protected.h5")])
    assert result.exit_code == 0 and "5 clients" in result.output, result.output


def test_show_draws_protected_prototypes_only_with_the_key(galleries, tmp_path):
    root, key, _ = galleries
    runner = CliRunner()
    out = tmp_path / "p.png"
    result = runner.invoke(main, ["show", "--claim", "c01", "-o", str(out), "--gallery",
                                  str(root / "protected.h5"), "--privacy-key-file", str(key)])
    assert result.exit_code == 0, result.output
    from PIL import Image

    plain = tmp_path / "plain.png"
    runner.invoke(main, ["show", "--claim", "c01", "-o", str(plain), "--gallery",
                         str(root / "plain.h5")])
    a = np.asarray(Image.open(out), dtype=float)
    b = np.asarray(Image.open(plain), dtype=float)
    assert a.shape == b.shape and np.abs(a - b).max() <= 1.0


def test_external_matcher_cannot_be_rotated():
    class Box:
        name = "external"

        def bounds(self):
            return (0.0, 255.0)

    with pytest.raises(SsgalleryError, match="cannot be rotated"):
        RotatedMatcher(Box(), np.eye(3))
    with pytest.raises(SsgalleryError, match="needs the privacy key"):
        new_protection(Box(), None, np.zeros((2, 3)))


def test_two_keys_give_unlinkable_prototypes_on_a_constructed_set():
    """2,000 people, each with a template from two disjoint sets of 5 noisy samples in 64
    dimensions. Plain templates of the same person are linked with certainty
    (D<->sys ~ 1), by distance and by norm; protected with two keys, mated and
    non-mated pairs are alike by either linkage (D<->sys <= 0.05, the estimator's floor
    is about that); a rotation about the origin keeps the norms, which link people
    again; protected with one key, linked again."""
    rng = np.random.default_rng(0)
    n, d = 2000, 64
    centres = rng.normal(0, 1, (n, d))
    a = centres + rng.normal(0, 0.5, (n, 5, d)).mean(1)
    b = centres + rng.normal(0, 0.5, (n, 5, d)).mean(1)

    def d_sys(x, y, norms=False):
        if norms:
            dist = -np.abs(np.linalg.norm(x, axis=1)[:, None] - np.linalg.norm(y, axis=1))
        else:
            dist = -np.sqrt(np.maximum((x * x).sum(1)[:, None] + (y * y).sum(1)
                                       - 2 * x @ y.T, 0))
        return linkability(np.diag(dist), dist[~np.eye(n, dtype=bool)])

    spread = float(np.sqrt(np.mean((a - a.mean(0)) ** 2)))

    def protected(x, key):
        iso = RotatedMatcher(Plain(d), secret_rotation(key, d),
                             secret_offset(key, d, 10 * spread))
        return iso.rotate(x)

    one, two = b"one" * 11, b"two" * 11
    assert d_sys(a, b) > 0.95 and d_sys(a, b, norms=True) > 0.3
    assert d_sys(protected(a, one), protected(b, one)) > 0.95
    assert d_sys(protected(a, one), protected(b, two)) <= 0.05
    assert d_sys(protected(a, one), protected(b, two), norms=True) <= 0.05
    about_origin = d_sys(a @ secret_rotation(one, d).T, b @ secret_rotation(two, d).T,
                         norms=True)
    assert about_origin > 0.3


def test_an_isometry_keeps_each_template_s_distance_from_its_gallery_s_centroid():
    """What the secret centre c does not hide (docs/privacy.md, Geometry): an attacker
    without key or names re-centres each protected gallery on the mean of its own
    templates, and their norms then link people exactly as the plain norms about the
    plain mean do (here D<->sys 0.36 against 0.05 for the norms as stored)."""
    rng = np.random.default_rng(0)
    n, d = 2000, 64
    centres = rng.normal(0, 1, (n, d))
    a = centres + rng.normal(0, 0.5, (n, 5, d)).mean(1)
    b = centres + rng.normal(0, 0.5, (n, 5, d)).mean(1)
    spread = float(np.sqrt(np.mean((a - a.mean(0)) ** 2)))

    def protected(x, key):
        return (x - secret_offset(key, d, 10 * spread)) @ secret_rotation(key, d).T

    def d_sys_norms(x, y):
        dist = -np.abs(np.linalg.norm(x, axis=1)[:, None] - np.linalg.norm(y, axis=1))
        return linkability(np.diag(dist), dist[~np.eye(n, dtype=bool)])

    pa, pb = protected(a, b"one" * 11), protected(b, b"two" * 11)
    assert d_sys_norms(pa, pb) <= 0.05  # the norms as stored: hidden by c
    centred = d_sys_norms(pa - pa.mean(0), pb - pb.mean(0))
    assert centred == pytest.approx(d_sys_norms(a - a.mean(0), b - b.mean(0)), abs=1e-9)
    assert centred > 0.3


class Plain:
    """A rotatable matcher space of dimension d (RBF, unbounded)."""

    name = "plain"
    learns_from_images = False

    def __init__(self, d):
        self.d = d

    def bounds(self):
        return None

    def similarity(self):
        from ssgallery.learn.similarity import RBFSimilarity

        return RBFSimilarity(1.0)


def test_compress_protects_and_encrypts_with_the_privacy_key(galleries, tmp_path):
    """compress --protect-templates --privacy-key-file: an encrypted gallery of rotated
    templates without images; verify with the key scores as the plain gallery does (to
    the learner's rounding: another training run); --update of it is refused; without
    a key, compress refuses before training; an external matcher cannot be protected."""
    root, key, probes = galleries
    runner = CliRunner()
    out = tmp_path / "g.h5"
    args = ["compress", "--store", str(root / "e.h5"), "-o", str(out), "--cv-folds", "2",
            "--protect-templates"]
    result = runner.invoke(main, args)
    assert result.exit_code == 2 and "needs the privacy key" in result.output
    assert not out.exists()
    result = runner.invoke(main, [*args, "--privacy-key-file", str(key)])
    assert result.exit_code == 0, result.output
    from ssgallery.formats.encryption import MAGIC

    assert out.read_bytes().startswith(MAGIC)
    model = read_client(out, "c02", images=True, matcher=False,
                        privacy_key=key.read_bytes())
    assert model.prototype_images is None
    plain = verify(root / "plain.h5", probes, "c02")
    prot = verify(out, probes, "c02", privacy_key_file=str(key))
    np.testing.assert_allclose([r.score for r in prot], [r.score for r in plain], atol=1e-5)
    result = runner.invoke(main, [*args, "--privacy-key-file", str(key), "--update"])
    assert result.exit_code == 2 and "protected" in result.output, result.output
    with pytest.raises(SsgalleryError, match="needs the privacy key"):
        compress(root / "e.h5", tmp_path / "h.h5", CompressOptions(protect_templates=True),
                 CompressRun())
