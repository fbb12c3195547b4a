"""Hand-crafted stores (their digest and seal made to match, as anybody who can write the
file can) whose values no writer of ssgallery gives: refused in one line naming the
file, exit 2, never an internal error or a model trained on them."""

import h5py
import pytest
from helpers import invoked, make_faces, rehash_store


@pytest.fixture
def store(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=6, seed=2)
    path = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", path, "-q"])["exit_code"] == 0
    return path


def _refused_before_training(store, tmp_path, message):
    """info and compress on ``store`` both refuse it in the one line ``message`` (after
    'ssgallery: error: STORE: '), exit 2, and compress writes no gallery."""
    for args in (["info", "--store", store],
                 ["compress", "--store", store, "-o", tmp_path / "g.h5", "--m", "1",
                  "--cv-folds", "0", "-q"]):
        out = invoked(args)
        assert (out["exit_code"], out["stderr"]) == (
            2, f"ssgallery: error: {store}: {message}\n"), out["output"]
    assert not (tmp_path / "g.h5").exists()


def test_an_rbf_gamma_beyond_any_width_is_refused(store, tmp_path):
    """An eigenface state (or option) gamma of 1e308 is finite and > 0, so it was read,
    and compress ended in 'internal error: ValueError: array must not contain infs or
    NaNs' (exit 4: the gradient's 2 gamma overflows); enroll -O gamma=1e308 wrote such a
    store. gamma is at most 1e100 (matchers.base.MAX_GAMMA), by one rule for the option
    and for the state read from a file: one line, exit 2."""
    with h5py.File(store, "a") as f:
        f["matcher"].attrs["gamma"] = 1e308
    rehash_store(store)
    _refused_before_training(store, tmp_path, "bad matcher state for 'eigenface': "
                             "eigenface: gamma must be at most 1e+100, got 1e+308")
    out = invoked(["enroll", tmp_path / "faces", "--store", tmp_path / "o.h5", "-O",
                   "gamma=1e308", "-q"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == ("ssgallery: error: eigenface: gamma must be at most 1e+100, got "
                             "1e+308\n")
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize("dtype", ["complex64", "bool"])
def test_pixels_of_no_number_kind_are_refused(store, dtype):
    """A store whose /images held complex numbers was read as their real part (numpy's
    ComplexWarning printed on stderr, quoting a line of ssgallery's source) and booleans
    as 0 and 1 pixels, exit 0; pixels are unsigned integers or floats as the writer
    stores them: one line, exit 2."""
    import numpy as np

    with h5py.File(store, "a") as f:
        images = f["images"][()]
        del f["images"]
        f["images"] = images.astype(dtype)
    rehash_store(store)
    out = invoked(["info", "--store", store])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {store}: corrupt ssgallery enrollment store: "
                             f"/images holds {np.dtype(dtype)} values, not pixels\n")


def test_cached_features_of_another_dimension_are_refused_before_any_work(store, tmp_path):
    """A store whose cached features were (n, 5) for a 14-dimensional eigenface basis was
    read: info printed 'd = 5', compress trained every client and only then refused
    ('refused: client ... has prototypes of dimension 5, the matcher's is 14 after the
    calibration ...'), and enroll --add concatenated them with 14-wide ones. Now the
    cache's width is checked against the matcher's wherever it is used: one line naming
    the store, exit 2, before any training."""
    import numpy as np

    with h5py.File(store, "a") as f:
        n, d = f["features"].shape
        del f["features"]
        f["features"] = np.zeros((n, 5))
    rehash_store(store)
    _refused_before_training(store, tmp_path, "corrupt ssgallery enrollment store: cached "
                             f"features of dimension 5, the matcher's is {d}")


@pytest.mark.parametrize(("value", "found"), [("[1, 2]", "list [1, 2]"),
                                              ('{"a": 1}', "dict {'a': 1}"),
                                              ('"abc"', "str 'abc'"),
                                              ('["zz"]', "list ['zz']")])
def test_stale_clients_are_subjects_of_the_store(store, value, found):
    """A store's stale_clients (enroll --add's record of the subjects added since the
    matcher was fitted) was read as any JSON: with basis_stale set, info joined it for its
    'basis STALE' line: [1, 2] or an object ended in 'internal error: TypeError', exit 4;
    "abc" printed as stale clients a, b, c; an unknown id as stale. Now it is a list of
    distinct subjects of the store: one line, exit 2."""
    import numpy as np

    with h5py.File(store, "a") as f:
        f.attrs["basis_stale"] = np.True_
        f.attrs["stale_clients"] = value
    rehash_store(store)
    out = invoked(["info", "--store", store])
    line = (f"ssgallery: error: {store}: corrupt ssgallery enrollment store: stale_clients "
            f"must be a list of the store's subjects, found {found}\n")
    assert (out["exit_code"], out["stderr"]) == (2, line), out["output"]


@pytest.mark.parametrize(("dtype", "value", "found"), [
    ("float32", -5.0, "-5"), ("float32", 300.5, "300.5"), ("float32", 1e30, "1e+30"),
    ("int16", -7, "-7")], ids=["negative", "above", "huge", "int16"])
def test_pixels_off_the_grey_scale_are_refused(store, tmp_path, dtype, value, found):
    """enroll stores grey levels on [0, 255] (every decoder clips to it), but a re-hashed
    store's pixel of -5, 300.5 or 1e30 (float32) or -7 (int16) was read: info showed the
    store and compress trained and wrote a gallery from it, exit 0. Now the store is
    refused: one line, exit 2, no gallery (a lazily read store too: compress)."""
    with h5py.File(store, "a") as f:
        images = f["images"][()].astype(dtype)
        images[1, 2, 3] = value
        del f["images"]
        f.create_dataset("images", data=images, chunks=(1,) + images.shape[1:])
    rehash_store(store)
    _refused_before_training(store, tmp_path, "corrupt ssgallery enrollment store: pixels "
                             f"outside [0, 255] (found {found})")


@pytest.mark.parametrize(("digest", "found"), [
    ("abc", "'abc'"), ("", "''"), ("A" * 64, "'" + "A" * 39)], ids=["short", "empty", "upper"])
def test_image_digests_are_sha256_hex(store, tmp_path, digest, found):
    """enroll records each image file's SHA-256 as 64 lowercase hex digits; a re-hashed
    store's 'abc', '' or 64 capitals was read: info showed the store (exit 0) and enroll
    --add of the same folder said 'client 'c00' is already enrolled with other images'
    (its images had not changed: the edited digest had). Now the store is refused: one
    line naming the image's row, exit 2."""
    import numpy as np

    with h5py.File(store, "a") as f:
        digests = f["sha256"].asstr()[()].tolist()
        digests[0] = digest
        del f["sha256"]
        f.create_dataset("sha256", data=np.array(digests, dtype=object),
                         dtype=h5py.string_dtype())
    rehash_store(store)
    for args in (["info", "--store", store],
                 ["enroll", tmp_path / "faces", "--store", store, "--add", "-q"]):
        out = invoked(args)
        assert out["exit_code"] == 2, out["output"]
        assert out["stderr"] == (f"ssgallery: error: {store}: corrupt ssgallery enrollment "
                                 f"store: sha256 of image 0 is not 64 lowercase hex digits, "
                                 f"found {found}\n")
