"""Deep-embedding matcher: dlib's ResNet face descriptor (128-d) with an RBF similarity
on descriptors (issue 10 item 1).

Needs the ``dlib`` extra (``pip install 'ssgallery[dlib]'``: the ``dlib-bin`` wheels and
the ``face-recognition-models`` weights). ``dlib`` is imported only when a descriptor is
computed, so reading a gallery made with this matcher (``info``) works without it.

Pipeline, per image (grey, float on [0, 255]):

1. upsample (bilinear) by the smallest integer factor that brings the shorter side to at
   least `MIN_SIDE` pixels, so that dlib's 80-pixel detector window fits the face;
2. HOG frontal face detector (no further pyramid upsampling), keeping detections down to
   a score of `DETECT_FLOOR`; the highest-scoring box is the face. When nothing is
   found the whole image is the face box (pre-cropped faces, e.g. LFW crops);
3. 5-point landmarks in that box, ``dlib.get_face_chip`` (150 px aligned chip, dlib's
   default padding);
4. the 128-d descriptor of the chip, grey replicated to RGB.

Similarity: s(x, z) = exp(−γ ||x − z||²) on descriptors (`RBFSimilarity`, analytic
gradient), so prototypes are learned in descriptor space as eigenface prototypes are
learned in PCA space. γ follows the eigenface rules; the default here is "median"
(`ssgallery.learn.similarity.median_gamma` of the training descriptors): dlib
descriptors have a fixed scale where the paper's γ = 1/d = 1/128 makes every similarity nearly 1.

Quality (failure to acquire). ``DlibMatcher.quality`` is the detector score of the
face used (higher is more face-like); an image where nothing was detected gets
``FALLBACK_QUALITY``, below every detection. ``fit`` sets ``quality_threshold_`` by
`quality_threshold`: any detection (score >= ``DETECT_FLOOR``) is a face and a
fallback is not, unless more than ``FALLBACK_SHARE`` of the training images are
fallbacks (faces the detector does not find, e.g. small pre-cropped ones, or
``detect=False``): then every image is acquired. ``DlibMatcher.is_face`` is
``quality >= quality_threshold_``. docs/matchers.md gives the measurement behind the
rule (``benchmarks/dlib_fta.py``).

Rendering. A descriptor cannot be drawn as a face, and a gallery must never store a
client's image, so `DlibMatcher.render` raises `NotRenderableError`.
"""

import hashlib
import math

import numpy as np

from ssgallery.checks import is_bool
from ssgallery.errors import (
    FormatError,
    InputError,
    NotRenderableError,
    SsgalleryError,
)
from ssgallery.learn.similarity import RBFSimilarity, median_gamma
from ssgallery.matchers.base import Matcher, rbf_gamma
from ssgallery.matchers.dlib_models import (  # noqa: F401  (public here too)
    CACHE_SIZE,
    DESCRIPTOR_CACHE,
    DIM,
    EXTRA_HINT,
    MODEL_FILES,
    import_dlib,
    load_cache,
    load_models,
    model_digests,
    model_paths,
    save_cache,
)

MIN_SIDE = 150          # pixels: shorter side after upsampling
DETECT_FLOOR = -0.5     # lowest detector score still taken as a detection
FALLBACK_QUALITY = -1.0  # quality of an image where nothing was detected
FALLBACK_SHARE = 0.5    # training share of fallbacks above which fallbacks are acquired
CHIP_SIZE = 150


def quality_threshold(quality):
    """The `DlibMatcher.is_face` threshold from the training images' qualities.

    Any detection is a face (``DETECT_FLOOR``) and a whole-image fallback is not, unless
    more than ``FALLBACK_SHARE`` of the training images are fallbacks: then the detector
    does not find the faces of this data (pre-cropped or ``detect=False``), and every image
    is acquired (``FALLBACK_QUALITY``). A threshold learned from the weakest training
    detections would refuse in-the-wild genuine probes that the detector finds with a
    lower score, and any training fallback would let every non-face through; see
    ``benchmarks/dlib_fta.py``.

    Parameters
    ----------
    quality : array-like, shape (n,)
        `DlibMatcher.quality` of the training images.

    Returns
    -------
    float
    """
    fallback = np.asarray(quality, dtype=float) <= FALLBACK_QUALITY
    return FALLBACK_QUALITY if fallback.mean() > FALLBACK_SHARE else DETECT_FLOOR


def upsample_factor(shape):
    """Integer upsampling factor for an image of shape (H, W): shorter side >= MIN_SIDE."""
    return max(1, math.ceil(MIN_SIDE / max(1, min(shape))))


class DlibMatcher(Matcher):
    """dlib ResNet face descriptors + RBF similarity s(x, z) = exp(−γ ||x − z||²).

    Parameters
    ----------
    gamma : "median", "paper" or float
        RBF width: "median" = `ssgallery.learn.similarity.median_gamma` of the
        training descriptors;
        "paper" = 1/d with d = 128; a positive float is used as is.
    detect : bool
        Run the face detector; False always uses the whole image as the face box (for
        faces already cropped by the same rule).

    Attributes
    ----------
    gamma_ : float
        The resolved RBF width.
    quality_threshold_ : float
        `is_face` accepts images whose `quality` is at least this.
    model_sha256_ : dict str -> str
        SHA-256 of the weight files the matcher was fitted with.
    dlib_version_ : str
    image_shape : tuple (H, W)
        Shape of the training images (descriptors accept any shape).
    n_components_ : int
        128, the dimension of the matcher space.
    """

    name = "dlib"
    learns_from_images = False  # a pretrained descriptor

    def __init__(self, gamma="median", detect=True):
        self.gamma = gamma
        self.detect = detect

    # ------------------------------------------------------------------ validation
    def _gamma_value(self):
        return rbf_gamma("dlib", self.gamma)

    def _check_params(self):
        """The RBF gamma (`rbf_gamma`) and ``detect`` a bool (``"no"`` is no false).
        Raises `SsgalleryError` (one line)."""
        self._gamma_value()
        if not is_bool(self.detect):
            raise SsgalleryError(f"dlib: detect must be true or false, got {self.detect!r}")

    @staticmethod
    def _check_images(images):
        X = np.asarray(images, dtype=np.float64)
        if X.ndim == 2:
            X = X[None]
        if X.ndim != 3 or min(X.shape[1:], default=0) < 1:
            raise InputError(f"dlib: images must have shape (n, H, W), got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise InputError("dlib: images contain NaN or infinite pixels")
        return np.clip(np.rint(X), 0, 255).astype(np.uint8)

    def _check_fitted(self):
        if not hasattr(self, "gamma_"):
            raise SsgalleryError("dlib: matcher is not fitted")

    def _check_models(self):
        """Refuse to describe images with weights other than the fitted ones."""
        if getattr(self, "_models_checked", False):
            return
        have = model_digests()
        for name, digest in self.model_sha256_.items():
            if have.get(name) != digest:
                raise FormatError(f"dlib: the installed {name} model (sha256 "
                                  f"{have.get(name, 'missing')[:12]}) is not the one this "
                                  f"matcher was fitted with ({digest[:12]}); enroll again")
        self._models_checked = True

    # ------------------------------------------------------------------ the pipeline
    def _face_box(self, dlib, detector, img):
        """(rectangle, quality) of the face in ``img`` (H, W) uint8."""
        H, W = img.shape
        if self.detect:
            rects, scores, _ = detector.run(img, 0, DETECT_FLOOR)
            if len(rects):
                k = int(np.argmax(scores))
                return rects[k], float(scores[k])
        return dlib.rectangle(0, 0, W - 1, H - 1), FALLBACK_QUALITY

    def _upsampled(self, img):
        f = upsample_factor(img.shape)
        if f == 1:
            return img
        from PIL import Image

        h, w = img.shape
        return np.asarray(Image.fromarray(img).resize((w * f, h * f), Image.BILINEAR))

    def describe(self, images, descriptors=True, progress=None):
        """Descriptors and quality of images (n, H, W) in one pass; ``progress``: one
        step per image (of the caller's phase).

        Each image's result is cached for the life of the process, keyed by its pixels
        (``fit`` then ``transform`` of the same images, or the repetitions of ``roc``,
        compute each descriptor once).

        Returns
        -------
        D : ndarray (n, 128), float64, or None when ``descriptors`` is False
        quality : ndarray (n,), float64
        """
        U = self._check_images(images)
        D = np.empty((len(U), DIM)) if descriptors else None
        q = np.empty(len(U))
        models = None
        for i, img in enumerate(U):
            key = (bool(self.detect), img.shape,
                   hashlib.blake2b(img.tobytes(), digest_size=16).digest())
            hit = DESCRIPTOR_CACHE.get(key)
            if hit is None or (descriptors and hit[0] is None):
                models = models or (import_dlib(),) + load_models()
                hit = self._describe_one(models, img, descriptors)
                if len(DESCRIPTOR_CACHE) >= CACHE_SIZE:
                    DESCRIPTOR_CACHE.clear()
                DESCRIPTOR_CACHE[key] = hit
            if descriptors:
                D[i] = hit[0]
            q[i] = hit[1]
            if progress is not None:
                progress.advance()
        return D, q

    def _describe_one(self, models, img, descriptor):
        """(descriptor (128,) or None, quality) of one image (H, W) uint8."""
        dlib, detector, predictor, recogniser = models
        img = self._upsampled(img)
        box, quality = self._face_box(dlib, detector, img)
        if not descriptor:
            return None, quality
        rgb = np.ascontiguousarray(np.repeat(img[:, :, None], 3, axis=2))
        chip = dlib.get_face_chip(rgb, predictor(rgb, box), size=CHIP_SIZE)
        return np.asarray(recogniser.compute_face_descriptor(chip), dtype=np.float64), quality

    # ------------------------------------------------------------------ fitting
    fit_takes_progress = True  # `Matcher.fit_takes_progress`: a descriptor per image
    transform_chunk = 4  # `Matcher.transform_chunk`: about half a second per step

    def fit(self, images, progress=None):
        """Fit on training images (n, H, W), pixels on [0, 255]: γ, quality threshold,
        model digests; ``progress``: one step per image described. Returns self."""
        self._check_params()
        g = self._gamma_value()
        U = self._check_images(images)
        if len(U) < 2:
            raise InputError(f"dlib: need at least 2 training images, got {len(U)}")
        self.image_shape = tuple(int(s) for s in U.shape[1:])
        self.model_sha256_ = dict(model_digests())
        self.dlib_version_ = str(import_dlib().__version__)
        self._models_checked = True
        D, q = self.describe(U, progress=progress)
        if g is None:
            g = 1.0 / DIM if self.gamma == "paper" else median_gamma(D)
        self.gamma_ = float(g)
        self.quality_threshold_ = float(quality_threshold(q))
        self.n_components_ = DIM
        self.n_samples_fit_ = len(U)
        return self

    # ------------------------------------------------------------------ the contract
    def transform(self, images):
        """Descriptors of images (n, H, W): shape (n, 128), float64."""
        self._check_fitted()
        self._check_models()
        return self.describe(images)[0]

    def quality(self, images):
        """Detector score of the face used in each image (n, H, W), shape (n,): higher is
        more face-like; ``FALLBACK_QUALITY`` where nothing was detected."""
        self._check_fitted()
        self._check_models()
        return self.describe(images, descriptors=False)[1]

    def is_face(self, images):
        """Whether each image (n, H, W) is acquired: ``quality >= quality_threshold_``,
        shape (n,), bool."""
        return self.quality(images) >= self.quality_threshold_

    def similarity(self):
        """RBF similarity on descriptors with the fitted ``gamma_``."""
        self._check_fitted()
        return RBFSimilarity(self.gamma_)

    def bounds(self):
        """None: descriptor space is unconstrained (the RBF decays away from the data)."""

    def dimension(self):
        """d = 128, the descriptor's dimension."""
        return DIM

    def render(self, Z):
        """Always raises `NotRenderableError`: descriptors cannot be drawn."""
        raise NotRenderableError("dlib: prototypes live in the 128-d descriptor space and "
                                 "cannot be drawn as images")

    # ------------------------------------------------------------------ persistence
    def get_config(self):
        """Constructor parameters (JSON-serialisable), checked (`_check_params`)."""
        self._check_params()
        gamma = self.gamma if isinstance(self.gamma, str) else float(self.gamma)
        return {"gamma": gamma, "detect": bool(self.detect)}

    def get_state(self):
        """Fitted state as plain numbers and strings (HDF5-friendly)."""
        self._check_fitted()
        state = {"gamma": float(self.gamma_),
                 "quality_threshold": float(self.quality_threshold_),
                 "image_shape": np.asarray(self.image_shape, dtype=np.int64),
                 "n_samples_fit": int(self.n_samples_fit_),
                 "dlib_version": self.dlib_version_}
        for name, digest in self.model_sha256_.items():
            state[f"sha256_{name}"] = digest
        return state

    @classmethod
    def from_state(cls, config, state):
        """Rebuild a fitted matcher; needs no dlib (the weights are checked on first use).
        The options are checked as at enroll (`_check_params`)."""
        self = cls(**{k: v for k, v in dict(config).items() if k in ("gamma", "detect")})
        self._check_params()
        try:
            self.gamma_ = float(np.asarray(state["gamma"]))
            self.quality_threshold_ = float(np.asarray(state["quality_threshold"]))
            self.image_shape = tuple(int(s) for s in np.asarray(state["image_shape"]))
            self.n_samples_fit_ = int(np.asarray(state.get("n_samples_fit", 0)))
            self.dlib_version_ = str(state.get("dlib_version", ""))
            self.model_sha256_ = {name: str(state[f"sha256_{name}"]) for name in MODEL_FILES}
        except KeyError as exc:
            raise SsgalleryError(f"dlib: matcher state lacks '{exc.args[0]}'") from None
        if not (self.gamma_ > 0 and np.isfinite(self.gamma_)) or len(self.image_shape) != 2:
            raise SsgalleryError(f"dlib: matcher state is inconsistent (gamma {self.gamma_:g}, "
                                 f"image shape {self.image_shape})")
        rbf_gamma("dlib", self.gamma_)  # the options' rule: at most MAX_GAMMA
        self.n_components_ = DIM
        return self

    def __repr__(self):
        fitted = f", gamma_={self.gamma_:.4g}" if hasattr(self, "gamma_") else ""
        return f"DlibMatcher(gamma={self.gamma!r}, detect={self.detect}{fitted})"
