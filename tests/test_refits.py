"""Matchers refitted on subsets of images (compress's threshold-CV folds): eigenface's
spaces from the Gram matrix equal those of fitting the matcher on the subset."""

import numpy as np
import pytest
from helpers import synthetic_images

from ssgallery.errors import InputError, SsgalleryError
from ssgallery.matchers.eigenface import EigenfaceMatcher
from ssgallery.matchers.refits import EigenfaceRefits, Refits, subset_refits


def _fitted_space(config, images, keep):
    m = EigenfaceMatcher(**config).fit(images[keep])
    return m.transform(images), m.similarity().gamma


def _same_up_to_axis_signs(Z, ref, tol):
    """Z equals ref column by column up to each column's sign, to tol of ref's scale."""
    assert Z.shape == ref.shape
    signs = np.sign(np.sum(Z * ref, axis=0))
    assert np.all(signs != 0)
    np.testing.assert_allclose(Z * signs, ref, rtol=0, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("config", [{}, {"gamma": "median"}, {"n_components": 4},
                                    {"variance": 0.8, "gamma": 0.5}])
@pytest.mark.parametrize("shape", [(12, 10), (6, 5)])  # more pixels than images, fewer
def test_eigenface_refits_equal_fitting_on_the_subset(config, shape):
    images, labels = synthetic_images(n_subjects=8, per=7, shape=shape, seed=3)
    refits = subset_refits(EigenfaceMatcher, config, images)
    assert isinstance(refits, EigenfaceRefits)
    for held in (["id0"], ["id1", "id5"], ["id2", "id3", "id7"]):
        keep = ~np.isin(labels, held)
        Z, similarity, bounds = refits.space(keep)
        ref, gamma = _fitted_space(config, images, keep)
        # the fitted matcher stores its axes as float32: its coefficients differ from
        # the exact PCA's by ~1e-8 of their scale, the Gram route's by ~1e-14
        _same_up_to_axis_signs(Z, ref, 1e-6)
        assert similarity.gamma == pytest.approx(gamma, rel=1e-6) and bounds is None
        Zi, _, _ = refits.space(np.flatnonzero(keep))
        np.testing.assert_array_equal(Zi, Z)


def test_eigenface_refits_are_the_exact_pca():
    images, labels = synthetic_images(n_subjects=8, per=7, shape=(12, 10), seed=4)
    keep = labels != "id4"
    Z, _, _ = EigenfaceRefits(EigenfaceMatcher, {"n_components": 5}, images).space(keep)
    X = images.reshape(len(images), -1).astype(np.float64)
    mean = X[keep].mean(0)
    _, s, Vt = np.linalg.svd(X[keep] - mean, full_matrices=False)
    var = s[:5] ** 2 / (keep.sum() - 1)
    _same_up_to_axis_signs(Z, (X - mean) @ Vt[:5].T / np.sqrt(var.mean()), 1e-12)
    top = np.argmax(np.abs(Z[keep]), axis=0)  # deterministic signs
    assert np.all(Z[keep][top, np.arange(5)] > 0)


def test_eigenface_refits_refuse_what_fit_refuses():
    images, _ = synthetic_images(n_subjects=4, per=5, shape=(12, 10), seed=5)
    with pytest.raises(InputError, match="need at least 2 training images, got 1"):
        EigenfaceRefits(EigenfaceMatcher, {}, images).space(np.arange(1))
    with pytest.raises(SsgalleryError, match="n_components=9 exceeds the rank"):
        EigenfaceRefits(EigenfaceMatcher, {"n_components": 9}, images).space(np.arange(5))
    same = np.repeat(images[:1], 6, axis=0)
    with pytest.raises(InputError, match="training images are all identical"):
        EigenfaceRefits(EigenfaceMatcher, {}, same).space(np.arange(6))
    with pytest.raises(SsgalleryError, match="variance must be a number"):
        EigenfaceRefits(EigenfaceMatcher, {"variance": 2.0}, images)


def test_generic_refits_fit_on_the_subset():
    class Plain(EigenfaceMatcher):  # a matcher without a cheaper equivalent of fit
        subset_refits = None

    images, labels = synthetic_images(n_subjects=5, per=5, shape=(12, 10), seed=6)
    refits = subset_refits(Plain, {}, images)
    assert type(refits) is Refits
    keep = labels != "id2"
    Z, similarity, _ = refits.space(keep)
    ref, gamma = _fitted_space({}, images, keep)
    np.testing.assert_array_equal(Z, ref)
    assert similarity.gamma == gamma
