"""A secret isometry (rotation about a secret centre) of the matcher space: renewable,
unlinkable templates (issue 23 item 3; ISO/IEC 24745).

For a similarity that depends on the features only through ||x - z|| (the RBF
s(x, z) = exp(-gamma ||x - z||^2) of the eigenface and dlib matchers), the map
x -> Q (x - c), with Q orthogonal, preserves every similarity: ||Q(x - c) - Q(z - c)||
= ||x - z||. So a gallery whose prototypes are Q (z_j - c), scored on probes mapped to
Q (x - c), gives the same g(x) (Eq. 1 (g(x))) up to rounding, and the same verdicts.
Q and c are drawn from a secret seed (`secret_rotation`, `secret_offset`); two
deployments with different seeds hold prototypes that cannot be compared with each
other, and re-compressing with a new seed revokes a leaked gallery. The centre c
matters: a rotation about the origin keeps each template's norm (its distance from the
mean face, for eigenface), which links the same person across deployments; with c
drawn ten times wider than the templates' spread, the stored norm says next to nothing.
It does not hide what every isometry keeps: each template's distance from the centroid
of its own gallery's templates links people as the plain norm does (docs/privacy.md).

What it does not do: it is not encryption. Whoever has the seed (the host's key) undoes
it. A prototype can still be submitted at the comparator (after the rotation) of the
deployment it came from; that is what renewal is for. Distances between templates survive
by design: an attacker holding a whole gallery sees its geometry, and with the client
ids (stored in clear) as correspondences can align two galleries of the same people
(orthogonal Procrustes) or, knowing some plain templates, recover the map
(docs/privacy.md measures what is left). A matcher whose prototypes live in a bounded pixel box
(an external program) cannot be rotated: its similarity is not rotation-invariant.

numpy only (on the ``verify`` path).
"""

import hashlib

import numpy as np

from ssgallery.errors import SsgalleryError
from ssgallery.learn.similarity import RBFSimilarity
from ssgallery.matchers.base import Matcher


def _uniforms(seed, n):
    """``n`` uniforms on (0, 1), float64, from SHAKE-256 of ``seed``: the same numbers on
    every platform and numpy version (a gallery outlives its writer's numpy)."""
    raw = np.frombuffer(hashlib.shake_256(b"ssgallery-rotation\0" + seed).digest(8 * n),
                        dtype="<u8")
    return ((raw >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def secret_offset(seed, d, scale):
    """The secret centre c (d,): Gaussian entries of standard deviation ``scale``, from
    the secret ``seed`` (a stream apart from `secret_rotation`'s)."""
    u = _uniforms(b"offset\0" + seed, 2 * int(d)).reshape(2, int(d))
    return scale * np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])


def secret_rotation(seed, d):
    """A Haar-random orthogonal matrix (d, d) from the secret ``seed`` (bytes).

    Gaussian entries (Box-Muller on `_uniforms`), QR, and the signs of R's diagonal
    folded into Q (Mezzadri 2007), so Q is uniform on O(d) and unique for the seed.
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"dimension must be >= 1, got {d}")
    u = _uniforms(seed, 2 * d * d).reshape(2, d, d)
    G = np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])
    Q, R = np.linalg.qr(G)
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def rotatable(matcher):
    """None when ``matcher``'s similarity survives a rotation of its space (RBF on
    unbounded features), else why not (one line)."""
    if matcher.bounds() is not None:
        return (f"the {matcher.name} matcher's prototypes live in a bounded space (pixels "
                "for a black-box program) and its similarity is not rotation-invariant; "
                "templates cannot be rotated (encrypt the gallery instead)")
    if not isinstance(matcher.similarity(), RBFSimilarity):
        return (f"the {matcher.name} matcher's similarity is not an RBF of the feature "
                "distance; a rotation would change its scores")
    return None


class RotatedMatcher(Matcher):
    """``inner`` seen through the isometry x -> Q (x - c): features and prototypes alike.

    Scores are those of ``inner`` (`rotatable`); `render` undoes the rotation first, so
    only a holder of Q can draw the prototypes. ``get_config`` / ``get_state`` are the
    inner matcher's (a gallery stores the plain matcher and a record of the rotation,
    never Q).

    Parameters
    ----------
    inner : Matcher
        A fitted matcher with an RBF similarity and unbounded features.
    rotation : ndarray, shape (d, d)
        Orthogonal.
    offset : ndarray, shape (d,), optional
        The centre c (default: the origin).
    """

    def __init__(self, inner, rotation, offset=None):
        problem = rotatable(inner)
        if problem:
            raise SsgalleryError(problem)
        self.inner = inner
        self.rotation = np.asarray(rotation, dtype=np.float64)
        self.offset = np.zeros(len(self.rotation)) if offset is None \
            else np.asarray(offset, dtype=np.float64)
        self.name = inner.name
        self.learns_from_images = inner.learns_from_images
        self.image_shape = getattr(inner, "image_shape", None)
        self.quality_threshold_ = getattr(inner, "quality_threshold_", None)

    def rotate(self, Z):
        """Plain features or prototypes (n, d) -> protected, (n, d)."""
        return (np.asarray(Z, dtype=np.float64) - self.offset) @ self.rotation.T

    def unrotate(self, Z):
        """Protected (n, d) -> plain (n, d)."""
        return np.asarray(Z, dtype=np.float64) @ self.rotation + self.offset

    def fit(self, images):
        raise SsgalleryError("a rotated matcher is built from a fitted one; fit the inner "
                             "matcher")

    def transform(self, images):
        """Rotated features of images (n, H, W), shape (n, d)."""
        return self.rotate(self.inner.transform(images))

    def similarity(self):
        return self.inner.similarity()

    def bounds(self):
        """None (`rotatable` refuses a bounded space)."""

    def render(self, Z):
        """Rotated prototypes (m, d) drawn as the inner matcher draws the plain ones."""
        return self.inner.render(self.unrotate(Z))

    def quality(self, images):
        return self.inner.quality(images)

    def is_face(self, images):
        return self.inner.is_face(images)

    def get_config(self):
        return self.inner.get_config()

    def get_state(self):
        return self.inner.get_state()

    def dimension(self):
        return self.inner.dimension()

    def similarity_range(self):
        return self.inner.similarity_range()

    def check_prototypes(self, Z):
        """The inner matcher's check of the plain prototypes."""
        self.inner.check_prototypes(self.unrotate(Z))

    def __repr__(self):
        return f"RotatedMatcher({self.inner!r}, d={len(self.rotation)})"
