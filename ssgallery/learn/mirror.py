"""Left-right mirror images of flattened face images (issue 21).

A start made of training images fits those images through their similarity to
themselves, so the training Omega of Eq. 2 (eq:objective) is optimistic about it. The
mirror image of a training face is a new face that no start is made of, and the teacher
scores it: `ssgallery.learn.supersparse.SuperSparseDistiller` (``mirror``) also fits the
teacher's outputs there. For a matcher whose space is the image's pixels (a black box:
the external contract). Measured on EBGM (docs/benchmarks/ebgm_swaps.md), not a default.
"""

import numpy as np

__all__ = ["MirrorImages"]


class MirrorImages:
    """The left-right mirror images of flattened (H, W) images.

    Parameters
    ----------
    image_shape : (int, int)
        (H, W) of the images whose pixels, row by row, are the features.

    Examples
    --------
    >>> MirrorImages((1, 3))(np.array([[1.0, 2.0, 3.0]]))
    array([[3., 2., 1.]])
    """

    def __init__(self, image_shape):
        h, w = (int(v) for v in image_shape)
        if h < 1 or w < 1:
            raise ValueError(f"image_shape must be two positive sizes, got {image_shape!r}")
        self.image_shape = (h, w)

    def __call__(self, X):
        """Mirror images of ``X`` (n, H*W), shape (n, H*W)."""
        X = np.asarray(X, dtype=float)
        h, w = self.image_shape
        if X.ndim != 2 or X.shape[1] != h * w:
            raise ValueError(f"features of shape {X.shape} are not flattened {h}x{w} images")
        return np.ascontiguousarray(X.reshape(len(X), h, w)[:, :, ::-1]).reshape(len(X), -1)

    def __eq__(self, other):
        return isinstance(other, MirrorImages) and other.image_shape == self.image_shape

    def __hash__(self):
        return hash(("MirrorImages", self.image_shape))

    def __repr__(self):
        return f"MirrorImages({self.image_shape})"
