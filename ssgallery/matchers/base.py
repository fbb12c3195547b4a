"""The matcher contract inside Python (the external program's: docs/external-matcher.md)."""

import numpy as np

from ssgallery.checks import is_finite_real
from ssgallery.errors import SsgalleryError

GAMMA_MODES = ("paper", "median")  # an RBF gamma set at fit (`rbf_gamma`)
# The largest RBF gamma: far beyond any useful width (exp(-gamma d^2) is 0 for every
# pair of distinct images long before), far below where the gradient's 2 gamma s
# overflows to inf (gamma > 9e307: NaN gradients, an internal error in training).
MAX_GAMMA = 1e100


def rbf_gamma(matcher, gamma):
    """An analytic matcher's RBF ``gamma`` option, checked (``matcher``: its name, for
    the message): None for a mode of `GAMMA_MODES` (set at fit), else a finite number
    > 0 as a float, given as a number (`ssgallery.checks.is_finite_real`: a bool is
    none) or as a numeric string (``"0.1"``). Raises `SsgalleryError` (one line):
    ``eigenface: gamma must be positive, got 0``; at most `MAX_GAMMA` (a fitted
    matcher's ``gamma_`` read from a file is checked by the same rule)."""
    if isinstance(gamma, str):
        if gamma in GAMMA_MODES:
            return None
        try:
            value = float(gamma)
        except ValueError:
            value = None
    else:
        value = float(gamma) if is_finite_real(gamma) else None
    if value is None:
        raise SsgalleryError(f"{matcher}: gamma must be 'paper', 'median' or a positive "
                             f"number, got {gamma!r}")
    if not (np.isfinite(value) and value > 0):
        raise SsgalleryError(f"{matcher}: gamma must be positive, got {value:g}")
    if value > MAX_GAMMA:
        raise SsgalleryError(f"{matcher}: gamma must be at most {MAX_GAMMA:g}, got {value:g}")
    return value


class Matcher:
    """Base class of matcher plugins.

    A matcher is fitted once on the enrolled training images (``fit``), maps images to
    its comparison space (``transform``: PCA coefficients for eigenface, flattened
    pixels for an external program), and exposes a `ssgallery.learn.similarity.Similarity`
    on that space, which the learner uses to move virtual prototypes.

    Subclasses set ``name`` and implement every method below. State must be plain
    arrays, numbers and strings so that it can be stored in HDF5 (nothing is pickled).

    Attributes
    ----------
    name : str
        Registry name (entry point in ``ssgallery.matchers``).
    image_shape : tuple of int
        (H, W) of the images it was fitted on.
    """

    name = "base"
    #: Whether ``fit`` learns from the images (a PCA basis does; a pretrained descriptor
    #: or an external program does not): compress then refits the matcher per
    #: threshold-CV fold (`ssgallery.app.fold_spaces`).
    learns_from_images = True
    #: Whether its similarity is a black box: no analytic gradient, only the heuristic of
    #: Eq. 7 (eq:similarity-grad) (`ssgallery.learn.similarity.HeuristicGradient`), so
    #: that ``compress`` and ``roc`` train its clients on real training images
    #: (`ssgallery.app.options.resolve_training`). Must agree with
    #: ``similarity().has_gradient``.
    black_box = False

    #: Whether ``fit`` takes ``groups=``, the person of each training image (`fit_matcher`):
    #: eigenface calibrates its failure-to-acquire limits on people held out, the faces
    #: a stranger's probe is like.
    fit_takes_groups = False
    #: Whether ``fit`` takes ``progress=`` and advances it one step per training image
    #: (`fit_matcher`): a fit that computes a descriptor per image (dlib) says how far it is.
    fit_takes_progress = False
    #: Images per ``transform`` call when a command reports progress (`transform_in_chunks`,
    #: a step per image after each call): a matcher that takes a fraction of a second per
    #: image (dlib) sets fewer, so that a batch of probes never goes silent for long.
    transform_chunk = 64
    #: What the held-out folds of the failure-to-acquire calibration held out, for a
    #: matcher that calibrates it so (eigenface): ``"people"``, ``"images"`` (no person
    #: known, or one), or ``"unrecorded"`` (a state written before 2026-11-28, when stores
    #: began to record it: limits of that time were fitted on held-out images, see
    #: docs/security.md); None for every other matcher.
    fta_folds_ = None

    def fit(self, images):
        """Fit on training images, shape (n, H, W), float on [0, 255]. Returns self."""
        raise NotImplementedError

    @classmethod
    def subset_refits(cls, config, images):
        """This matcher with constructor parameters ``config`` fitted on subsets of
        ``images`` (N, H, W), each mapping every image
        (`ssgallery.matchers.refits`): by default ``fit`` per subset
        (`ssgallery.matchers.refits.Refits`); a matcher with a cheaper equivalent
        overrides it."""
        from ssgallery.matchers.refits import Refits

        return Refits(cls, config, images)

    def transform(self, images):
        """Map images (n, H, W) to the matcher space, shape (n, d)."""
        raise NotImplementedError

    def transform_each(self, images):
        """`transform` with each image's features computed as they would be for that
        image alone, so that the score ``verify`` prints for a probe does not depend on
        the batch it came in (one BLAS product over a batch sums in an order of its
        own). Optional: the default is ``transform``, right for a matcher that maps
        each image by itself (dlib, an external program's pixels)."""
        return self.transform(images)

    def similarity(self):
        """The `ssgallery.learn.similarity.Similarity` on the matcher space."""
        raise NotImplementedError

    def bounds(self):
        """Box constraint on prototypes in the matcher space: ``None`` or ``(lo, hi)``
        (scalars or arrays of shape (d,)). The default: no box."""

    def render(self, Z):
        """Prototypes (m, d) in the matcher space back to images (m, H, W), float [0, 255].

        Optional: the default raises `ssgallery.errors.NotRenderableError`, so a plug-in
        without it compresses like a deep matcher (no images for ``show``)."""
        from ssgallery.errors import NotRenderableError

        raise NotRenderableError(f"the {self.name} matcher draws no prototypes (it defines "
                                 "no render)")

    # -- failure to acquire (optional; defaults: no measure, every image acquired) -----
    quality_threshold_ = None
    # state keys holding the failure-to-acquire limits: a gallery lacking one is refused
    # (without them every probe would be acquired; `ssgallery.formats.gallery.read_client`)
    FTA_STATE = ()

    def quality(self, images):
        """How face-like each image (n, H, W) is in this matcher's own terms, shape (n,),
        higher is more face-like; NaN where the matcher has no measure (the default)."""
        return np.full(len(images), np.nan)

    def quality_each(self, images):
        """`quality` with each image's computed as it would be for that image alone (as
        `transform_each`), so that the quality ``verify --json`` prints and the
        failure-to-acquire verdict do not depend on the batch. Optional: the default is
        ``quality``."""
        return self.quality(images)

    def is_face(self, images):
        """Whether each image (n, H, W) is acquired (a usable face), shape (n,), bool.
        A probe that is not is a failure to acquire: never scored, never accepted.
        Default: ``quality >= quality_threshold_`` when the matcher has a threshold,
        else every image."""
        if self.quality_threshold_ is None:
            return np.ones(len(images), dtype=bool)
        return np.asarray(self.quality(images)) >= self.quality_threshold_

    def get_config(self):
        """Constructor parameters, a dict of JSON-serialisable values."""
        raise NotImplementedError

    def get_state(self):
        """Learned state: dict name -> numpy array / number / str (stored in HDF5)."""
        raise NotImplementedError

    @classmethod
    def from_state(cls, config, state):
        """Rebuild a fitted matcher from `get_config` and `get_state`.

        ``config`` and ``state`` come from a file: never take a program to run from them
        (the host names programs, see `attach_host`), and raise
        `ssgallery.errors.SsgalleryError` on values that are not sane."""
        raise NotImplementedError

    # -- optional hooks (defaults: nothing to do / nothing known) ----------------------
    def attach_host(self, host):
        """Bind the host's settings (`ssgallery.matchers.host.HostMatcher`): the
        program an external matcher runs. Returns self."""
        return self

    def settings(self):
        """`get_config` as it holds for this matcher, for people to read (``enroll`` and
        ``info`` print it): a key that says nothing here is left out. Default: every
        key."""
        return self.get_config()

    def recorded_contract(self):
        """What the matcher holds of a program's contract, for people to read (``info``
        prints it: `ssgallery.cli.options.contract_line`), as a JSON-able dict, or None
        (the matcher runs no program). Never runs a program."""

    def contract_digest(self):
        """SHA-256 (hex) of what the matcher's answers depend on besides `get_config`,
        known before `fit` (an external program's contract), or None (nothing)."""

    def dimension(self):
        """d, the dimension of the matcher space, or None when unknown."""

    def similarity_range(self):
        """(lo, hi): bounds of the matcher's own similarity s(x, z), or None."""

    def check_prototypes(self, Z):
        """Raise `ssgallery.errors.SsgalleryError` unless prototypes (m, d) read
        from a gallery are plausible in this matcher's space. Default: nothing."""


def transform_in_chunks(matcher, images, chunk=None, progress=None,
                        label="computing features", each=False):
    """``matcher.transform(images)`` computed ``chunk`` images at a time (default: the
    matcher's `Matcher.transform_chunk`, else 64), one progress step per image (phase
    ``label``): a descriptor that takes a fraction of a second per face (dlib) reports
    as it goes. With ``each``, `Matcher.transform_each` (a matcher
    without it: ``transform``): the features of the probes whose scores are printed.

    Parameters
    ----------
    matcher : Matcher
    images : ndarray or array-like of rows, shape (n, H, W)
    chunk : int
    progress : ssgallery.progress.Progress, optional

    Returns
    -------
    features : ndarray, shape (n, d)
    """
    from ssgallery.progress import as_progress

    progress = as_progress(progress)
    chunk = chunk or int(getattr(matcher, "transform_chunk", 64))
    transform = getattr(matcher, "transform_each", matcher.transform) if each \
        else matcher.transform
    n = len(images)
    if n <= chunk:
        return transform(images[:n])
    parts = []
    with progress.phase(label, n, "images"):
        for start in range(0, n, chunk):
            parts.append(transform(images[start:start + chunk]))
            progress.advance(len(parts[-1]))
    return np.concatenate(parts)


def fit_matcher(matcher, images, groups, progress=None, label=None):
    """``matcher.fit(images)``, given ``groups`` (the person of each image, shape (n,))
    when its class takes them (`Matcher.fit_takes_groups`; a plug-in without the
    attribute does not), in a phase ``label`` (default: fitting the NAME matcher) of
    ``progress``: one step per image for a matcher whose fit reports them
    (`Matcher.fit_takes_progress`), else one step. Returns the fitted matcher."""
    from ssgallery.progress import as_progress

    progress = as_progress(progress)
    kwargs = {"groups": groups} if getattr(matcher, "fit_takes_groups", False) else {}
    per_image = bool(getattr(matcher, "fit_takes_progress", False))
    label = label or f"fitting the {getattr(matcher, 'name', '')} matcher"
    with progress.phase(label, len(images) if per_image else 1,
                        "images" if per_image else "fits"):
        if per_image:
            kwargs["progress"] = progress
        fitted = matcher.fit(images, **kwargs)
        if not per_image:
            progress.advance()
    return fitted


def face_check(matcher, images, each=False):
    """(is_face (n,) bool, quality (n,) float) of images (n, H, W) for any matcher:
    one without `Matcher.quality` / `Matcher.is_face` (a duck-typed
    plug-in) acquires every image, quality NaN. A matcher whose ``is_face`` is the
    default (``quality >= quality_threshold_``) is asked for the quality once. With
    ``each``, `Matcher.quality_each` where the matcher has it: each image's quality
    as it would be alone (what verify and identify print and decide on)."""
    n = len(images)
    quality = getattr(matcher, "quality", None)
    if each:
        quality = getattr(matcher, "quality_each", quality)
    is_face = getattr(matcher, "is_face", None)
    q = np.full(n, np.nan) if quality is None else np.asarray(quality(images), dtype=float)
    if is_face is not None and getattr(type(matcher), "is_face", None) is Matcher.is_face:
        threshold = matcher.quality_threshold_  # the default's rule, on the quality above
        ok = np.ones(n, dtype=bool) if threshold is None else q >= threshold
    else:
        ok = np.ones(n, dtype=bool) if is_face is None else np.asarray(is_face(images),
                                                                       dtype=bool)
    return ok, q
