"""The dlib matcher (issue 10 item 1) on real LFW crops: descriptors, similarity and its
gradient, state, quality, and the CLI end to end. Skipped only without the extra."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dlib", reason="the dlib matcher needs the extra: "
                    "pip install 'ssgallery[dlib]'")
if importlib.util.find_spec("face_recognition_models") is None:
    pytest.skip("the dlib matcher needs the extra: pip install 'ssgallery[dlib]' "
                "(face-recognition-models missing)", allow_module_level=True)

from click.testing import CliRunner
from helpers import write_non_faces
from PIL import Image

from ssgallery.biometrics.metrics import eer
from ssgallery.cli import main
from ssgallery.errors import FormatError, MatcherError, NotRenderableError
from ssgallery.images.ingest import load_image_list
from ssgallery.matchers import deep, get_matcher_class
from ssgallery.matchers.deep import FALLBACK_QUALITY, DlibMatcher

PEOPLE = ["Abdullah_Gul", "Carlos_Moya", "Gray_Davis", "Jean-David_Levitte",
          "Joschka_Fischer", "Meryl_Streep", "Pierce_Brosnan", "Tang_Jiaxuan"]
PER = 6


@pytest.fixture
def fresh_cache():
    """An empty descriptor cache for one test (restored after it)."""
    saved = dict(deep.DESCRIPTOR_CACHE)
    deep.DESCRIPTOR_CACHE.clear()
    yield
    deep.DESCRIPTOR_CACHE.clear()
    deep.DESCRIPTOR_CACHE.update(saved)


def person_files(root, person):
    return sorted((root / person).glob("*.png"))


@pytest.fixture(scope="module")
def lfw(lfw_faces):
    """The first PER images of each of PEOPLE, a matcher fitted on them, and their
    descriptors (computed once for the module)."""
    root = lfw_faces
    images, labels = [], []
    for p in PEOPLE:
        for f in person_files(root, p)[:PER]:
            images.append(np.asarray(Image.open(f).convert("L"), dtype=np.float32))
            labels.append(p)
    X = np.stack(images)
    matcher = DlibMatcher().fit(X)
    return {"root": root, "X": X, "y": np.array(labels), "matcher": matcher,
            "D": matcher.transform(X)}


def test_registered_and_imported_lazily():
    assert get_matcher_class("dlib") is DlibMatcher
    code = ("import sys, ssgallery.matchers.deep, ssgallery.app.verify; "
            "print('dlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_missing_extra_is_one_clear_error(monkeypatch, lfw):
    monkeypatch.setitem(sys.modules, "dlib", None)  # import dlib -> ImportError
    with pytest.raises(MatcherError, match=r"pip install 'ssgallery\[dlib\]'"):
        DlibMatcher().fit(lfw["X"][:2])


def test_descriptors_shape_finite_deterministic(lfw, fresh_cache):
    D = lfw["D"]
    assert D.shape == (len(lfw["X"]), 128) and D.dtype == np.float64
    assert np.all(np.isfinite(D)) and np.all(np.linalg.norm(D, axis=1) > 0.5)
    np.testing.assert_array_equal(lfw["matcher"].transform(lfw["X"][:3]), D[:3])
    # one image alone (H, W) is a batch of one
    np.testing.assert_array_equal(lfw["matcher"].transform(lfw["X"][0]), D[:1])


def test_same_person_closer_and_pair_eer(lfw):
    D, y = lfw["D"], lfw["y"]
    dist = np.sqrt(lfw["matcher"].similarity().sq_distances(D, D))
    iu = np.triu_indices(len(D), 1)
    same = (y[:, None] == y[None])[iu]
    gen, imp = dist[iu][same], dist[iu][~same]
    assert gen.mean() < 0.7 * imp.mean()
    assert eer(-imp, -gen) < 0.05  # 48 images, 120 genuine pairs


def test_gamma_rules(lfw):
    m = lfw["matcher"]
    D = lfw["D"]
    d2 = m.similarity().sq_distances(D, D)[np.triu_indices(len(D), 1)]
    assert m.gamma_ == pytest.approx(1 / np.median(d2))
    assert DlibMatcher(gamma="paper").fit(lfw["X"]).gamma_ == 1 / 128
    assert DlibMatcher(gamma=2.5).fit(lfw["X"]).gamma_ == 2.5
    with pytest.raises(Exception, match="gamma"):
        DlibMatcher(gamma="wide").fit(lfw["X"])


def test_similarity_gradient_matches_finite_differences(lfw):
    sim = lfw["matcher"].similarity()
    X, Z = lfw["D"][:5], lfw["D"][[10, 20]] + 0.01
    G = sim.gradient(X, Z)  # (n, m, d): ds(x_i, z_j)/dz_j
    eps = 1e-6
    rng = np.random.default_rng(0)
    for k in rng.choice(128, 6, replace=False):
        Zp, Zm = Z.copy(), Z.copy()
        Zp[:, k] += eps
        Zm[:, k] -= eps
        fd = (sim(X, Zp) - sim(X, Zm)) / (2 * eps)
        np.testing.assert_allclose(G[:, :, k], fd, rtol=1e-5, atol=1e-9)


def test_state_round_trip_and_model_digests(lfw, fresh_cache):
    m = lfw["matcher"]
    state = m.get_state()
    assert all(np.isscalar(v) or isinstance(v, (str, np.ndarray)) for v in state.values())
    back = DlibMatcher.from_state(m.get_config(), state)
    np.testing.assert_array_equal(back.transform(lfw["X"][:2]), lfw["D"][:2])
    assert back.gamma_ == m.gamma_ and back.quality_threshold_ == m.quality_threshold_
    other = dict(state, sha256_recognition="0" * 64)  # fitted with other weights
    with pytest.raises(FormatError, match="recognition model"):
        DlibMatcher.from_state(m.get_config(), other).transform(lfw["X"][:1])


def test_quality_and_is_face(lfw):
    m = lfw["matcher"]
    q = m.quality(lfw["X"])
    assert q.shape == (len(lfw["X"]),)
    assert np.mean(q > 0) > 0.8  # most LFW crops are detected with confidence
    assert m.quality_threshold_ <= 0
    assert np.mean(m.is_face(lfw["X"])) >= 0.95
    flat = np.full((1, 100, 75), 128.0)  # nothing to detect: whole-image fallback
    assert m.quality(flat)[0] == FALLBACK_QUALITY
    assert np.all(np.isfinite(m.transform(flat)))
    assert DlibMatcher(detect=False).fit(lfw["X"][:4]).quality(lfw["X"][:2]).tolist() == \
        [FALLBACK_QUALITY] * 2


def test_non_faces_fail_to_acquire(lfw, tmp_path):
    """The test suite's non-face corpus, read at the gallery's size as verify reads it."""
    paths = write_non_faces(str(tmp_path))
    images = load_image_list(list(paths.values()), size=(75, 100), warn=lambda m: None)
    assert not lfw["matcher"].is_face(images).any()
    detect_off = DlibMatcher(detect=False).fit(lfw["X"][:4])  # no detector: no FTA
    assert detect_off.quality_threshold_ == FALLBACK_QUALITY
    assert detect_off.is_face(images).all()


def test_render_refuses(lfw):
    with pytest.raises(NotRenderableError, match="descriptor space"):
        lfw["matcher"].render(lfw["D"][:2])


def test_cli_enroll_compress_verify(lfw, tmp_path):
    faces = tmp_path / "faces"
    for p in PEOPLE:  # links to the shared data: no image is copied
        (faces / p).mkdir(parents=True)
        for f in person_files(lfw["root"], p)[:PER]:
            (faces / p / f.name).symlink_to(f)
    claim = PEOPLE[0]
    genuine = person_files(lfw["root"], claim)[PER]  # held out
    impostor = person_files(lfw["root"], "Andre_Agassi")[0]  # not enrolled
    store, gallery = str(tmp_path / "e.h5"), str(tmp_path / "g.h5")
    run = CliRunner().invoke
    r = run(main, ["enroll", str(faces), "--matcher", "dlib", "--store", store])
    assert r.exit_code == 0, r.output
    import h5py

    with h5py.File(store) as f:
        assert f["features"].shape == (len(PEOPLE) * PER, 128)
    # a few people: their impostor people cannot place a 1 % tail under the pooled T,
    # which leaves one impostor person out (23bda87); 10 % can be placed
    r = run(main, ["compress", "--store", store, "-o", gallery, "--m", "2",
                   "--target-far", "0.1"])
    assert r.exit_code == 0, r.output
    r = run(main, ["verify", str(genuine), str(impostor), "--claim", claim,
                   "--gallery", gallery])
    lines = r.stdout.splitlines()
    assert "ACCEPT" in lines[0] and "REJECT" in lines[1], r.output
    r = run(main, ["show", "--gallery", gallery, "--claim", claim, "-o",
                   str(tmp_path / "p.png")])
    assert r.exit_code == 2 and "cannot be drawn" in r.stderr
    # where to look instead, for this client and gallery (was "see 'ssgallery info'", then
    # 'ssgallery info --client ID', which reads ./gallery.h5, not the gallery given)
    assert r.stderr.rstrip().endswith(
        f"'ssgallery info --gallery {gallery} --client {claim}' shows its model")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_enroll_reports_each_image_the_dlib_fit_describes(faces_factory, tmp_path):
    """enroll --matcher dlib on 20 LFW people (560 images with 20 background people)
    printed 'reading images 560/560', then nothing for 91 s, then 'fitting the dlib
    matcher 1/1 fits': the fit describes every image (detector, landmarks, descriptor)
    as one step. Its phase counts images now, one step per image described."""
    faces = faces_factory(n_clients=3, n_images=3)
    res = CliRunner().invoke(main, ["enroll", faces, "--matcher", "dlib", "--store",
                                    str(tmp_path / "e.h5")],
                             env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert res.exit_code == 0, res.output
    fit = [line.split(": ", 2)[2].split(" (")[0] for line in res.stderr.splitlines()
           if "fitting the dlib matcher" in line]
    assert fit[:9] == [f"fitting the dlib matcher {i}/9" for i in range(1, 10)]
    assert fit[-1].startswith("fitting the dlib matcher 9/9 images in ")


def test_dlib_features_of_a_batch_report_every_few_images(faces_factory):
    """identify on 405 LFW probes with a dlib gallery printed 'computing features 64/253'
    every 8 s (a step per 64 images, at about 8 images/s), and a batch of at most 64
    probes (verify, identify) nothing at all for up to 8 s. dlib's features are computed
    4 images per call (DlibMatcher.transform_chunk), each call a step of 4 images."""
    import io

    from ssgallery.cli.progress import Reporter
    from ssgallery.images.ingest import load_faces
    from ssgallery.matchers.base import transform_in_chunks

    images = load_faces(faces_factory(n_clients=2, n_images=5), size=(24, 32)).images
    matcher = DlibMatcher().fit(images)
    out = io.StringIO()
    features = transform_in_chunks(matcher, images, progress=Reporter(
        "t", file=out, interval=0, delay=0), each=True)
    assert np.array_equal(features, matcher.transform(images))
    steps = [line.split()[4] for line in out.getvalue().splitlines()]
    assert steps == ["4/10", "8/10", "10/10", "10/10"]  # the last: the closing line
