"""The synthetic face generator and the committed sample_data/ set."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ssgallery.datasets import sample_faces_path
from ssgallery.errors import InputError, SsgalleryError
from ssgallery.images import synth as sd
from ssgallery.images.ingest import load_faces

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "sample_data"


def test_image_shape_and_range():
    img = sd.face_image(0, 0, 0)
    assert img.shape == (112, 92) and img.dtype == np.uint8
    assert 20 < img.mean() < 200 and img.std() > 15


def test_same_seed_same_pixels_different_seed_different_faces():
    a, la = sd.generate(identities=3, images=2, seed=7)
    b, _ = sd.generate(identities=3, images=2, seed=7)
    np.testing.assert_array_equal(a, b)
    assert la.tolist() == ["c01", "c01", "c02", "c02", "c03", "c03"]
    c, _ = sd.generate(identities=3, images=2, seed=8)
    assert np.abs(a.astype(int) - c).mean() > 5
    # an identity does not depend on how many identities or images are generated
    d, _ = sd.generate(identities=2, images=1, seed=7)
    np.testing.assert_array_equal(d, a[[0, 2]])


def test_same_seed_same_bytes(tmp_path):
    for name in ("x", "y"):
        sd.write_sample_data(tmp_path / name, identities=2, images=2, seed=3, probes=1)
    for f in sorted((tmp_path / "x").rglob("*.png")):
        assert f.read_bytes() == (tmp_path / "y" / f.relative_to(tmp_path / "x")).read_bytes()


def test_identities_differ_more_than_images_of_one_identity():
    X, labels = sd.generate(identities=6, images=5, seed=0)
    X = X.reshape(len(X), -1).astype(float)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).mean(-1))
    same = labels[:, None] == labels[None]
    off = ~np.eye(len(X), dtype=bool)
    within, between = D[same & off].mean(), D[~same].mean()
    assert between > 1.5 * within, (within, between)


def test_layout_probes_and_readme(tmp_path):
    out = tmp_path / "set"
    files = sd.write_sample_data(out, identities=4, images=3, seed=1, probes=2)
    assert sorted(p.name for p in (out / "faces").iterdir()) == ["c01", "c02", "c03", "c04"]
    assert sorted(p.name for p in (out / "faces" / "c02").iterdir()) == ["01.png", "02.png",
                                                                         "03.png"]
    probes = sorted(p.name for p in (out / "probes").iterdir())
    assert probes == ["c01_genuine_1.png", "c01_genuine_2.png", "c02_genuine_1.png",
                      "c02_genuine_2.png", "c03_genuine_1.png", "c03_genuine_2.png",
                      "unknown1_1.png", "unknown1_2.png", "unknown2_1.png", "unknown2_2.png"]
    assert len(files) == 4 * 3 + 10 + 2  # + attributes.csv, README.txt
    assert "--seed 1" in (out / "README.txt").read_text()
    # no temporary folders left behind; the output locks of the two text files stay
    assert sorted(p.name for p in out.glob(".*")) == [".README.txt.lock",
                                                       ".attributes.csv.lock"]
    faces = load_faces(out / "faces", strict=True)
    assert faces.images.shape == (12, 112, 92)
    # probes are new images: none equals a gallery image
    probe = np.asarray(Image.open(out / "probes" / "c01_genuine_1.png"), dtype=np.float32)
    assert np.abs(faces.images - probe).mean(axis=(1, 2)).min() > 1


def test_existing_set_needs_force(tmp_path):
    sd.write_sample_data(tmp_path, identities=2, images=1, probes=0)
    with pytest.raises(InputError, match="faces: already exists and is not empty"):
        sd.write_sample_data(tmp_path, identities=3, images=1, probes=0)
    sd.write_sample_data(tmp_path, identities=1, images=1, probes=0, force=True)
    assert [p.name for p in (tmp_path / "faces").iterdir()] == ["c01"]  # stale clients gone
    with pytest.raises(SsgalleryError, match="identities >= 1"):
        sd.write_sample_data(tmp_path / "z", identities=0)


def test_synth_refuses_to_replace_a_set(tmp_path):
    out = subprocess.run([sys.executable, "-m", "ssgallery", "synth", str(tmp_path / "o"),
                          "--identities", "2", "--images", "2", "--probes", "1"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote 10 files to {tmp_path / 'o'}"
    again = subprocess.run([sys.executable, "-m", "ssgallery", "synth", str(tmp_path / "o")],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip() == (f"ssgallery: error: {tmp_path / 'o' / 'faces'}: already "
                                    "exists and is not empty (use --force to replace it)")


def test_committed_sample_data_matches_generator():
    """sample_data/ is `ssgallery synth sample_data --seed 0 --variation 0.55 ...`."""
    assert sd.SAMPLE_VARIATION == 0.55
    assert "--seed 0 --probes 2 --variation 0.55\n" in (COMMITTED / "README.txt").read_text()
    assert sample_faces_path() == COMMITTED / "faces"
    faces = load_faces(COMMITTED / "faces", strict=True, min_images=10)
    assert faces.clients == [f"c{i:02d}" for i in range(1, 21)]
    assert len(faces) == 200
    names = {"c01": 0, "c07": 6, "c20": 19}
    for client, identity in names.items():
        for k in (0, 9):
            stored = np.asarray(Image.open(COMMITTED / "faces" / client / f"{k + 1:02d}.png"))
            fresh = sd.face_image(sd.DEFAULT_SEED, identity, k,
                                  variation=sd.SAMPLE_VARIATION)
            # identical up to last-bit float differences between numpy builds
            diff = np.abs(stored.astype(int) - fresh)
            assert diff.max() <= 1 and (diff > 0).mean() < 0.001
    probes = sd.probe_images(20, sd.DEFAULT_SEED, 2, sd.SAMPLE_VARIATION)
    assert sorted(p.name for p in (COMMITTED / "probes").iterdir()) == sorted(probes)
    for name in ("c03_genuine_1.png", "unknown2_2.png"):
        stored = np.asarray(Image.open(COMMITTED / "probes" / name))
        assert np.abs(stored.astype(int) - probes[name]).max() <= 1
    size = sum(f.stat().st_size for f in COMMITTED.rglob("*") if f.is_file())
    assert size < 4_000_000


def test_committed_set_is_separable_but_not_trivially():
    from ssgallery.app.synth import difficulty

    result = difficulty(COMMITTED / "faces", repetitions=1)
    assert 0.005 < result["eer_client_mean"] < 0.15, result


def test_synth_command(tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    runner = CliRunner()
    res = runner.invoke(main, ["synth", str(tmp_path / "s"), "--identities", "3", "--images",
                               "2", "--probes", "0", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert res.output == f"wrote 8 files to {tmp_path / 's'}\n"
    X, _ = sd.generate(identities=3, images=2, seed=5)
    stored = np.asarray(Image.open(tmp_path / "s" / "faces" / "c03" / "02.png"))
    np.testing.assert_array_equal(stored, X[5])
    res = runner.invoke(main, ["synth", str(tmp_path / "s")])
    assert res.exit_code == 2
    assert "already exists and is not empty" in res.output
    res = runner.invoke(main, ["synth", str(tmp_path / "t"), "--identities", "0"])
    assert res.exit_code == 2 and "x>=1" in res.output


def test_parallel_synth_writes_the_same_files(tmp_path):
    serial = sd.write_sample_data(tmp_path / "a", identities=30, images=2, probes=0)
    parallel = sd.write_sample_data(tmp_path / "b", identities=30, images=2, probes=0, jobs=2)
    assert [p.relative_to(tmp_path / "a") for p in serial] == \
        [p.relative_to(tmp_path / "b") for p in parallel]
    for a, b in zip(serial, parallel, strict=True):
        assert a.name == "README.txt" or a.read_bytes() == b.read_bytes()
    with pytest.raises(SsgalleryError, match="`jobs` must be a positive integer or -1"):
        sd.write_sample_data(tmp_path / "c", identities=2, jobs=0)


def _within_between(X, labels):
    X = X.reshape(len(X), -1).astype(float)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).mean(-1))
    same = labels[:, None] == labels[None]
    return D[same & ~np.eye(len(X), dtype=bool)].mean(), D[~same].mean()


def test_variation_scales_what_changes_between_images_of_one_person():
    """--variation V draws the same images with every per-image change V times as far
    from its middle: 1 is the default set pixel for pixel, smaller values bring the
    images of one person together while people stay as far apart, 0 leaves only the
    closed eyes (the same draws, so the same images close them)."""
    X, labels = sd.generate(identities=6, images=5, seed=0)
    np.testing.assert_array_equal(sd.generate(identities=6, images=5, seed=0,
                                              variation=1.0)[0], X)
    within, between = _within_between(X, labels)
    half, half_between = _within_between(sd.generate(identities=6, images=5, seed=0,
                                                     variation=0.5)[0], labels)
    assert half < 0.7 * within and half_between > 0.8 * between, (within, half)
    assert sd.image_attributes(0, 2, 3, variation=0.5)["light"] == pytest.approx(
        0.5 * sd.image_attributes(0, 2, 3)["light"])
    still = sd.generate(identities=2, images=8, seed=0, variation=0.0)[0].astype(int)
    closed = [sd._image_params(0, i, k, sd.identity_params(0, i), 0.0)["eyes"] < 0.5
              for i in range(2) for k in range(8)]
    for i in range(2):
        open_eyes = [still[8 * i + k] for k in range(8) if not closed[8 * i + k]]
        assert len(open_eyes) >= 2 and all((img == open_eyes[0]).all() for img in open_eyes)


def test_synth_variation_flag_is_recorded_and_checked(tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    runner = CliRunner()
    res = runner.invoke(main, ["synth", str(tmp_path / "s"), "--identities", "2", "--images",
                               "2", "--probes", "1", "--variation", "0.5"])
    assert res.exit_code == 0, res.output
    assert ("ssgallery synth s --identities 2 --images 2 --seed 0 --probes 1 --variation 0.5"
            in (tmp_path / "s" / "README.txt").read_text())
    stored = np.asarray(Image.open(tmp_path / "s" / "faces" / "c02" / "01.png"))
    np.testing.assert_array_equal(stored, sd.face_image(0, 1, 0, variation=0.5))
    probe = np.asarray(Image.open(tmp_path / "s" / "probes" / "unknown1_1.png"))
    np.testing.assert_array_equal(probe, sd.probe_images(2, 0, 1, 0.5)["unknown1_1.png"])
    for bad in ("-1", "nan", "inf"):
        res = runner.invoke(main, ["synth", str(tmp_path / bad), "--variation", bad])
        assert res.exit_code == 2, res.output
        assert res.output.strip().splitlines()[-1] == (
            f"ssgallery: error: --variation must be >= 0 and finite, got {float(bad)}")
        assert not (tmp_path / bad).exists()
