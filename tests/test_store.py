"""The enrollment store: contents, provenance, idempotence, --add, refusing bad files.
Its rows read on demand (compress, workers, --add): tests/test_store_rows.py."""

import hashlib
import os

import h5py
import numpy as np
import pytest
from helpers import assert_rounding_equal, edit_h5, make_faces, rehash_store
from PIL import Image

from ssgallery.app.enroll import enroll
from ssgallery.errors import FormatError, InputError
from ssgallery.formats.store import FORMAT_VERSION, load_store, store_summary


@pytest.fixture
def faces(tmp_path):
    return make_faces(str(tmp_path / "faces"))


def test_enroll_writes_images_provenance_and_matcher(faces, tmp_path):
    path = tmp_path / "e.h5"
    summary = enroll(faces, path)
    assert summary.changed and summary.n_images == 30 and summary.image_shape == (32, 24)
    assert summary.clients == [f"c{c:02d}" for c in range(5)] and summary.background == []
    store = load_store(path)
    assert store.images.shape == (30, 32, 24)
    with h5py.File(path) as f:
        assert f.attrs["format"] == "ssgallery-enrollment"
        assert f.attrs["format_version"] == FORMAT_VERSION
        assert f["images"].dtype == np.uint8  # 8-bit images stay 8-bit
    i = store.paths.index("c03/4.png")
    assert store.labels[i] == "c03"
    with open(os.path.join(faces, "c03", "4.png"), "rb") as fh:
        assert store.sha256[i] == hashlib.sha256(fh.read()).hexdigest()
    pixels = np.asarray(Image.open(os.path.join(faces, "c03", "4.png")), dtype=np.float32)
    np.testing.assert_array_equal(store.images[i], pixels)
    assert store.roots[i] == os.path.abspath(faces)
    # the stored matcher is the fitted one: same features as a fresh fit on the same images
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    fresh = EigenfaceMatcher().fit(store.images)
    np.testing.assert_allclose(store.matcher().transform(store.images[:3]),
                               fresh.transform(store.images[:3]), atol=1e-6)
    assert summary.dimension == fresh.n_components_


def test_enroll_is_idempotent(faces, tmp_path):
    path = tmp_path / "e.h5"
    first = enroll(faces, path)
    before = (os.stat(path).st_mtime_ns, path.read_bytes())
    again = enroll(faces, path)
    assert not again.changed and again.fingerprint == first.fingerprint
    assert (os.stat(path).st_mtime_ns, path.read_bytes()) == before  # not rewritten
    # a changed image is a change
    Image.fromarray(np.zeros((32, 24), np.uint8)).save(os.path.join(faces, "c01", "0.png"))
    assert enroll(faces, path).changed
    # so is another matcher setting
    assert enroll(faces, path, matcher_options={"variance": 0.8}).changed


def test_clients_and_background_names(faces, tmp_path):
    path = tmp_path / "e.h5"
    s = enroll(faces, path, clients="c00,c01", background=["c04"])
    assert s.clients == ["c00", "c01"] and s.background == ["c04"] and s.n_images == 18
    store = load_store(path)
    assert sorted(set(store.labels)) == ["c00", "c01", "c04"]
    with pytest.raises(InputError, match="both as client and as background"):
        enroll(faces, path, clients="c00,c01", background="c01")
    with pytest.raises(InputError, match="no client folder named zz"):
        enroll(faces, path, clients="c00,zz")


def test_background_folder(faces, tmp_path):
    bg = make_faces(str(tmp_path / "bg"), n_clients=2, n_images=3, seed=7, prefix="b")
    s = enroll(faces, tmp_path / "e.h5", background=bg)
    assert s.background == ["b00", "b01"] and len(s.clients) == 5 and s.n_images == 36
    store = load_store(tmp_path / "e.h5")
    i = store.paths.index("b01/2.png")
    assert store.roots[i] == os.path.abspath(bg) and store.labels[i] == "b01"


def test_add_keeps_the_basis_and_marks_it_stale(faces, tmp_path):
    path = tmp_path / "e.h5"
    enroll(faces, path, clients="c00,c01,c02")
    basis = load_store(path).matcher_state["components"].copy()
    s = enroll(faces, path, add=True)
    assert s.changed and s.new_clients == ["c03", "c04"] and s.basis_stale
    assert s.stale_clients == ["c03", "c04"] and s.n_images == 30
    store = load_store(path)
    np.testing.assert_array_equal(store.matcher_state["components"], basis)  # not refitted
    assert store.basis_stale and store_summary(path)["basis_stale"]
    assert not enroll(faces, path, add=True).changed  # nothing new to add
    # refitting (no --add) clears the stale flag
    assert not enroll(faces, path).basis_stale


def test_library_enroll_without_warn_reports_a_resize_as_a_warning(faces, tmp_path):
    """``warn=None`` (a library call) is the default printer: an InputWarning, not a crash."""
    from ssgallery.images.ingest import InputWarning

    Image.new("L", (48, 64), 100).save(os.path.join(faces, "c00", "big.png"))
    with pytest.warns(InputWarning, match=r"resized 1 image\(s\) to 24x32"):
        summary = enroll(faces, tmp_path / "e.h5", warn=None)
    assert summary.n_images == 31 and load_store(tmp_path / "e.h5").image_shape == (32, 24)


def test_add_refuses_changed_images_of_an_enrolled_client(faces, tmp_path):
    path = tmp_path / "e.h5"
    enroll(faces, path)
    Image.fromarray(np.zeros((32, 24), np.uint8)).save(os.path.join(faces, "c01", "0.png"))
    with pytest.raises(InputError, match="'c01' is already enrolled with other images"):
        enroll(faces, path, add=True)


def test_add_writes_every_row_of_the_folder_and_its_memory_does_not_grow_with_the_store(
        tmp_path, monkeypatch):
    import tracemalloc

    from ssgallery.formats import integrity
    from ssgallery.formats import store as store_module
    from ssgallery.images.ingest import load_faces

    faces = make_faces(str(tmp_path / "faces"), n_clients=40, n_images=8, seed=3,
                       shape=(96, 72))
    monkeypatch.setattr(store_module, "WRITE_ROWS", 16)
    monkeypatch.setattr(integrity, "SLICE_BYTES", 1 << 16)
    peaks = {}
    names = [f"c{i:02d}" for i in range(40)]
    for enrolled in (7, 37):  # one matcher basis (fitted on 7 clients), two store sizes
        path = tmp_path / f"e{enrolled}.h5"
        enroll(faces, path, clients=names[:7])
        enroll(faces, path, clients=names[:enrolled], add=True)
        tracemalloc.start()
        try:  # both add the same 3 clients
            s = enroll(faces, path, clients=names[:enrolled] + names[37:], add=True)
            peaks[enrolled] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert s.new_clients == names[37:]
    store, every = load_store(path), load_faces(faces, size=(72, 96))
    row = {p: i for i, p in enumerate(every.paths)}
    order = [row[p] for p in store.paths]  # old rows, then the new clients'
    assert sorted(order) == list(range(len(every.paths)))
    assert list(store.labels) == list(every.labels[order])
    np.testing.assert_array_equal(store.images, every.images[order])
    np.testing.assert_allclose(store.features, store.matcher().transform(every.images[order]),
                               rtol=1e-10, atol=1e-10)
    # only the new clients' pixels are read from the folder, and the old store's are
    # copied a few rows at a time: 30 more enrolled clients cost less than one float32
    # copy of their pixels (--add used to hold two or three)
    extra = every.images[:30 * 8].nbytes
    assert peaks[37] - peaks[7] < extra, peaks


def test_add_skips_again_a_bad_file_it_skipped_at_enrolment(faces, tmp_path):
    path = tmp_path / "e.h5"
    with open(os.path.join(faces, "c01", "bad.png"), "wb") as f:
        f.write(b"not a png")
    enroll(faces, path, clients="c00,c01,c02", skip_bad=True, warn=lambda m: None)
    warnings = []
    s = enroll(faces, path, add=True, skip_bad=True, warn=warnings.append)
    assert s.new_clients == ["c03", "c04"] and any("bad.png" in w for w in warnings)
    with pytest.raises(InputError, match=r"bad.png.*use --skip-bad to skip it|bad.png"):
        enroll(faces, path, add=True)


def test_library_enroll_names_the_program_given_with_another_matcher(faces, tmp_path):
    """enroll(matcher="eigenface", matcher_cmd=PROG) said "matcher 'eigenface' has no
    option 'command'", an option the caller never gave; with add, the program was
    checked against the store as if no other matcher were named. Both are refused as the
    command line refuses '--matcher eigenface --matcher-cmd PROG', nothing written."""
    path = tmp_path / "e.h5"
    for add in (False, True):
        with pytest.raises(InputError) as info:
            enroll(faces, path, matcher="eigenface", matcher_cmd="my-matcher", add=add)
        assert str(info.value) == ("`matcher_cmd` is for `matcher` external, not `matcher` "
                                   "eigenface"), info.value
        assert not path.exists()


def test_add_needs_an_existing_store(faces, tmp_path):
    with pytest.raises(FormatError, match="no such ssgallery enrollment store to add to"):
        enroll(faces, tmp_path / "none.h5", add=True)


def test_bad_store_files(faces, tmp_path):
    missing = tmp_path / "missing.h5"
    with pytest.raises(FormatError, match=r"missing.h5: no such ssgallery enrollment store"):
        load_store(missing)
    text = tmp_path / "text.h5"
    text.write_text("hello\n")
    with pytest.raises(FormatError, match=r"text.h5: not an ssgallery enrollment store \(not "
                       r"a readable HDF5"):
        load_store(text)
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(FormatError, match="without ssgallery's seal"):  # never parsed
        load_store(foreign)
    good = tmp_path / "good.h5"
    enroll(faces, good)
    newer = tmp_path / "newer.h5"
    newer.write_bytes(good.read_bytes())
    with edit_h5(newer) as f:
        f.attrs["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(FormatError, match="newer than this ssgallery supports"):
        load_store(newer)
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(good.read_bytes())
    with edit_h5(corrupt) as f:
        del f["labels"]
    with pytest.raises(FormatError, match="corrupt.h5: integrity check failed: the store's "
                       "content"):
        load_store(corrupt)
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(FormatError, match="truncated.h5: "):
        load_store(truncated)
    # enroll never overwrites a file that is not a store
    with pytest.raises(FormatError, match="text.h5: not an ssgallery enrollment store"):
        enroll(faces, text)
    assert text.read_text() == "hello\n"
    assert sorted(os.listdir(tmp_path)) == [".good.h5.lock", ".text.h5.lock", "corrupt.h5",
                                            "faces", "foreign.h5", "good.h5", "newer.h5",
                                            "text.h5", "truncated.h5"]


def test_features_are_cached_at_enroll_and_used_by_compress(faces, tmp_path, monkeypatch):
    from ssgallery.app.compress import CompressOptions, CompressRun, compress
    from ssgallery.formats.gallery import read_client

    path = tmp_path / "e.h5"
    enroll(faces, path, clients="c00,c01,c02")
    store = load_store(path)
    np.testing.assert_array_equal(store.features, store.matcher().transform(store.images))
    # --add appends the new images' features under the kept matcher
    enroll(faces, path, add=True)
    store = load_store(path)
    assert store.features.shape == (30, store.features.shape[1])
    # the new rows were mapped in their own batch: a product of another shape may round
    # its last bit differently
    assert_rounding_equal(store.features, store.matcher().transform(store.images), tol=1e-14)
    compress(path, tmp_path / "cached.h5", run=CompressRun(clients="c03"))
    # a store without the cache (older files) gives the same gallery: compress recomputes
    with edit_h5(path) as f:
        del f["features"]
    rehash_store(path)  # a store written before the cache existed
    assert load_store(path).features is None
    compress(path, tmp_path / "recomputed.h5", run=CompressRun(clients="c03"))
    a, b = (read_client(tmp_path / g, "c03", matcher=False) for g in ("cached.h5",
                                                                       "recomputed.h5"))
    assert_rounding_equal(a.prototypes, b.prototypes, tol=1e-4)
    assert_rounding_equal(a.threshold, b.threshold, tol=1e-4)
    # with the cache, compress never maps images through the matcher
    enroll(faces, path)
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    def refuse(self, images):
        raise AssertionError("transform called")

    monkeypatch.setattr(EigenfaceMatcher, "transform", refuse)
    compress(path, tmp_path / "g.h5", CompressOptions(refit_matcher=False),
             CompressRun(clients="c00"))
    # nor do the per-fold refits: they map the images from their Gram matrix
    compress(path, tmp_path / "g.h5", run=CompressRun(clients="c00"))


def test_corrupt_feature_cache_is_refused(faces, tmp_path):
    path = tmp_path / "e.h5"
    enroll(faces, path)
    with edit_h5(path) as f:
        del f["features"]
        f["features"] = np.zeros((3, 2))
    rehash_store(path)  # consistent digest: the shape check must refuse it
    with pytest.raises(FormatError, match="features"):
        load_store(path)


def test_add_refuses_a_background_subject_named_like_a_client(tmp_path):
    """A subject in both the client folder and the background folder is refused by
    ``--add`` as by a fresh enrolment, even when it is already enrolled (the background
    copy must not stand in for a changed client folder)."""
    import shutil

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=4, seed=1)
    bg = make_faces(str(tmp_path / "bg"), n_clients=2, n_images=3, seed=2, prefix="b")
    first = tmp_path / "first"
    for c in ("c00", "c01", "c02"):
        shutil.copytree(os.path.join(faces, c), first / c)
    path = tmp_path / "e.h5"
    enroll(first, path, background=bg)
    shutil.copytree(os.path.join(faces, "c01"), os.path.join(bg, "c01"))  # the enrolled files
    before = path.read_bytes()
    with pytest.raises(InputError, match=r"background subject\(s\) c01 have the same name"):
        enroll(faces, path, background=bg, add=True)
    shutil.copy(os.path.join(faces, "c00", "0.png"), os.path.join(faces, "c01", "extra.png"))
    with pytest.raises(InputError, match=r"background subject\(s\) c01 have the same name"):
        enroll(faces, path, background=bg, add=True)
    assert path.read_bytes() == before
