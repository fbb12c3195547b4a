"""Eigenface matcher: PCA basis, scaling, RBF similarity, rendering, state round trip."""

import json

import numpy as np
import pytest
from helpers import heavy_imports

from ssgallery.errors import InputError, SsgalleryError
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.matchers import available_matchers, get_matcher_class
from ssgallery.matchers.eigenface import EigenfaceMatcher


def low_rank_faces(n=40, shape=(12, 10), rank=6, seed=0):
    """Images on [0, 255] that live (up to small noise) in a rank-``rank`` affine space."""
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(rank, shape[0] * shape[1]))
    coef = rng.normal(size=(n, rank)) * np.linspace(15, 3, rank)
    X = 128 + coef @ basis + rng.normal(scale=0.5, size=(n, basis.shape[1]))
    return np.clip(X, 0, 255).reshape((n,) + shape).astype(np.float32)


def test_registered_as_entry_point():
    assert "eigenface" in available_matchers()
    assert get_matcher_class("eigenface") is EigenfaceMatcher


def test_variance_selects_smallest_d_reaching_fraction():
    X = low_rank_faces()
    m = EigenfaceMatcher(variance=0.95).fit(X)
    cum = np.cumsum(m.explained_variance_ratio_)
    assert cum[-1] >= 0.95
    assert m.n_components_ == 1 or cum[-2] < 0.95
    assert m.components_.shape == (m.n_components_, 120)
    # orthonormal axes
    C = m.components_.astype(float)
    np.testing.assert_allclose(C @ C.T, np.eye(m.n_components_), atol=1e-5)
    assert EigenfaceMatcher(n_components=3).fit(X).n_components_ == 3


def test_matches_scikit_learn_pca_up_to_sign_and_scale():
    from sklearn.decomposition import PCA

    X = low_rank_faces()
    m = EigenfaceMatcher(n_components=5).fit(X)
    ref = PCA(n_components=5, svd_solver="full").fit(X.reshape(len(X), -1).astype(float))
    Z = m.transform(X) * m.scale_
    Zr = ref.transform(X.reshape(len(X), -1).astype(float))
    np.testing.assert_allclose(np.abs(Z), np.abs(Zr), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(m.explained_variance_, ref.explained_variance_, rtol=1e-6)


def test_scaled_coefficients_have_unit_mean_variance():
    X = low_rank_faces()
    m = EigenfaceMatcher(variance=0.9).fit(X)
    Z = m.transform(X)
    np.testing.assert_allclose(Z.var(0, ddof=1).mean(), 1.0, rtol=1e-6)
    np.testing.assert_allclose(Z.mean(0), 0.0, atol=1e-6)


def test_gamma_modes():
    X = low_rank_faces()
    paper = EigenfaceMatcher(n_components=4, gamma="paper").fit(X)
    assert paper.gamma_ == pytest.approx(1 / 4)
    med = EigenfaceMatcher(n_components=4, gamma="median").fit(X)
    Z = med.transform(X)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)[np.triu_indices(len(Z), 1)]
    assert med.gamma_ == pytest.approx(1 / np.median(D))
    # with unit-variance scaling the median squared distance is about 2d
    assert 1 / med.gamma_ == pytest.approx(2 * 4, rel=0.35)
    assert EigenfaceMatcher(n_components=4, gamma=0.3).fit(X).gamma_ == 0.3
    assert EigenfaceMatcher(n_components=4, gamma="0.3").fit(X).gamma_ == 0.3
    sim = paper.similarity()
    assert isinstance(sim, RBFSimilarity) and sim.gamma == paper.gamma_


@pytest.mark.parametrize("kwargs, word", [
    ({"gamma": "wide"}, "gamma"), ({"gamma": -1.0}, "gamma"), ({"variance": 1.5}, "variance"),
    ({"variance": 0.0}, "variance"), ({"n_components": 0}, "n_components"),
    ({"n_components": 500}, "rank")])
def test_bad_parameters_are_one_line_errors(kwargs, word):
    with pytest.raises(SsgalleryError, match=word) as err:
        EigenfaceMatcher(**kwargs).fit(low_rank_faces())
    assert "\n" not in str(err.value)


def test_bad_images():
    m = EigenfaceMatcher(n_components=3).fit(low_rank_faces())
    with pytest.raises(InputError, match="fitted on 10x12"):
        m.transform(np.zeros((2, 13, 10)))
    with pytest.raises(InputError, match="NaN"):
        m.transform(np.full((1, 12, 10), np.nan))
    with pytest.raises(InputError, match="at least 2"):
        EigenfaceMatcher().fit(np.zeros((1, 12, 10)))
    with pytest.raises(SsgalleryError, match="not fitted"):
        EigenfaceMatcher().transform(np.zeros((1, 12, 10)))
    assert m.transform(np.zeros((12, 10))).shape == (1, 3)  # one image without batch axis


def test_transform_does_not_modify_input():
    X = low_rank_faces().astype(np.float64)
    before = X.copy()
    EigenfaceMatcher(n_components=3).fit(X).transform(X)
    np.testing.assert_array_equal(X, before)


def test_transform_in_blocks_equals_one_block(monkeypatch):
    """Large inputs are projected a block at a time (bounded temporaries): same numbers,
    same order, including a last partial block."""
    from ssgallery.matchers import eigenface

    X = low_rank_faces(n=40)
    matcher = EigenfaceMatcher(n_components=4).fit(X)
    whole = matcher.transform(X)
    monkeypatch.setattr(eigenface, "TRANSFORM_CHUNK", 7)
    blocks = matcher.transform(X)
    assert blocks.shape == (40, 4)
    np.testing.assert_allclose(blocks, whole, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matcher.transform(X[3]), whole[3:4], rtol=1e-12, atol=1e-12)


def test_render_inverts_transform_on_the_subspace():
    X = low_rank_faces(rank=6)
    m = EigenfaceMatcher(n_components=6).fit(X)
    R = m.render(m.transform(X))
    assert R.shape == X.shape and R.dtype == np.float32
    assert np.abs(R - X).max() < 5  # only the 0.5-sigma noise is lost
    # rendering clips to the pixel range
    far = m.render(np.full((1, 6), 1e6))
    assert far.min() >= 0 and far.max() <= 255


def test_state_round_trip_is_exact_and_plain():
    X = low_rank_faces()
    m = EigenfaceMatcher(variance=0.9, gamma="median").fit(X)
    config, state = m.get_config(), m.get_state()
    json.dumps(config)
    for value in state.values():
        assert isinstance(value, (np.ndarray, int, float, str))
        if isinstance(value, np.ndarray):
            assert value.dtype != object
    m2 = EigenfaceMatcher.from_state(config, state)
    probes = low_rank_faces(n=7, seed=3)
    np.testing.assert_array_equal(m2.transform(probes), m.transform(probes))
    Z = m.transform(probes[:2])
    np.testing.assert_array_equal(m2.render(Z), m.render(Z))
    assert m2.gamma_ == m.gamma_ and m2.image_shape == (12, 10)
    assert m2.bounds() is None


def test_from_state_rejects_broken_state():
    m = EigenfaceMatcher(n_components=3).fit(low_rank_faces())
    state = m.get_state()
    with pytest.raises(SsgalleryError, match="lacks 'mean'"):
        EigenfaceMatcher.from_state(m.get_config(), {k: v for k, v in state.items()
                                                     if k != "mean"})
    with pytest.raises(SsgalleryError, match="inconsistent"):
        EigenfaceMatcher.from_state(m.get_config(), dict(state, image_shape=np.array([5, 5])))


def test_similarity_gradient_matches_finite_differences():
    X = low_rank_faces()
    m = EigenfaceMatcher(n_components=5).fit(X)
    F = m.transform(X[:6])
    Zp = m.transform(X[6:9]) * 0.7
    sim = m.similarity()
    G = sim.gradient(F, Zp)  # (6, 3, 5): ds(x_i, z_j)/dz_j
    eps = 1e-6
    for j in range(3):
        for k in range(5):
            Zh = Zp.copy()
            Zh[j, k] += eps
            Zl = Zp.copy()
            Zl[j, k] -= eps
            num = (sim(F, Zh)[:, j] - sim(F, Zl)[:, j]) / (2 * eps)
            np.testing.assert_allclose(G[:, j, k], num, rtol=1e-5, atol=1e-9)


def test_verify_path_imports_no_scikit_learn(tmp_path):
    m = EigenfaceMatcher(n_components=3).fit(low_rank_faces())
    np.savez(tmp_path / "state.npz", **m.get_state())
    assert heavy_imports(
        "import numpy as np\n"
        "from ssgallery.matchers import get_matcher_class\n"
        f"s = dict(np.load({str(tmp_path / 'state.npz')!r}))\n"
        "m = get_matcher_class('eigenface').from_state({'variance': 0.95}, s)\n"
        "z = m.transform(np.zeros((2, 12, 10)))\n"
        "m.similarity()(z, z)") == "[]"


@pytest.mark.slow
def test_att_reconstruction_and_dimension(att_faces):
    from ssgallery.images.ingest import load_faces

    faces = load_faces(att_faces)
    train = faces.images[faces.labels != "s40"]
    m = EigenfaceMatcher().fit(train[::2])  # 195 images
    assert 60 <= m.n_components_ <= 130  # paper: d = 56 on average with 100 images
    R = m.render(m.transform(faces.images))
    err = np.abs(R - faces.images).mean(axis=(1, 2))
    # training images are reconstructed closely, unseen faces reasonably
    assert err[::2].mean() < 8.0
    assert err[faces.labels == "s40"].mean() < 20.0
    # relative reconstruction error of the unseen subject's images
    X = faces.images[faces.labels == "s40"]
    rel = np.linalg.norm(R[faces.labels == "s40"] - X) / np.linalg.norm(X - m.mean_.reshape(X.shape[1:]))
    assert rel < 0.6
