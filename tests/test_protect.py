"""Renewable, unlinkable templates (issue 23 item 3): a keyed orthogonal rotation of the
matcher space applied to prototypes and probes alike. Real galleries, real CLI."""

import json
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
from ssgallery.formats.gallery.protected import WRITER_ATTRS, rewrite_gallery
from ssgallery.formats.protect import new_protection
from ssgallery.matchers.rotation import Isometries, secret_offset, secret_rotation


@pytest.fixture(scope="module")
def galleries(tmp_path_factory):
    root = tmp_path_factory.mktemp("protect")
    faces = make_faces(str(root / "faces"), n_clients=5, n_images=6, shape=(32, 24))
    enroll(faces, root / "e.h5")
    # target FAR 0.1: 4 impostor people per client cannot place a 1 % tail (the pooled T
    # would sit above what these clients can score, and no verdict would be an accept)
    compress(root / "e.h5", root / "plain.h5", CompressOptions(m=2, cv_folds=2, target_far=0.1))
    key = root / "privacy.key"
    key.write_bytes(os.urandom(32))
    rewrite_gallery(root / "plain.h5", root / "protected.h5", protect=key.read_bytes())
    probes = sorted(str(p) for p in (root / "faces").glob("*/*.png"))
    return root, key, probes


def test_isometries_are_orthogonal_deterministic_keyed_and_haar():
    d = 40
    one = Isometries([b"k" * 32, b"j" * 32], d, 3.0)
    basis = lambda iso, i: iso.apply(np.eye(d) + iso.offset[i], np.full(d, i)).T  # Q_i
    Q = basis(one, 0)
    np.testing.assert_allclose(Q @ Q.T, np.eye(d), atol=1e-12)
    np.testing.assert_array_equal(Q, basis(Isometries([b"k" * 32], d, 3.0), 0))
    assert np.abs(Q - basis(one, 1)).max() > 0.1
    Z = np.random.default_rng(0).normal(size=(6, d))
    owner = [0, 1, 0, 1, 1, 0]
    np.testing.assert_allclose(one.apply(one.apply(Z, owner), owner, inverse=True), Z,
                               atol=1e-12)
    # Haar: Q e_1 is uniform on the sphere (mean 0, E[x_i^2] = 1/d) over 4,000 seeds
    many = Isometries([bytes([i % 256, i // 256]) for i in range(4000)], 8, 1.0)
    e1 = np.zeros((4000, 8))
    e1[:, 0] = 1
    x = many.apply(e1 + many.offset, np.arange(4000))
    assert np.abs((x ** 2).mean(0) - 1 / 8).max() < 0.01 and np.abs(x.mean(0)).max() < 0.03


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


def test_info_reads_a_protected_gallery_with_or_without_the_privacy_key(galleries):
    """info scores nothing, so it needs no key; its summary's matcher facts (fta_folds,
    abd386d) are read in the clear, as the plain gallery's, with the key or without."""
    root, key, _ = galleries
    runner = CliRunner()
    plain = json.loads(runner.invoke(main, ["info", "--gallery", str(root / "plain.h5"),
                                            "--json"]).stdout)["gallery"]
    for extra in ([], ["--privacy-key-file", str(key)]):
        result = runner.invoke(main, ["info", "--gallery", str(root / "protected.h5"),
                                      "--json", *extra])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["gallery"]["fta_folds"] == plain["fta_folds"]
        assert plain["fta_folds"] in ("people", "images")


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


def test_show_draws_the_protected_gallery_it_checked(galleries, tmp_path):
    """show of a protected gallery read the client once (to learn that its templates are
    protected) and again with the keyed matcher, and drew what the second read held:
    another protected gallery of the same clients (same privacy key) written at the path
    between the two reads was drawn, exit 0. Now the second read is compared with the
    first one's digest: one line naming the gallery, exit 2, nothing drawn. The file is
    replaced for real right after the first read's opens (`helpers.opens_of`)."""
    import shutil

    from helpers import opens_of

    root, key, _ = galleries
    compress(root / "e.h5", tmp_path / "plain2.h5",
             CompressOptions(m=3, cv_folds=2, target_far=0.1, seed=1))
    other = tmp_path / "other.h5"
    rewrite_gallery(tmp_path / "plain2.h5", other, protect=key.read_bytes())
    src, out = tmp_path / "g.h5", tmp_path / "p.png"
    shutil.copy(root / "protected.h5", src)
    with opens_of(src) as first:  # the opens of show's first read
        read_client(src, "c01", images=True, matcher=False, privacy_key=key.read_bytes())
    with opens_of(src, swap_in=other, after=first["opens"]) as seen:
        res = CliRunner().invoke(main, ["show", "--claim", "c01", "-o", str(out), "--gallery",
                                        str(src), "--privacy-key-file", str(key)])
    assert seen["swapped"]
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert res.stderr.startswith(f"ssgallery: error: {src}: changed while this command read "
                                 "it (digest "), res.stderr
    assert len(res.stderr.splitlines()) == 1 and not out.exists()


def test_external_matcher_cannot_be_rotated():
    class Box:
        name = "external"

        def bounds(self):
            return (0.0, 255.0)

    with pytest.raises(SsgalleryError, match="cannot be rotated"):
        new_protection(Box(), b"k" * 32, np.zeros((2, 3)))
    with pytest.raises(SsgalleryError, match="needs the privacy key"):
        new_protection(Box(), None, np.zeros((2, 3)))


def _people(n=2000, d=64, m=2, seed=0):
    """Two galleries (n, m, d) of the same n people from disjoint samples: each
    prototype is the person's centre plus the mean noise of 5 samples."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (n, 1, d))
    return [centres + rng.normal(0, 0.5, (n, m, 5, d)).mean(2) for _ in range(2)]


def _d_sys(x, y, arm):
    """D<->sys between galleries x, y (n, m, d) for one attack without key or names:
    'distance' (nearest prototypes), 'norms' (closest norms), 'centroid' (closest
    distances from each gallery's centroid), 'intra' (the client's own prototypes'
    distance)."""
    n = len(x)
    if arm == "centroid":
        x, y, arm = x - x.reshape(-1, x.shape[2]).mean(0), y - y.reshape(-1, y.shape[2]).mean(0), "norms"
    if arm == "intra":
        gx, gy = (np.linalg.norm(g[:, 0] - g[:, 1], axis=1) for g in (x, y))
        score = -np.abs(gx[:, None] - gy[None])
    else:
        score = np.full((n, n), -np.inf)
        for i in range(x.shape[1]):
            for j in range(y.shape[1]):
                a, b = x[:, i], y[:, j]
                s = (-np.abs(np.linalg.norm(a, axis=1)[:, None] - np.linalg.norm(b, axis=1))
                     if arm == "norms" else
                     -np.sqrt(np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)
                                         - 2 * a @ b.T, 0)))
                score = np.maximum(score, s)
    return linkability(np.diag(score), score[~np.eye(n, dtype=bool)])


def _protected(x, key):
    n, m, d = x.shape
    _, tmap = new_protection(Plain(d), key, x.reshape(-1, d))
    ids = [f"c{i:05d}" for i in range(n)]
    return tmap.protect(ids, x.reshape(-1, d), np.arange(n + 1) * m).reshape(n, m, d)


def test_two_keys_give_unlinkable_prototypes_on_a_constructed_set():
    """2,000 people, two prototypes each in two galleries from disjoint noisy samples.
    Plain templates of the same person are linked with certainty by distance, and by
    the distance from the gallery's centroid (D<->sys > 0.3) without any key; protected
    under two keys (one isometry per client), every attack without the key is at the
    estimator's floor (D<->sys <= 0.05): distance, norms, and the centroid attack that
    linked one gallery-wide isometry's templates as well as the plain ones. What every
    per-client isometry keeps, the distance between the client's own two prototypes,
    links exactly as it does for plain templates (here: at the floor, the noise is the
    same for everyone; docs/benchmarks/template_privacy.md measures real faces)."""
    a, b = _people()
    pa, pb = _protected(a, b"one" * 11), _protected(b, b"two" * 11)
    assert _d_sys(a, b, "distance") > 0.95 and _d_sys(a, b, "centroid") > 0.3
    for arm in ("distance", "norms", "centroid"):
        assert _d_sys(pa, pb, arm) <= 0.05, arm
    assert _d_sys(pa, pb, "intra") == pytest.approx(_d_sys(a, b, "intra"), abs=1e-9)
    assert _d_sys(pa, pb, "intra") <= 0.05
    # the same key, another salt: unrelated isometries as well
    assert _d_sys(pa, _protected(b, b"one" * 11), "centroid") <= 0.05


def test_one_isometry_for_the_gallery_was_linkable_by_its_centroid():
    """Why version 1 is no longer written: with one isometry for the whole gallery,
    each template's distance from its gallery's centroid links people across two keys
    exactly as the plain templates' does."""
    a, b = _people()
    d = a.shape[2]
    spread = float(np.sqrt(np.mean((a - a.reshape(-1, d).mean(0)) ** 2)))

    def v1(x, key):
        return (x - secret_offset(key, d, 10 * spread)) @ secret_rotation(key, d).T

    pa, pb = v1(a, b"one" * 11), v1(b, b"two" * 11)
    assert _d_sys(pa, pb, "norms") <= 0.05  # the norms as stored: hidden by c
    assert _d_sys(pa, pb, "centroid") == pytest.approx(_d_sys(a, b, "centroid"), abs=1e-9)
    assert _d_sys(pa, pb, "centroid") > 0.3


class Plain:
    """A rotatable matcher space of dimension d (RBF, unbounded)."""

    name = "plain"
    learns_from_images = False

    def __init__(self, d):
        self.d = d

    def dimension(self):
        return self.d

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


def test_a_gallery_protected_the_first_way_still_reads(galleries, tmp_path):
    """Version 1 (one isometry for the gallery) is no longer written, but a gallery
    protected that way is read with the key and scores as the plain one."""
    import dataclasses
    import json

    import h5py

    from ssgallery.formats.encryption import hkdf
    from ssgallery.formats.gallery import read_gallery, write_gallery
    from ssgallery.formats.hdf5 import read_state
    from ssgallery.formats.protect import ATTR, _check

    root, key, probes = galleries
    plain = read_gallery(root / "plain.h5", arrays=True)
    models = list(plain.clients.values())
    d = models[0].prototypes.shape[1]
    salt = os.urandom(16)
    seed = hkdf(key.read_bytes(), salt, b"ssgallery-rotation-1")
    record = {"kind": "orthogonal-rotation", "version": 1, "d": d, "salt": salt.hex(),
              "check": _check(seed).hex(), "offset_scale": 10.0}
    Q, c = secret_rotation(seed, d), secret_offset(seed, d, 10.0)
    with h5py.File(root / "plain.h5", "r") as f:
        state = read_state(f["matcher"])[0]
    old = tmp_path / "v1.h5"
    write_gallery(old, matcher_name=plain.matcher_name, matcher_config=plain.matcher_config,
                  matcher_state=state, image_shape=plain.header["image_shape"],
                  clients=[dataclasses.replace(m, prototypes=(m.prototypes - c) @ Q.T,
                                               prototype_images=None) for m in models],
                  attrs={**{k: v for k, v in plain.header.items() if k not in WRITER_ATTRS},
                         ATTR: json.dumps(record)})
    a = verify(root / "plain.h5", probes, "c01")
    b = verify(old, probes, "c01", privacy_key_file=str(key))
    np.testing.assert_allclose([r.score for r in b], [r.score for r in a], rtol=0, atol=1e-10)
    assert identify(old, probes, privacy_key_file=str(key))[0][0].candidates


@pytest.mark.parametrize("field", ["version", "d"])
def test_a_protection_record_with_a_boolean_number_is_refused(galleries, tmp_path, field):
    """The template_protection record's ``version`` and ``d`` are JSON integers: ``true``
    in a re-hashed gallery (read as 1: version 1's seed, 'protected with another privacy
    key' for a version-2 gallery; or 'for dimension True'; info read it, exit 0) is a
    malformed record, refused in one line naming the file by every reader."""
    import json
    import shutil

    import h5py
    from helpers import rehash_gallery

    from ssgallery.formats.protect import ATTR

    root, key, probes = galleries
    g = tmp_path / "forged.h5"
    shutil.copyfile(root / "protected.h5", g)
    with h5py.File(g, "a") as f:
        record = json.loads(f.attrs[ATTR])
        record[field] = True
        f.attrs[ATTR] = json.dumps(record)
    rehash_gallery(g)
    runner = CliRunner()
    for args in (["verify", probes[0], "--claim", "c00", "--privacy-key-file", str(key)],
                 ["identify", probes[0], "--privacy-key-file", str(key)], ["info"]):
        result = runner.invoke(main, [*args, "--gallery", str(g)])
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr == (f"ssgallery: error: {g}: corrupt gallery header: bad "
                                 "template_protection record\n"), (args, result.stderr)


def test_claims_on_a_protected_gallery_score_every_client_as_verify_does(galleries, tmp_path):
    """verify --claims reads the first claimed client with the gallery's matcher and the
    others without it: a protected gallery's later clients kept their rotated
    prototypes, so every client after the first was scored wrongly (AT&T: s2 +1.0025
    ACCEPT alone, -1.1303 REJECT after s1). Now each is put back with the key, and the
    scores and verdicts are the plain gallery's."""
    root, key, probes = galleries
    claims = tmp_path / "claims.txt"
    claims.write_text("".join(f"{p} {c}\n" for p in probes[::5] for c in ("c00", "c03", "c01")))
    plain = CliRunner().invoke(main, ["verify", "--gallery", str(root / "plain.h5"),
                                      "--claims", str(claims)])
    prot = CliRunner().invoke(main, ["verify", "--gallery", str(root / "protected.h5"),
                                     "--claims", str(claims), "--privacy-key-file", str(key)])
    assert plain.exit_code in (0, 1) and "ACCEPT" in plain.output, plain.output
    assert prot.exit_code == plain.exit_code and prot.output == plain.output, prot.output
