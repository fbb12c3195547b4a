"""ssgallery-dlibbox: dlib face descriptors as a black-box matcher program (issue 21
item 4). The contract on small generated images; on LFW crops (slow): the scores equal
ssgallery's analytic dlib similarity, a prototype moved by a small step changes its
score smoothly, and enroll + compress + verify through the program."""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dlib", reason="ssgallery-dlibbox needs the dlib extra: "
                    "pip install 'ssgallery[dlib]'")
if importlib.util.find_spec("face_recognition_models") is None:
    pytest.skip("ssgallery-dlibbox needs the dlib extra (face-recognition-models missing)",
                allow_module_level=True)

from PIL import Image

from ssgallery.matchers.external import ExternalMatcher, write_pgm
from ssgallery.matchers.external.contract import parse_describe
from ssgallery_dlibbox import face
from ssgallery_dlibbox.resnet import load_network

DLIBBOX = shutil.which("ssgallery-dlibbox") or os.path.join(os.path.dirname(sys.executable),
                                                            "ssgallery-dlibbox")
PEOPLE = ["Abdullah_Gul", "Carlos_Moya", "Gray_Davis", "Jean-David_Levitte",
          "Joschka_Fischer", "Meryl_Streep", "Pierce_Brosnan", "Tang_Jiaxuan"]
PER = 5


def blobs(seed, shape=(100, 75)):
    """A smooth random 8-bit image, integer valued."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[: shape[0], : shape[1]]
    img = np.zeros(shape)
    for _ in range(20):
        cy, cx, r = rng.uniform(0, shape[0]), rng.uniform(0, shape[1]), rng.uniform(4, 15)
        img += rng.uniform(-1, 1) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
    return np.round(30 + 190 * (img - img.min()) / (img.max() - img.min()))


def run(*args, stdin=None):
    return subprocess.run([DLIBBOX, *args], capture_output=True, text=True, input=stdin,
                          timeout=300, check=False)


def write_list(path, paths):
    path.write_text("".join(f"{p}\n" for p in paths), encoding="utf-8")
    return str(path)


def matrix(text):
    return np.array([[float(v) for v in line.split()] for line in text.splitlines()])


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Three 8-bit images as .pgm, the first again as an integer-valued float32 .npy,
    and a float prototype (a blend) as .npy."""
    folder = tmp_path_factory.mktemp("dlibbox imgs")
    paths = []
    for i in range(3):
        paths.append(str(folder / f"face {i}.pgm"))
        write_pgm(paths[-1], blobs(i))
    np.save(folder / "twin.npy", blobs(0).astype(np.float32))
    np.save(folder / "blend.npy", (0.6 * blobs(0) + 0.4 * blobs(1)).astype(np.float32))
    return paths + [str(folder / "twin.npy"), str(folder / "blend.npy")]


def test_describe_is_the_contract_with_the_model_digests():
    r = run("--describe")
    assert r.returncode == 0, r.stderr
    raw, desc = parse_describe(r.stdout.encode(), "ssgallery-dlibbox")
    assert desc == {"kind": "distance", "symmetric": True, "range": [0.0, 16.0],
                    "quality": True}
    assert raw["serve"] is True and raw["pixels"] == "float"
    for name, path in face.model_paths().items():
        with open(path, "rb") as handle:
            assert raw["model_sha256"][name] == hashlib.sha256(handle.read()).hexdigest()
    assert json.loads(run("--describe", "--dlib-8bit").stdout)["pixels"] == "8-bit as dlib"


def test_lists_give_squared_distances_of_every_pair(images, tmp_path):
    probes, gallery = write_list(tmp_path / "p.txt", images), write_list(tmp_path / "g.txt",
                                                                         images[:3])
    out = tmp_path / "S.txt"
    r = run("--probe-list", probes, "--gallery-list", gallery, "--out", str(out))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    S = matrix(out.read_text())
    assert S.shape == (5, 3) and np.all(S >= 0) and np.all(S < 16)
    np.testing.assert_array_equal(np.diag(S[:3]), 0.0)  # an image to itself
    np.testing.assert_array_equal(S[:3], S[:3].T)  # symmetric, exactly
    np.testing.assert_array_equal(S[3], S[0])  # a float32 .npy of the same pixels
    assert S[4].min() > 0  # the float blend is none of them
    stdout = run("--probe-list", probes, "--gallery-list", gallery)
    np.testing.assert_array_equal(matrix(stdout.stdout), S)  # stdout without --out
    q = run("--quality-list", probes)
    assert q.returncode == 0 and matrix(q.stdout).shape == (5, 1)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such image file"),
    (np.zeros((2, 3, 4), np.float32), "expected a grey image"),
    (np.full((40, 30), np.nan, np.float32), "non-finite"),
    (np.full((40, 30), 300.0, np.float32), "outside [0, 255]"),
])
def test_bad_images_are_one_line_errors(images, tmp_path, content, message):
    bad = tmp_path / "bad.npy"
    if content is not None:
        np.save(bad, content)
    r = run("--probe-list", write_list(tmp_path / "p.txt", [str(bad)]), "--gallery-list",
            write_list(tmp_path / "g.txt", images[:1]), "--out", str(tmp_path / "S.txt"))
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "S.txt").exists()


def test_serve_answers_like_one_shot_and_survives_a_bad_request(images, tmp_path):
    probes, gallery = write_list(tmp_path / "p.txt", images), write_list(tmp_path / "g.txt",
                                                                         images[3:])
    one_shot = matrix(run("--probe-list", probes, "--gallery-list", gallery).stdout)
    requests = [{"probe_list": probes, "gallery_list": gallery, "out": str(tmp_path / "a")},
                {"probe_list": str(tmp_path / "missing.txt"), "gallery_list": gallery,
                 "out": str(tmp_path / "b")},
                {"quality_list": probes, "out": str(tmp_path / "c")},
                {"probe_list": probes, "gallery_list": gallery, "out": str(tmp_path / "d")}]
    r = run("--serve", stdin="".join(json.dumps(q) + "\n" for q in requests))
    assert r.returncode == 0, r.stderr
    answers = [json.loads(line) for line in r.stdout.splitlines()]
    assert answers[0] == answers[2] == answers[3] == {"ok": True}
    assert "cannot read list" in answers[1]["error"] and not (tmp_path / "b").exists()
    for name in "ad":
        np.testing.assert_array_equal(matrix((tmp_path / name).read_text()), one_shot)
    assert matrix((tmp_path / "c").read_text()).shape == (5, 1)


def test_cache_dir_keeps_real_images_only_and_changes_no_score(images, tmp_path):
    probes, gallery = write_list(tmp_path / "p.txt", images), write_list(tmp_path / "g.txt",
                                                                         images[:2])
    cache = tmp_path / "cache"
    cold = run("--cache-dir", str(cache), "--probe-list", probes, "--gallery-list", gallery)
    warm = run("--cache-dir", str(cache), "--probe-list", probes, "--gallery-list", gallery)
    plain = run("--probe-list", probes, "--gallery-list", gallery)
    assert cold.stdout == warm.stdout == plain.stdout and cold.returncode == 0
    # three distinct real images (twin.npy has the pixels of face 0); the blend is not kept
    assert len(list(cache.rglob("*.npy"))) == 3


def test_an_unwritable_cache_dir_is_one_warning_line(images, tmp_path):
    """--cache-dir naming a folder that cannot be written (a regular file: root writes
    any folder) ran without a cache and said nothing, as ssgallery-ebgm did (0435c3c):
    now one warning line on stderr, the same scores, exit 0; served, once for all its
    requests."""
    blocked = tmp_path / "cache"
    blocked.write_text("not a folder\n", encoding="utf-8")
    probes, gallery = write_list(tmp_path / "p.txt", images), write_list(tmp_path / "g.txt",
                                                                         images[:2])
    said = run("--cache-dir", str(blocked), "--probe-list", probes, "--gallery-list", gallery)
    plain = run("--probe-list", probes, "--gallery-list", gallery)
    assert said.returncode == 0 and said.stdout == plain.stdout, said.stderr
    assert said.stderr.splitlines() == [(
        f"ssgallery-dlibbox: warning: --cache-dir {blocked}: cannot write there (not a "
        "folder); running without a cache (every image is described again on each call)")]
    requests = "".join(json.dumps({"probe_list": probes, "gallery_list": gallery,
                                   "out": str(tmp_path / f"s{i}.txt")}) + "\n"
                       for i in range(2))
    served = run("--serve", "--cache-dir", str(blocked), stdin=requests)
    assert served.returncode == 0 and served.stdout.count('"ok": true') == 2, served
    assert served.stderr.splitlines() == said.stderr.splitlines()


def test_network_equals_dlib_on_8bit_chips():
    import dlib

    paths = face.model_paths()
    recogniser = dlib.face_recognition_model_v1(paths["recognition"])
    chips = np.stack([np.asarray(Image.fromarray(blobs(s).astype(np.uint8)).resize((150, 150)))
                      for s in range(3)])
    want = np.array([recogniser.compute_face_descriptor(
        np.ascontiguousarray(np.repeat(c[:, :, None], 3, axis=2))) for c in chips])
    from ssgallery_dlibbox.resnet import forward

    got = forward(load_network(paths["recognition"])[1], chips.astype(float))
    np.testing.assert_allclose(got, want, atol=2e-6)


# ------------------------------------------------------------------ on LFW crops (slow)
@pytest.fixture(scope="module")
def lfw(lfw_faces):
    """PER images of each of PEOPLE (float, 100 x 75) and the analytic dlib matcher."""
    from ssgallery.matchers.deep import DlibMatcher

    files = [f for p in PEOPLE for f in sorted((lfw_faces / p).glob("*.png"))[:PER]]
    X = np.stack([np.asarray(Image.open(f).convert("L"), dtype=float) for f in files])
    return {"root": lfw_faces, "X": X, "dlib": DlibMatcher().fit(X)}


def black_box(X, dlib_matcher, *options):
    """The program through the contract, with the analytic matcher's RBF width."""
    return ExternalMatcher([DLIBBOX, *options], distance_scale=1 / dlib_matcher.gamma_).fit(X)


def test_scores_equal_the_analytic_dlib_similarity(lfw):
    X, dm = lfw["X"], lfw["dlib"]
    D = dm.transform(X)
    want = dm.similarity()(D, D)
    exact = black_box(X, dm, "--dlib-8bit")
    F = exact.transform(X)
    np.testing.assert_allclose(exact.similarity()(F, F), want, atol=1e-6)
    floating = black_box(X, dm)
    got = floating.similarity()(F, F)
    # the float pipeline differs only by dlib's 8-bit rounding of its upsampled image
    # and face chip: measured 0.0077 at most over 50 LFW crops
    np.testing.assert_allclose(got, want, atol=0.02)
    assert np.abs(got - want).mean() < 0.003 and np.abs(got - want).max() > 1e-4
    exact.close()
    floating.close()


def test_a_small_step_of_a_prototype_changes_its_score_smoothly(lfw):
    X, dm = lfw["X"], lfw["dlib"]
    x, toward, other = X[0], X[PER], X[2 * PER]
    delta = 0.45 * (toward - x) / np.abs(toward - x).max()  # every pixel moves < 0.5
    steps = np.linspace(0, 1, 6)
    Z = np.stack([x + t * delta for t in steps]).reshape(len(steps), -1)
    probe = other.reshape(1, -1)
    floating = black_box(X, dm)
    s = floating.similarity()(probe, Z)[0]
    ds = np.diff(s)
    assert np.abs(s[-1] - s[0]) > 1e-5  # the step is seen ...
    assert np.all(ds > 0) or np.all(ds < 0)  # ... monotone ...
    assert np.abs(np.diff(ds)).max() < 0.2 * np.abs(ds).mean()  # ... and nearly linear
    rounded = black_box(X, dm, "--dlib-8bit")
    assert np.ptp(rounded.similarity()(probe, Z)[0]) == 0.0  # 8 bits erase the step
    floating.close()
    rounded.close()


def test_enroll_compress_verify_through_the_program(lfw, tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    faces = tmp_path / "faces"
    for p in PEOPLE:  # links to the shared data: no image is copied
        (faces / p).mkdir(parents=True)
        for f in sorted((lfw["root"] / p).glob("*.png"))[:PER]:
            (faces / p / f.name).symlink_to(f)
    claim = PEOPLE[0]
    genuine = sorted((lfw["root"] / claim).glob("*.png"))[PER]  # held out
    impostor = min((lfw["root"] / "Andre_Agassi").glob("*.png"))  # not enrolled
    store, gallery, cache = tmp_path / "e.h5", tmp_path / "g.h5", tmp_path / "descriptors"
    cmd = ["--matcher-cmd", f"{DLIBBOX} --cache-dir {cache}"]
    invoke = CliRunner().invoke
    r = invoke(main, ["enroll", str(faces), "--matcher", "external", "--store", str(store),
                      *cmd])
    assert r.exit_code == 0, r.output
    r = invoke(main, ["compress", "--store", str(store), "-o", str(gallery), "--m", "2",
                      "--cv-folds", "0", "--clients", claim, *cmd])  # a black box's defaults
    assert r.exit_code == 0, r.output
    r = invoke(main, ["verify", str(genuine), str(impostor), "--claim", claim, "--gallery",
                      str(gallery), *cmd])
    lines = r.stdout.splitlines()
    assert "ACCEPT" in lines[0] and "REJECT" in lines[1], r.output
    assert len(list(cache.rglob("*.npy"))) >= len(PEOPLE) * PER  # real images cached
