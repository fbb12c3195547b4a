"""Eigenface matcher: PCA on the enrolled images, RBF similarity on PCA coefficients
(paper, Sect. IV-A 1; Turk & Pentland 1991).

Pure numpy: fitting uses ``numpy.linalg.svd``, and `EigenfaceMatcher.from_state` /
`EigenfaceMatcher.transform` never touch scikit-learn, so ``verify`` stays light.

Scaling. PCA coefficients of raw pixels have a dataset-dependent scale (contrast,
image size), which makes the paper's γ = 1/d meaningless on its own. The coefficients
are therefore divided by one scalar, ``scale_`` = the RMS standard deviation of the kept
components, so that they have unit variance on average. Then, over pairs of training
images, E||x − z||² ≈ 2d and γ = 1/d gives a typical similarity of about e^-2 whatever
the data. A single scalar keeps the Euclidean geometry of eigenfaces (no whitening).

Failure to acquire. A probe is a face for this matcher when face space explains it
(Turk & Pentland 1991, "using eigenfaces to detect faces"; Moghaddam & Pentland 1997
for the two parts): (a) its distance from face space (DFFS, the PCA reconstruction
error) relative to its own contrast, so that uniform, black, white and noise images
(whose contrast is zero or lies outside face space) are refused, and (b) its
distance in face space (DIFS, the Mahalanobis norm of its coefficients), so that
images inside face space but far beyond any face are refused. Both limits are
calibrated at fit time on held-out training images (k-fold PCA refits: training
images' own DFFS is several times smaller than a new face's), times a margin; the
folds hold out people when ``fit`` has them (``groups``), so the limits cover a face
face space was not fitted on, as a stranger's is (folds of images measure only how a
person's own images differ: on a set of little variation they refused strangers).
"""

import numpy as np

from ssgallery.checks import is_finite_real
from ssgallery.errors import InputError, SsgalleryError
from ssgallery.learn.similarity import RBFSimilarity, median_gamma, rowwise_matmul
from ssgallery.matchers.base import Matcher, rbf_gamma
from ssgallery.matchers.eigenface_space import (  # noqa: F401 (re-exported)
    DIFS_MARGIN,
    QUALITY_FOLDS,
    QUALITY_MAX_IMAGES,
    RELATIVE_DFFS_CAP,
    RELATIVE_DFFS_MARGIN,
    difs_ceiling,
    face_space_distances,
    pca,
    quality_limits,
    shares,
)
from ssgallery.matchers.eigenface_state import (  # noqa: F401 (FTA_FOLDS re-exported)
    FTA_FOLDS,
    folds_state,
    state_problem,
    stored_limits,
)

TRANSFORM_CHUNK = 1024  # images per block in transform: bounds its float64 temporaries


class EigenfaceMatcher(Matcher):
    """PCA (eigenfaces) + RBF similarity s(x, z) = exp(−γ ||x − z||²).

    Parameters
    ----------
    variance : float in (0, 1]
        Fraction of the training variance the kept components explain (paper: 0.95).
    n_components : int or None
        Number of components; overrides ``variance`` when given.
    gamma : "paper", "median" or float
        RBF width: "paper" = 1/d (the paper's choice, libsvm's default); "median" =
        `ssgallery.learn.similarity.median_gamma` of the training images in PCA
        space; a positive
        float is used as is (in the scaled PCA space).

    Attributes
    ----------
    mean_ : ndarray (H*W,), float32
        Mean training image (pixels on [0, 255]).
    components_ : ndarray (d, H*W), float32
        Orthonormal principal axes (eigenfaces), deterministic signs.
    explained_variance_ : ndarray (d,)
        Variance of the training images along each axis (pixel units²).
    explained_variance_ratio_ : ndarray (d,)
    scale_ : float
        Coefficients are divided by it (RMS std of the kept components).
    gamma_ : float
        The resolved RBF width.
    n_components_ : int
        d, the dimension of the matcher space.
    image_shape : tuple (H, W)
    """

    FTA_STATE = ("max_relative_dffs", "max_difs")  # `Matcher.FTA_STATE`
    fit_takes_groups = True  # `Matcher.fit_takes_groups`

    name = "eigenface"

    def __init__(self, variance=0.95, n_components=None, gamma="paper"):
        self.variance = variance
        self.n_components = n_components
        self.gamma = gamma

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        """``variance`` a number in (0, 1] (used when ``n_components`` is None), else
        ``n_components`` a whole number >= 1, and the RBF gamma (`rbf_gamma`): numbers
        as numbers (`ssgallery.checks.is_finite_real`: ``true`` is no 1, ``"0.5"`` no
        0.5). Raises `SsgalleryError` (one line)."""
        n, v = self.n_components, self.variance
        if n is None and not (is_finite_real(v) and 0.0 < v <= 1.0):
            raise SsgalleryError(f"eigenface: variance must be a number in (0, 1], got {v!r}")
        if n is not None and not (is_finite_real(n) and n >= 1 and int(n) == n):
            raise SsgalleryError(f"eigenface: n_components must be an integer >= 1, got {n!r}")
        self._gamma_value()

    def _gamma_value(self):
        return rbf_gamma("eigenface", self.gamma)

    def _check_images(self, images, fitted=True):
        X = np.asarray(images, dtype=np.float64)
        if fitted and X.ndim == 2 and X.shape == tuple(self.image_shape):
            X = X[None]
        if X.ndim != 3:
            raise InputError(f"eigenface: images must have shape (n, H, W), got {X.shape}")
        if fitted and X.shape[1:] != tuple(self.image_shape):
            h, w = self.image_shape
            raise InputError(f"eigenface: images are {X.shape[2]}x{X.shape[1]} (WxH), the "
                             f"matcher was fitted on {w}x{h}")
        if not np.all(np.isfinite(X)):
            raise InputError("eigenface: images contain NaN or infinite pixels")
        return X.reshape(len(X), -1)

    # ------------------------------------------------------------------ fitting
    def fit(self, images, groups=None):
        """Fit the PCA basis on training images (n, H, W), pixels on [0, 255].

        ``groups`` (n,), the person of each image when known: the failure-to-acquire
        limits are then calibrated on people held out
        (`ssgallery.matchers.eigenface_space.quality_folds`)."""
        self._check_params()
        X = self._check_images(images, fitted=False)
        n = len(X)
        if n < 2:
            raise InputError(f"eigenface: need at least 2 training images, got {n}")
        if groups is not None and len(groups) != n:
            raise InputError(f"eigenface: {len(groups)} groups for {n} training images")
        self.image_shape = tuple(int(s) for s in np.shape(images)[1:])
        mean, var, Vt = pca(X)
        d = self._n_kept(var)
        ratio = var / var.sum()
        Vt = Vt[:d]
        # Deterministic signs: the largest-magnitude loading of each axis is positive.
        signs = np.sign(Vt[np.arange(d), np.argmax(np.abs(Vt), axis=1)])
        Vt *= signs[:, None]
        self.mean_ = mean.astype(np.float32)
        self.components_ = np.ascontiguousarray(Vt, dtype=np.float32)
        self.explained_variance_ = var[:d].copy()
        self.explained_variance_ratio_ = ratio[:d].copy()
        self.n_components_ = d
        self.scale_ = float(np.sqrt(self.explained_variance_.mean()))
        self.n_samples_fit_ = n
        self.gamma_ = self._resolve_gamma(lambda: self.transform(images))
        self._fit_quality(X, groups)
        return self

    def _n_kept(self, var):
        """d, the components kept of variances ``var`` (r,) in decreasing order:
        ``n_components``, or the fewest that explain ``variance`` of the total."""
        rank = int(np.sum(var > var[0] * 1e-10)) if var[0] > 0 else 0
        if rank == 0:
            raise InputError("eigenface: training images are all identical")
        if self.n_components is not None:
            d = int(self.n_components)
            if d > rank:
                raise SsgalleryError(f"eigenface: n_components={d} exceeds the rank of the "
                                     f"training images ({rank})")
            return d
        d = int(np.searchsorted(np.cumsum(var / var.sum()), float(self.variance) - 1e-12) + 1)
        return min(d, rank)

    def _fit_quality(self, X, groups=None):
        """The failure-to-acquire limits ``max_relative_dffs_`` and ``max_difs_``, and
        ``fta_folds_``, what their folds held out
        (`ssgallery.matchers.eigenface_space.quality_limits`)."""
        self.max_relative_dffs_, self.max_difs_, self.fta_folds_ = quality_limits(
            X, groups, self.n_components_, self.mean_, self.components_,
            self.explained_variance_)
        self.quality_threshold_ = 1.0

    def quality(self, images, each=False):
        """Face-likeness of images (n, H, W), shape (n,): min(max_relative_dffs_ /
        relative DFFS, max_difs_ / DIFS); 0 for a uniform image, >= 1 is a face
        (`is_face`), NaN for a matcher from a file without the limits; with ``each``,
        each image's as it would be alone (`quality_each`)."""
        self._check_fitted()
        X = self._check_images(images)
        if self.quality_threshold_ is None:
            return np.full(len(X), np.nan)
        relative, difs = face_space_distances(X, self.mean_.astype(np.float64),
                                              self.components_.astype(np.float64),
                                              self.explained_variance_, each)
        with np.errstate(divide="ignore"):
            return np.minimum(self.max_relative_dffs_ / relative, self.max_difs_ / difs)

    def quality_each(self, images):
        """`quality`, each image projected as it would be alone
        (`ssgallery.learn.similarity.rowwise_matmul`): what ``verify --json`` prints."""
        return self.quality(images, each=True)

    def _resolve_gamma(self, training_features):
        """gamma_; ``training_features()`` (the projected training images) is called only
        for gamma="median"."""
        g = self._gamma_value()
        if g is not None:
            return g
        if self.gamma == "paper":
            return 1.0 / self.n_components_
        return median_gamma(training_features())

    def _check_fitted(self):
        if not hasattr(self, "components_"):
            raise SsgalleryError("eigenface: matcher is not fitted")

    @classmethod
    def subset_refits(cls, config, images):
        """Eigenface with ``config`` fitted on subsets of ``images`` (N, H, W), from
        their Gram matrix: `ssgallery.matchers.refits.EigenfaceRefits`."""
        from ssgallery.matchers.refits import EigenfaceRefits

        return EigenfaceRefits(cls, config, images)

    # ------------------------------------------------------------------ the contract
    def transform(self, images, each=False):
        """PCA coefficients of images (n, H, W), scaled; shape (n, d), float64.

        Projected ``TRANSFORM_CHUNK`` images at a time, so the float64 temporaries stay
        bounded whatever n (a 60,000-image store is 2.5 GB as float32 pixels); with
        ``each``, image by image (`transform_each`)."""
        self._check_fitted()
        if np.ndim(images) == 3 and len(images) > TRANSFORM_CHUNK:
            return np.concatenate([self.transform(images[i:i + TRANSFORM_CHUNK], each)
                                   for i in range(0, len(images), TRANSFORM_CHUNK)])
        X = self._check_images(images) - self.mean_  # never in place: X may be the input
        product = rowwise_matmul if each else np.matmul
        return product(X, self.components_.T.astype(np.float64)) / self.scale_

    def transform_each(self, images):
        """`transform`, each image projected as it would be alone
        (`ssgallery.learn.similarity.rowwise_matmul`): the features ``verify`` scores."""
        return self.transform(images, each=True)

    def similarity(self):
        """RBF similarity on the PCA coefficients with the fitted ``gamma_``."""
        self._check_fitted()
        return RBFSimilarity(self.gamma_)

    def bounds(self):
        """None: PCA space is unconstrained; `render` clips pixels to [0, 255]."""

    def render(self, Z):
        """Prototypes (m, d) in PCA space -> images (m, H, W) on [0, 255] (Eq.: x = μ + Vᵀz)."""
        self._check_fitted()
        Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
        if Z.ndim != 2 or Z.shape[1] != self.n_components_:
            raise InputError(f"eigenface: prototypes must have shape (m, {self.n_components_}), "
                             f"got {Z.shape}")
        X = self.mean_ + (Z * self.scale_) @ self.components_.astype(np.float64)
        return np.clip(X, 0, 255).reshape((len(Z),) + tuple(self.image_shape)).astype(np.float32)

    # ------------------------------------------------------------------ persistence
    def get_config(self):
        """Constructor parameters (JSON-serialisable), checked (`_check_params`)."""
        self._check_params()
        gamma = self.gamma if isinstance(self.gamma, str) else float(self.gamma)
        return {"variance": float(self.variance),
                "n_components": None if self.n_components is None else int(self.n_components),
                "gamma": gamma}

    def get_state(self):
        """Fitted state as plain arrays and numbers (HDF5-friendly)."""
        self._check_fitted()
        return {"mean": self.mean_, "components": self.components_,
                "explained_variance": self.explained_variance_,
                "explained_variance_ratio": self.explained_variance_ratio_,
                "scale": float(self.scale_), "gamma": float(self.gamma_),
                "image_shape": np.asarray(self.image_shape, dtype=np.int64),
                "n_samples_fit": int(self.n_samples_fit_),
                "max_relative_dffs": float(self.max_relative_dffs_),
                "max_difs": float(self.max_difs_), **folds_state(self.fta_folds_)}

    @classmethod
    def from_state(cls, config, state):
        """Rebuild a fitted matcher from `get_config` and `get_state`; the options are
        checked as at enroll (`_check_params`: a file's ``"variance": true`` is refused)."""
        self = cls(**{k: v for k, v in dict(config).items()
                      if k in ("variance", "n_components", "gamma")})
        self._check_params()
        try:
            self.mean_ = np.asarray(state["mean"], dtype=np.float32)
            self.components_ = np.ascontiguousarray(state["components"], dtype=np.float32)
            self.explained_variance_ = np.asarray(state["explained_variance"], dtype=np.float64)
            self.explained_variance_ratio_ = np.asarray(
                state.get("explained_variance_ratio", self.explained_variance_ * np.nan),
                dtype=np.float64)
            self.scale_ = float(np.asarray(state["scale"]))
            self.gamma_ = float(np.asarray(state["gamma"]))
            self.image_shape = tuple(int(s) for s in np.asarray(state["image_shape"]))
            self.n_samples_fit_ = int(np.asarray(state.get("n_samples_fit", 0)))
            limits = stored_limits(state)  # None: files before failure to acquire
            if limits is not None:
                self.max_relative_dffs_, self.max_difs_, self.fta_folds_ = limits
                self.quality_threshold_ = 1.0
        except KeyError as exc:
            raise SsgalleryError(f"eigenface: matcher state lacks '{exc.args[0]}'") from None
        d, p = self.components_.shape if self.components_.ndim == 2 else (0, -1)
        if (len(self.image_shape) != 2 or min(self.image_shape) < 1
                or p != int(np.prod(self.image_shape))
                or self.mean_.shape != (p,) or self.explained_variance_.shape != (d,)
                or d < 1 or not self.scale_ > 0 or not self.gamma_ > 0):
            raise SsgalleryError("eigenface: matcher state is inconsistent "
                                 f"(components {self.components_.shape}, mean "
                                 f"{self.mean_.shape}, image shape {self.image_shape})")
        rbf_gamma("eigenface", self.gamma_)  # the options' rule: at most MAX_GAMMA
        self.n_components_ = d
        self._check_state("explained_variance_ratio" in state)
        return self

    def _check_state(self, ratio_stored=True):
        """Values a fit can produce (`ssgallery.matchers.eigenface_state.state_problem`);
        ``ratio_stored``: the file holds the variances' ratios. Raises `SsgalleryError`."""
        problem = state_problem(self, ratio_stored)
        if problem:
            raise SsgalleryError(f"eigenface: matcher state has {problem}")

    def dimension(self):
        self._check_fitted()
        return self.n_components_

    def similarity_range(self):
        """RBF: s in (0, 1]."""
        return (0.0, 1.0)

    def check_prototypes(self, Z):
        """Prototypes must lie within twice the radius of the images' ball in PCA space:
        any image x on [0, 255] has ||coefficients|| <= 255 sqrt(p) / scale_."""
        self._check_fitted()
        radius = 2.0 * 255.0 * np.sqrt(self.components_.shape[1]) / self.scale_
        norms = np.linalg.norm(np.asarray(Z, dtype=np.float64), axis=1)
        if norms.size and not norms.max() <= radius:
            raise SsgalleryError(f"eigenface: a prototype lies far outside face space "
                                 f"(norm {norms.max():.4g} > {radius:.4g})")

    def __repr__(self):
        fitted = f", d={self.n_components_}, gamma_={self.gamma_:.4g}" \
            if hasattr(self, "components_") else ""
        return (f"EigenfaceMatcher(variance={self.variance}, n_components={self.n_components}, "
                f"gamma={self.gamma!r}{fitted})")
