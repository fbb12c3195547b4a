"""Gallery format, compress and verify as a library: contents, partial reads, thresholds,
atomicity, and the light verify path."""

import json
import os

import h5py
import numpy as np
import pytest
from helpers import RecordProgress, edit_h5, heavy_imports, make_faces, rehash_gallery

from ssgallery.app.compress import (
    CompressOptions,
    CompressRun,
    compress,
    threshold_at_far,
    threshold_folds,
)
from ssgallery.app.enroll import enroll
from ssgallery.app.verify import verify
from ssgallery.errors import EXIT_INPUT, FormatError, InputError, SsgalleryError, UnknownClientError
from ssgallery.formats.gallery import (
    FORMAT_VERSION,
    client_summary,
    gallery_summary,
    read_client,
    read_gallery,
)
from ssgallery.formats.store import load_store


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("g")
    faces = make_faces(str(root / "faces"), n_clients=5, n_images=6)
    enroll(faces, root / "e.h5")
    seen = RecordProgress()
    summary = compress(root / "e.h5", root / "g.h5", CompressOptions(m=2),
                       CompressRun(progress=seen))
    return root, faces, summary, seen


def test_gallery_layout_and_provenance(built):
    root, _, _, seen = built
    assert ("start", "training clients", 5, "clients") in seen.events
    assert seen.steps("training clients") == 5
    assert seen.events[-1] == ("end", "training clients")
    with h5py.File(root / "g.h5") as f:
        assert f.attrs["format"] == "ssgallery-gallery"
        assert f.attrs["format_version"] == 2  # float64 prototypes: older readers read it
        assert f.attrs["matcher"] == "eigenface"
        assert json.loads(f.attrs["matcher_config"])["variance"] == 0.95
        assert {"mean", "components"} <= set(f["matcher"])
        assert sorted(f["clients"]) == [f"c{c:02d}" for c in range(5)]
        g = f["clients/c02"]
        d = f["matcher/components"].shape[0]
        assert g["prototypes"].shape == (2, d) and g["beta"].shape == (2,)
        assert g["prototype_images"].shape == (2, 32, 24)
        assert g["prototype_images"].dtype == np.uint8
        prov = json.loads(g.attrs["provenance"])
        # nothing is pickled: every dataset is numeric or fixed-length bytes (the
        # search index's UTF-8 client ids)
        kinds = []
        f.visititems(lambda name, obj: kinds.append(obj.dtype.kind)
                     if isinstance(obj, h5py.Dataset) and name != "client_index" else None)
        assert set(kinds) <= set("fiuS")
        index = f["client_index"][()]  # (id bytes, sha256 hex) rows, sorted by id
        assert index.dtype.names == ("id", "digest")
        assert [i.decode() for i in index["id"]] == [f"c{c:02d}" for c in range(5)]
    for key in ("m", "lambda", "solver", "init", "omega", "n_similarity_evals", "svm_n_support",
                "svm_threshold", "svm_C", "target_far", "cv_far", "cv_frr"):
        assert key in prov, key
    assert prov["m"] == 2 and prov["solver"] == "varpro" and prov["target_far"] == 0.01
    assert prov["lambda_abs"] > 0 and prov["n_init"] >= 1
    if prov["lam_scale"] == "none":
        assert prov["lambda_abs"] == prov["lambda"]
    assert prov["svm_n_support"] > 2 and prov["n_genuine"] == 6 and prov["n_impostor"] == 24
    # the teacher's bound facts (SimilaritySVM n_free_, C_passed_): free SVs are SVs
    assert 0 <= prov["svm_n_free"] <= prov["svm_n_support"]
    assert prov["svm_C"] not in prov["svm_C_passed"]


def test_gallery_holds_no_face_image(built):
    root = built[0]
    store = load_store(root / "e.h5")
    with h5py.File(root / "g.h5") as f:
        arrays = []
        f.visititems(lambda name, obj: arrays.append(obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    faces = store.images.reshape(len(store.images), -1)
    for a in arrays:
        if a.ndim >= 2 and a.shape[-2:] == (32, 24):
            flat = a.reshape(len(a), -1).astype(float)
            dist = ((flat[:, None, :] - faces[None]) ** 2).mean(-1)
            assert dist.min() > 1.0  # no stored image equals an enrolled face


def test_read_client_and_scores(built):
    root, faces, summary, _ = built
    model = read_client(root / "g.h5", "c03")
    store = load_store(root / "e.h5")
    X = model.matcher.transform(store.images)
    g = model.decision_function(X, model.similarity_function(model.matcher))
    genuine = store.labels == "c03"
    assert g[genuine].min() > g[~genuine].max()  # toy identities separate
    row = next(r for r in summary.clients if r["client"] == "c03")
    assert model.threshold == row["threshold"]
    results = verify(root / "g.h5", [os.path.join(faces, "c03", "1.png"),
                                     os.path.join(faces, "c00", "1.png")], "c03")
    assert [r.accept for r in results] == [True, False]
    i = store.paths.index("c03/1.png")
    assert results[0].score == pytest.approx(g[i])


def test_normalization_stored_and_read_back(built, tmp_path):
    root, _, summary, _ = built
    row = next(r for r in summary.clients if r["client"] == "c01")
    norm = row["normalization"]
    # Z-norm of the 24 held-out impostor scores (every impostor is held out once)
    assert norm["kind"] == "znorm" and norm["n"] == 24 and norm["std"] > 0
    assert norm["mean"] < row["threshold"]
    model = read_client(root / "g.h5", "c01")
    assert model.normalization == norm
    assert read_gallery(root / "g.h5").clients["c01"].normalization == norm
    assert model.normalize([norm["mean"], norm["mean"] + 2 * norm["std"]]) == \
        pytest.approx([0.0, 2.0])
    bad = tmp_path / "bad.h5"
    bad.write_bytes((root / "g.h5").read_bytes())
    with edit_h5(bad) as f:
        f["clients/c01"].attrs["normalization"] = json.dumps({"kind": "znorm", "mean": 0.0,
                                                             "std": 0.0})
        del f["clients/c02"].attrs["normalization"]  # a gallery from before: None
    rehash_gallery(bad)  # consistent digests: the value check must refuse it
    with pytest.raises(FormatError, match="corrupt gallery: client 'c01'.*std <= 0"):
        read_client(bad, "c01")
    old = read_client(bad, "c02")
    assert old.normalization is None
    with pytest.raises(ValueError, match="no known score normalisation"):
        old.normalize([0.0])


def test_an_unknown_client_has_its_own_error_class(built):
    """verify --claims tells an unknown id (reported, the run goes on) from a bad gallery
    (the run stops) by its class; message and exit status are those of any input error."""
    with pytest.raises(UnknownClientError) as info:
        read_client(built[0] / "g.h5", "nobody")
    assert isinstance(info.value, SsgalleryError) and info.value.exit_code == EXIT_INPUT
    assert not isinstance(info.value, (FormatError, InputError))


def test_unknown_client_and_bad_galleries(built, tmp_path):
    root = built[0]
    with pytest.raises(SsgalleryError, match=r"g.h5: unknown client 'nobody' \(known: c00, "
                       r"c01, c02, c03, c04\)"):
        read_client(root / "g.h5", "nobody")
    with pytest.raises(FormatError, match="no such ssgallery gallery"):
        read_client(tmp_path / "none.h5", "c00")
    with pytest.raises(FormatError, match="not an ssgallery gallery but an ssgallery "
                       "enrollment store .format 'ssgallery-enroll"):
        read_client(root / "e.h5", "c00")  # a store is not a gallery
    newer = tmp_path / "newer.h5"
    newer.write_bytes((root / "g.h5").read_bytes())
    with edit_h5(newer) as f:
        f.attrs["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(FormatError, match="newer than this ssgallery supports"):
        read_gallery(newer)
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes((root / "g.h5").read_bytes())
    with edit_h5(corrupt) as f:
        del f["clients/c01/beta"]
    with pytest.raises(FormatError, match="corrupt.h5: integrity check failed: client 'c01' "
                       "does not match its digest"):
        read_client(corrupt, "c01")
    read_client(corrupt, "c02")  # the other clients stay readable


def test_summary_bytes_and_ratio(built):
    info = gallery_summary(built[0] / "g.h5", svm=True)
    row = info["clients"][0]
    d = info["dimension"]
    assert row["bytes"] == 2 * d * 8 + 2 * 8 + 16
    assert row["svm_bytes"] == row["svm_n_support"] * (d + 1) * 8 + 16
    assert row["ratio"] == pytest.approx(row["svm_bytes"] / row["bytes"])
    assert info["ratio"] > 5 and info["svm_compared"]


def test_summary_from_the_index_equals_the_client_groups(built):
    """info's summary (header + /client_index + /index, no client group opened) gives the
    numbers the client groups give; only the full-SVM fields need ``svm``."""
    path = built[0] / "g.h5"
    fast, full = gallery_summary(path), gallery_summary(path, svm=True)
    g = read_gallery(path, arrays=True)
    d = next(iter(g.clients.values())).prototypes.shape[1]
    assert fast["dimension"] == full["dimension"] == d
    assert [r["client"] for r in fast["clients"]] == sorted(g.clients) == [
        f"c{c:02d}" for c in range(5)]
    svm_only = {"bytes_images", "svm_n_support", "svm_bytes", "ratio", "svm_threshold"}
    for a, b in zip(fast["clients"], full["clients"]):
        model = g.clients[a["client"]]
        assert a["m"] == b["m"] == len(model.beta) == 2
        assert a["bytes"] == b["bytes"] == model.prototypes.nbytes + model.beta.nbytes + 16
        assert a["threshold"] == b["threshold"] == model.threshold
        assert all(a[k] is None for k in svm_only)
        assert b["svm_n_support"] == model.provenance["svm_n_support"] > 2
        assert b["svm_threshold"] == model.provenance["svm_threshold"]
        assert b["bytes_images"] == 2 * 32 * 24
    same = {k: v for k, v in fast.items() if k not in ("clients", "svm_compared", "ratio",
                                                       "svm_bytes_total")}
    assert same == {k: full[k] for k in same}
    assert fast["bytes_total"] == 5 * (2 * d * 8 + 2 * 8 + 16)
    assert not fast["svm_compared"] and fast["ratio"] is None and fast["svm_bytes_total"] is None
    assert full["svm_bytes_total"] == sum(r["svm_bytes"] for r in full["clients"])
    one = client_summary(path, "c03")  # info --client: that client's group only
    assert {k: one[k] for k in full["clients"][3]} == full["clients"][3]
    assert one["provenance"]["n_impostor"] == g.clients["c03"].provenance["n_impostor"] > 0
    assert one["gallery"] == str(path) and one["similarity"]["kind"] == "rbf"
    with pytest.raises(SsgalleryError, match="unknown client 'c99'"):
        client_summary(path, "c99")


def test_threshold_at_far():
    imp = np.arange(100.0)  # 100 impostor scores 0..99
    t = threshold_at_far(imp, 0.01)  # one false accept allowed
    assert np.sum(imp >= t) == 1 and 98 < t <= 99
    assert np.sum(imp >= threshold_at_far(imp, 0.0)) == 0
    with pytest.raises(InputError, match="no impostor images"):
        threshold_at_far([], 0.01)


def test_failed_compress_leaves_no_gallery_only_committed_parts(built, tmp_path):
    root = built[0]
    out = tmp_path / "g.h5"

    interrupt = RecordProgress(stop_at=("training clients", 2))
    with pytest.raises(KeyboardInterrupt, match="2 finished client"):
        compress(root / "e.h5", out, run=CompressRun(progress=interrupt))
    # no gallery, two committed clients (and the run's lock file, which stays:
    # docs/security.md, "Locks")
    assert sorted(os.listdir(tmp_path)) == [".g.h5.lock", "g.h5.parts"]
    assert len(os.listdir(tmp_path / "g.h5.parts")) == 2
    # an existing gallery survives a failing run untouched
    out.write_bytes((root / "g.h5").read_bytes())
    with pytest.raises(KeyboardInterrupt):
        compress(root / "e.h5", out, run=CompressRun(progress=interrupt))
    assert out.read_bytes() == (root / "g.h5").read_bytes()
    assert sorted(os.listdir(tmp_path)) == [".g.h5.lock", "g.h5", "g.h5.parts"]
    with pytest.raises(SsgalleryError, match="not an enrolled client: zz"):
        compress(root / "e.h5", out, run=CompressRun(clients="c00,zz"))
    # a bad output folder fails before any training (progress is never called)
    with pytest.raises(SsgalleryError, match="missing: folder does not exist"):
        compress(root / "e.h5", tmp_path / "missing" / "g.h5",
                 run=CompressRun(progress=interrupt))


def test_compress_options(built, tmp_path):
    root = built[0]
    s = compress(root / "e.h5", tmp_path / "g1.h5",
                 CompressOptions(m=1, solver="paper", target_far=0.1, cv_folds=0),
                 CompressRun(clients=["c01"]))
    assert [r["client"] for r in s.clients] == ["c01"] and s.clients[0]["m"] == 1
    model = read_client(tmp_path / "g1.h5", "c01")
    assert model.provenance["solver"] == "paper" and model.provenance["target_far"] == 0.1
    assert model.provenance["threshold_method"] == "training scores"
    # 5 folds asked, but only 4 impostor subjects to hold out
    assert read_client(root / "g.h5", "c01").provenance["threshold_method"] == \
        "4-fold CV, impostors held out by subject"
    with pytest.raises(InputError, match="`m` must be a positive integer"):
        compress(root / "e.h5", tmp_path / "g2.h5", CompressOptions(m=0))
    assert not (tmp_path / "g2.h5").exists()
    # max_iter reaches the learner (paper: sweeps over the m prototypes)
    s = compress(root / "e.h5", tmp_path / "g3.h5",
                 CompressOptions(m=2, solver="paper", cv_folds=0, max_iter=2),
                 CompressRun(clients=["c01"]))
    prov = read_client(tmp_path / "g3.h5", "c01").provenance
    assert prov["max_iter"] == 2 and 1 <= prov["n_iter"] <= 2 * 2  # n_iter counts moves
    assert read_client(root / "g.h5", "c01").provenance["max_iter"] == 200  # the default
    # 0: no move (the start's training images, beta by Eq. 4), with either solver
    compress(root / "e.h5", tmp_path / "g0.h5", CompressOptions(m=2, cv_folds=0, max_iter=0),
             CompressRun(clients=["c01"]))
    prov = read_client(tmp_path / "g0.h5", "c01").provenance
    assert prov["max_iter"] == 0 and prov["n_iter"] == 0
    with pytest.raises(InputError, match="`max_iter` must be a non-negative integer"):
        compress(root / "e.h5", tmp_path / "g4.h5", CompressOptions(max_iter=-1))


def test_compress_auto_m(built, tmp_path):
    root = built[0]
    s = compress(root / "e.h5", tmp_path / "ga.h5", CompressOptions(m="auto", rho=0.01),
                 CompressRun(clients="c00"))
    m = s.clients[0]["m"]
    assert 1 <= m <= 10
    prov = read_client(tmp_path / "ga.h5", "c00").provenance
    assert prov["m_selection"] == "auto" and prov["rho"] == 0.01 and prov["m"] == m


def test_verify_imports_no_sklearn_nor_matplotlib(built):
    root, faces, _, _ = built
    probe, gallery = os.path.join(faces, "c01", "0.png"), str(root / "g.h5")
    assert heavy_imports("from ssgallery.app.verify import verify\n"
                         f"assert verify({gallery!r}, [{probe!r}], 'c01')[0].accept") == "[]"
    # the CLI path too (the command group imports every command module)
    assert heavy_imports(
        "import sys\nfrom ssgallery.cli import main\n"
        f"sys.argv = ['ssgallery', 'verify', {probe!r}, '--claim', 'c01', '--gallery', "
        f"{gallery!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code") == "[]"


def test_threshold_folds_never_split_an_impostor_subject():
    rng = np.random.default_rng(0)
    groups = np.array(["c"] * 7 + [f"s{k}" for k in range(9) for _ in range(4)])
    perm = rng.permutation(len(groups))
    groups = groups[perm]
    y = np.where(groups == "c", 1, -1)
    folds = threshold_folds(y, groups, n_folds=5, random_state=3)
    assert sorted(set(folds)) == [0, 1, 2, 3, 4]
    for subject in set(groups[y < 0]):  # each impostor subject sits in one fold only
        assert len(set(folds[groups == subject])) == 1
    assert all(np.any((folds == j) & (y < 0)) for j in range(5))  # every fold has one
    genuine_per_fold = np.bincount(folds[y > 0], minlength=5)  # spread one by one
    assert genuine_per_fold.max() - genuine_per_fold.min() <= 1
    np.testing.assert_array_equal(folds, threshold_folds(y, groups, 5, random_state=3))
    # k = min(n_folds, #genuine, #impostor subjects)
    assert threshold_folds(y, groups, n_folds=20).max() + 1 == 7
    assert threshold_folds(np.r_[y[y > 0][:2], y[y < 0]], np.r_[groups[y > 0][:2],
                                                                 groups[y < 0]]).max() + 1 == 2
    # one impostor subject, or one genuine image: nothing to hold out
    assert threshold_folds([1, 1, -1, -1], ["c", "c", "a", "a"]) is None
    assert threshold_folds([1, -1, -1], ["c", "a", "b"]) is None
    # without subjects every impostor image is its own group
    assert threshold_folds([1, 1, -1, -1, -1], None, n_folds=5).max() + 1 == 2


def test_info_on_a_library_written_gallery_without_optional_attrs(built, tmp_path):
    """write_gallery called without compress's attrs (no target FAR, no calibration, no
    provenance): info prints 'not recorded', never an internal error."""
    from click.testing import CliRunner

    from ssgallery.cli import main
    from ssgallery.formats.gallery import write_gallery

    root = built[0]
    g = read_gallery(root / "g.h5", arrays=True)
    store = load_store(root / "e.h5", images=False)
    models = list(g.clients.values())
    for model in models:
        model.provenance = {}
    out = tmp_path / "lib.h5"
    write_gallery(out, matcher_name=store.matcher_name, matcher_config=store.matcher_config,
                  matcher_state=store.matcher_state, image_shape=store.image_shape,
                  clients=models)
    r = CliRunner().invoke(main, ["info", "--gallery", str(out)])
    assert r.exit_code == 0, r.output
    assert "target FAR not recorded" in r.output and "5 clients" in r.output
    assert "matches per claim: 2 (--svm compares with the full SVMs" in r.output
    r = CliRunner().invoke(main, ["info", "--gallery", str(out), "--svm"])
    assert r.exit_code == 0, r.output  # no SVM in the provenance: no '0.0x smaller'
    assert "matches per claim: 2 (no full SVM recorded)" in r.output
    assert "smaller" not in r.output
    r = CliRunner().invoke(main, ["info", "--gallery", str(out), "--client", "c01"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"client c01 of {out}: m = 2, ") and \
        r.output.splitlines()[0].endswith("; no full SVM recorded")
