"""Image ingestion: scanning, reading, validating and normalising face folders."""

import hashlib

import numpy as np
import pytest
from PIL import Image

from ssgallery.errors import InputError
from ssgallery.images.ingest import (
    FaceSet,
    load_faces,
    load_image_list,
    natural_key,
    read_image,
    scan_faces,
)


def save(path, size=(20, 24), value=None, mode="L", fmt=None, seed=0):
    """Write a real image file of ``size`` = (width, height)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(size[1], size[0]), dtype=np.uint8)
    if value is not None:
        arr[:] = value
    img = Image.fromarray(arr)
    if mode != "L":
        img = img.convert(mode)
    img.save(path, format=fmt)
    return arr


@pytest.fixture
def faces(tmp_path):
    """root/<s1,s2,s10>/ with 3 PGM/PNG images each."""
    root = tmp_path / "faces"
    for c, client in enumerate(["s10", "s2", "s1"]):
        for i in range(1, 4):
            ext = ".pgm" if i != 2 else ".png"
            save(root / client / f"{i}{ext}", seed=10 * c + i)
    return root


def messages():
    out = []
    return out, out.append


def test_natural_sort():
    names = ["s10", "s2", "s1", "S3", "a", "img10.png", "img9.png"]
    assert sorted(names, key=natural_key) == ["a", "img9.png", "img10.png", "s1", "s2",
                                              "S3", "s10"]


def test_scan_sorts_naturally_and_ignores_root_files(faces):
    (faces / "README.md").write_text("not a client")
    (faces / "MANIFEST.sha256").write_text("x")
    listing = scan_faces(faces)
    assert [c for c, _ in listing] == ["s1", "s2", "s10"]
    assert [p.name for p in listing[0][1]] == ["1.pgm", "2.png", "3.pgm"]


def test_hidden_files_and_folders_are_skipped(faces):
    (faces / "s1" / ".DS_Store").write_bytes(b"\x00\x01junk")
    (faces / "s1" / "._1.pgm").write_bytes(b"junk")
    save(faces / ".thumbs" / "1.png")
    fs = load_faces(faces, size=None)
    assert fs.clients == ["s1", "s2", "s10"]
    assert len(fs) == 9
    assert not any("/." in p or p.startswith(".") for p in fs.paths)


def test_load_faces_arrays_and_provenance(faces):
    fs = load_faces(faces, size=None)
    assert isinstance(fs, FaceSet)
    assert fs.images.shape == (9, 24, 20) and fs.images.dtype == np.float32
    assert fs.size == (20, 24)
    assert fs.labels.tolist() == ["s1"] * 3 + ["s2"] * 3 + ["s10"] * 3
    assert fs.paths[:3] == ["s1/1.pgm", "s1/2.png", "s1/3.pgm"]
    assert fs.sha256[0] == hashlib.sha256((faces / "s1" / "1.pgm").read_bytes()).hexdigest()
    # pixels are exactly the stored 8-bit values
    ref = np.asarray(Image.open(faces / "s2" / "2.png"), dtype=np.float32)
    np.testing.assert_array_equal(fs.images[4], ref)


def test_colour_and_palette_images_become_grey(tmp_path):
    save(tmp_path / "rgb.jpg", mode="RGB", value=200)
    save(tmp_path / "rgba.png", mode="RGBA", value=90)
    save(tmp_path / "pal.bmp", mode="P", value=30)
    imgs = load_image_list([tmp_path / "rgb.jpg", tmp_path / "rgba.png",
                            tmp_path / "pal.bmp"], size=None)
    assert imgs.shape == (3, 24, 20)
    assert np.allclose(imgs.mean(axis=(1, 2)), [200, 90, 30], atol=2)


def test_sixteen_bit_tiff_is_scaled_to_8_bits(tmp_path):
    arr = np.full((6, 5), 65535, dtype=np.uint16)
    arr[0, 0] = 0
    Image.fromarray(arr).save(tmp_path / "deep.tif")
    img = read_image(tmp_path / "deep.tif")
    assert img.max() == pytest.approx(255) and img.min() == 0


def test_clients_subset(faces):
    assert [c for c, _ in scan_faces(faces, clients=["s10", "s1"])] == ["s1", "s10"]
    with pytest.raises(InputError, match="no client folder s7"):
        scan_faces(faces, clients=["s1", "s7"])


# ---------------------------------------------------------------- bad inputs (issue 3, item 3)
def test_missing_root(tmp_path):
    with pytest.raises(InputError) as err:
        load_faces(tmp_path / "nowhere")
    assert str(err.value) == f"{tmp_path / 'nowhere'}: face folder does not exist"


def test_root_is_a_file(tmp_path):
    (tmp_path / "f.png").write_bytes(b"x")
    with pytest.raises(InputError, match="not a folder"):
        scan_faces(tmp_path / "f.png")


def test_empty_root(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden").mkdir()
    with pytest.raises(InputError) as err:
        load_faces(tmp_path / "empty")
    assert str(err.value) == (f"{tmp_path / 'empty'}: no client folders "
                              "(expected ROOT/<client>/<images>)")
    save(tmp_path / "empty" / "a.png")  # a flat folder of images: say so
    with pytest.raises(InputError, match=r"found 1 image\(s\) directly in it"):
        load_faces(tmp_path / "empty")


def test_too_few_images(faces):
    (faces / "s2" / "3.pgm").unlink()
    with pytest.raises(InputError) as err:
        load_faces(faces, min_images=3)
    assert str(err.value) == f"{faces / 's2'}: client folder has 2 image(s), at least 3 needed"
    (faces / "empty_client").mkdir()
    with pytest.raises(InputError, match="empty_client: client folder has 0 image"):
        scan_faces(faces)


def test_non_image_extension_is_error_or_skipped(faces):
    (faces / "s2" / "notes.txt").write_text("hello")
    with pytest.raises(InputError) as err:
        load_faces(faces)
    msg = str(err.value)
    assert msg.startswith(f"{faces / 's2' / 'notes.txt'}: not an image file")
    assert "\n" not in msg and "`skip_bad`" in msg
    seen, warn = messages()
    fs = load_faces(faces, skip_bad=True, warn=warn, size=None)
    assert len(fs) == 9
    assert len(seen) == 1 and "notes.txt" in seen[0] and "skipped" in seen[0]


def test_non_image_content_with_image_extension(faces):
    (faces / "s1" / "4.png").write_text("this is not a png")
    with pytest.raises(InputError) as err:
        load_faces(faces)
    assert str(err.value).startswith(f"{faces / 's1' / '4.png'}: not an image")
    seen, warn = messages()
    fs = load_faces(faces, skip_bad=True, warn=warn, size=None)
    assert len(fs) == 9 and "4.png" in seen[0]


@pytest.mark.parametrize("ext", [".pgm", ".png", ".jpg", ".bmp", ".tif"])
def test_truncated_image(tmp_path, ext):
    path = tmp_path / f"face{ext}"
    save(path, size=(40, 48))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputError) as err:
        read_image(path)
    assert str(err.value) == f"{path}: truncated image"


def test_truncated_image_in_folder_is_error_or_skipped(faces):
    data = (faces / "s10" / "1.pgm").read_bytes()
    (faces / "s10" / "1.pgm").write_bytes(data[:-100])
    with pytest.raises(InputError, match=r"s10/1\.pgm: truncated image; use `skip_bad`"):
        load_faces(faces)
    _, warn = messages()
    fs = load_faces(faces, skip_bad=True, warn=warn, size=None)
    assert fs.paths.count("s10/1.pgm") == 0 and len(fs) == 8
    # skipping may leave a client below the minimum: that is an error naming the folder
    with pytest.raises(InputError, match="s10: client folder has 2 readable image"):
        load_faces(faces, skip_bad=True, warn=warn, min_images=3)


def test_size_mismatch_resized_with_warning(faces):
    save(faces / "s2" / "9.png", size=(40, 50), value=77)
    seen, warn = messages()
    fs = load_faces(faces, size=None, warn=warn)
    assert fs.images.shape == (10, 24, 20)
    assert len(seen) == 1 and "resized 1 image(s) to 20x24" in seen[0] and "40x50" in seen[0]
    np.testing.assert_allclose(fs.images[fs.paths.index("s2/9.png")], 77, atol=1e-3)


def test_size_mismatch_refused_when_strict(faces):
    save(faces / "s2" / "9.png", size=(40, 50))
    with pytest.raises(InputError) as err:
        load_faces(faces, size=None, strict=True)
    assert str(err.value) == (f"{faces / 's2' / '9.png'}: image is 40x50, expected 20x24 "
                              "(strict size checking)")


def test_configured_size_resizes_everything(faces):
    seen, warn = messages()
    fs = load_faces(faces, size=(10, 12), warn=warn)
    assert fs.images.shape == (9, 12, 10) and "resized 9 image(s)" in seen[0]


def test_probe_list(tmp_path):
    save(tmp_path / "a.png", size=(20, 24))
    save(tmp_path / "b.pgm", size=(30, 36))
    seen, warn = messages()
    imgs = load_image_list([tmp_path / "a.png", tmp_path / "b.pgm"], size=(20, 24), warn=warn)
    assert imgs.shape == (2, 24, 20) and "resized 1 probe" in seen[0]
    with pytest.raises(InputError, match="b.pgm: image is 30x36, expected 20x24"):
        load_image_list([tmp_path / "a.png", tmp_path / "b.pgm"], size=(20, 24), strict=True)
    with pytest.raises(InputError, match="missing.png: no such file"):
        load_image_list([tmp_path / "missing.png"])
    with pytest.raises(InputError, match="is a folder"):
        read_image(tmp_path)
