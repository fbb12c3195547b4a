"""`ExternalMatcher`: the matcher that is a program, through the external-matcher
contract (see `ssgallery.matchers.external` for the contract and its parts; talking to
the program is `ssgallery.matchers.external.program.ProgramClient`, its base).

A *distance* is turned into a similarity ``s = exp(-d / scale)`` (positive and larger
for closer pairs, as the heuristic gradient of Eq. 7 (eq:similarity-grad) assumes), with
``scale`` the median distance between training images measured once at ``fit`` (or the
``distance_scale`` parameter); the conversion and the scale are part of the state.

Failure to acquire: a program that offers a quality score gets the training images'
scores at ``fit``; `quality_threshold` sets ``quality_threshold_`` from them, and a
probe scoring below it is not a face (`Matcher.is_face`), as for eigenface and dlib.
"""

import shlex
import tempfile

import numpy as np

from ssgallery.checks import is_bool, is_finite_real, shown, stored_flag
from ssgallery.errors import InputError, MatcherError
from ssgallery.learn.similarity import CallableSimilarity, HeuristicGradient
from ssgallery.matchers.base import Matcher
from ssgallery.matchers.external import cache
from ssgallery.matchers.external.contract import quality_threshold
from ssgallery.matchers.external.oneshot import write_images
from ssgallery.matchers.external.program import MAX_TIMEOUT, ProgramClient
from ssgallery.matchers.host import cache_folder

PIXEL_RANGE = (0.0, 255.0)
QUALITY_MAX_IMAGES = 600  # training images whose quality sets the threshold


def _as_str(value):
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


class ExternalMatcher(ProgramClient, Matcher):
    """Black-box matcher reached through the external contract; prototypes are images.

    Features are the flattened pixels (d = H * W); prototypes move in pixel space
    inside the box [0, 255] with the heuristic gradient of Eq. 7 (eq:similarity-grad). One
    call of the similarity scores all n x m pairs with one run of the program (pairs whose images
    have not changed since an earlier call come from a content-hash cache).

    Parameters
    ----------
    command : str or list of str or None
        The program and its fixed arguments (a string is split with `shlex.split`).
        Host configuration: never stored; a matcher rebuilt from a file has None until
        `attach_host` names the program.
    timeout_base : float
        Seconds allowed to every run, plus ...
    timeout_per_pair : float
        ... this many seconds per scored pair.
    cache_dir : str or None
        Folder of a persistent answer cache (SQLite) shared across runs; None keeps
        the cache in memory only. Host configuration: never stored.
    distance_scale : float or None
        Scale of ``exp(-d / scale)`` for programs that report a distance; None
        measures it at `fit` (median distance between training images).

    Attributes
    ----------
    description_ : dict
        The program's ``--describe`` answer (kind, symmetric, range).
    contract_sha256_ : str
        SHA-256 of the whole ``--describe`` JSON and `get_config` (see
        `contract_digest`); a rebuilt matcher runs only a program whose contract
        has this digest.
    image_shape : tuple of int
        (H, W) of the images it was fitted on.
    n_calls_, n_pairs_, n_cached_ : int
        Scoring calls of the program (runs, or requests to the served program), pairs
        scored by the program, pairs answered by the cache.
    n_starts_ : int
        Program processes started (``--describe`` excluded): one per scoring call in
        one-shot mode, one per ssgallery process in persistent mode.
    quality_threshold_ : float or None
        Probes whose `quality` is below it fail to acquire; None when the program
        offers no quality score.
    source_ : str or None
        The store or gallery it was rebuilt from (set by
        `ssgallery.formats.hdf5.build_matcher`), named first by its contract refusals;
        None for a matcher fitted here.
    """

    name = "external"
    learns_from_images = False  # fit records the shape and the distance scale only
    black_box = True  # scores only: Eq. 7 (eq:similarity-grad)'s heuristic gradient

    def __init__(self, command=None, timeout_base=60.0, timeout_per_pair=0.01, cache_dir=None,
                 distance_scale=None, serve=True):
        self.command = command
        self.timeout_base = timeout_base
        self.timeout_per_pair = timeout_per_pair
        self.cache_dir = cache_dir
        self.distance_scale = distance_scale
        self.serve = serve
        self._check_settings()  # where they come in: before the program ever runs
        self.n_calls_ = self.n_pairs_ = self.n_cached_ = self.n_starts_ = 0
        self._cache = {}
        self._quality = {}  # pixel digest -> the program's quality score
        self._contract_checked = True  # False once rebuilt from a file (from_state)
        self.source_ = None  # the file it was rebuilt from (build_matcher)
        self._server = None

    def quality(self, images):
        """The program's quality score of images (n, H, W), shape (n,), higher is more
        face-like; NaN when the program offers none. One run for the images not asked
        before (`is_face` after `quality` runs nothing)."""
        self._check_fitted()
        images = self._check_images(images)
        if not self.describe().get("quality"):
            return np.full(len(images), np.nan)
        keys = cache.digests(images.reshape(len(images), -1))
        new = sorted({k: i for i, k in enumerate(keys) if k not in self._quality}.values())
        if new:
            with tempfile.TemporaryDirectory(prefix="ssgallery-img-") as tmp:
                q = self.quality_paths(write_images(tmp, "q", images[new]), workdir=tmp)
            self._quality.update(zip((keys[i] for i in new), q))
        return np.array([self._quality[k] for k in keys], dtype=float)

    # -- conversion and cache ----------------------------------------------------------
    def _convert(self, D):
        """Program answers -> similarities (identity, or exp(-d / scale) for a distance)."""
        if self.describe()["kind"] == "distance":
            return np.exp(-D / self._scale())
        return D

    def _scale(self):
        scale = self.distance_scale if self.distance_scale is not None else getattr(
            self, "distance_scale_", None)
        return float(scale) if scale else 1.0

    def _score_features(self, X, Z):
        """Similarity (n, m) of flattened images; runs the program on uncached pairs only."""
        self._check_fitted()
        X = np.asarray(X, dtype=float)
        Z = np.asarray(Z, dtype=float)
        n, m = len(X), len(Z)
        keys = cache.pair_keys(self.argv, X, Z, self.describe()["symmetric"])
        db = cache.open_db(self.cache_dir) if self.cache_dir else None
        path = cache.db_path(self.cache_dir) if db is not None else None
        try:
            D = cache.lookup(keys, (n, m), self._cache, db, self._answer_bounds(), path)
            missing = np.isnan(D)
            self.n_cached_ += int(n * m - missing.sum())
            rows, cols = np.flatnonzero(missing.any(1)), np.flatnonzero(missing.any(0))
            if len(rows):
                H, W = self.image_shape
                new = self.score_images(X[rows].reshape(-1, H, W), Z[cols].reshape(-1, H, W))
                D[np.ix_(rows, cols)] = new
                with cache.used(path):
                    cache.remember({keys[i][j]: float(new[a, b]) for a, i in enumerate(rows)
                                    for b, j in enumerate(cols)}, self._cache, db)
        finally:
            if db is not None:
                db.close()
        return self._convert(D)

    # -- the Matcher API ---------------------------------------------------------------
    def _check_images(self, images):
        images = np.asarray(images, dtype=float)
        if images.ndim != 3:
            raise InputError(f"expected images of shape (n, H, W), got {images.shape}")
        return images

    def _check_settings(self):
        """Refuse timeouts and a distance scale that are not numbers of their range
        (`_positive`: a bool or a string is not a number), a ``serve`` that is not a
        bool and a ``cache_dir`` that is no folder name
        (`ssgallery.matchers.host.cache_folder`): one line naming the option."""
        cache_folder(self.cache_dir, "external matcher option")
        _positive("option timeout_base", self.timeout_base, unit=" (seconds)",
                  at_most=MAX_TIMEOUT)
        _positive("option timeout_per_pair", self.timeout_per_pair, allow_zero=True,
                  unit=" (seconds)", at_most=MAX_TIMEOUT)
        if self.distance_scale is not None:
            _positive("option distance_scale", self.distance_scale)
        if not is_bool(self.serve):  # "no" is no false, 1 no true
            raise InputError(f"external matcher option serve must be true or false, got "
                             f"{shown(self.serve)}")

    def _check_fitted(self):
        if getattr(self, "image_shape", None) is None:
            raise MatcherError("the external matcher is not fitted (no image shape yet)")

    def fit(self, images):
        """Record the image shape, ask the program to describe itself, and for a
        distance measure the conversion scale on (up to 20) training images."""
        images = self._check_images(images)
        self._check_settings()
        self.image_shape = tuple(int(s) for s in images.shape[1:])
        self.describe()
        self.distance_scale_ = None
        if self.describe()["kind"] == "distance" and self.distance_scale is None:
            sub = images[np.linspace(0, len(images) - 1, min(len(images), 20)).astype(int)]
            D = self.score_images(sub, sub)
            off = D[~np.eye(len(sub), dtype=bool)]
            med = float(np.median(off)) if off.size else 1.0
            self.distance_scale_ = med if med > 0 else 1.0
        self.quality_threshold_ = None
        if self.describe()["quality"]:
            self.quality_threshold_ = quality_threshold(self.quality(images[:QUALITY_MAX_IMAGES]))
        return self

    def transform(self, images):
        """Flattened pixels, shape (n, H*W)."""
        self._check_fitted()
        images = self._check_images(images)
        if tuple(images.shape[1:]) != tuple(self.image_shape):
            raise InputError(f"images of shape {images.shape[1:]} given to a matcher fitted "
                             f"on {tuple(self.image_shape)}")
        return images.reshape(len(images), -1)

    def similarity(self):
        """The program's similarity with the heuristic gradient of Eq. 7 (eq:similarity-grad)."""
        return HeuristicGradient(CallableSimilarity(self._score_features,
                                                    name=f"external:{self.program}"))

    def bounds(self):
        return PIXEL_RANGE

    def render(self, Z):
        self._check_fitted()
        Z = np.asarray(Z, dtype=float)
        return np.clip(Z, *PIXEL_RANGE).reshape((len(Z),) + tuple(self.image_shape))

    def get_config(self):
        """Stored parameters: no command and no cache folder (host configuration)."""
        return {"timeout_base": float(self.timeout_base),
                "timeout_per_pair": float(self.timeout_per_pair),
                "distance_scale": None if self.distance_scale is None
                else float(self.distance_scale), "serve": bool(self.serve)}

    def settings(self):
        """`get_config` without ``serve`` when the program offers no served mode
        (``serve`` means "use the served mode when the program offers one": it says
        nothing then); kept when that is not known (a file written before the mode)."""
        config = self.get_config()
        if getattr(self, "serve_offered_", None) is False:
            del config["serve"]
        return config

    def recorded_contract(self):
        """The contract as this matcher holds it (a rebuilt one: as its file records it):
        ``kind``, ``symmetric``, ``range``, ``quality``, ``quality_threshold``,
        ``conversion``, ``distance_scale`` (a distance's; else None), ``serve_offered``
        (None: not known) and ``contract_sha256``. Never asks the program: None when
        it was never described (not fitted)."""
        desc = getattr(self, "description_", None)
        if desc is None:
            return None
        distance = desc["kind"] == "distance"
        offered = getattr(self, "serve_offered_", None)
        threshold = getattr(self, "quality_threshold_", None)
        return {"kind": desc["kind"], "symmetric": bool(desc["symmetric"]),
                "range": [float(v) for v in desc["range"]],
                "quality": bool(desc["quality"]),
                "quality_threshold": None if threshold is None else float(threshold),
                "conversion": "exp(-d/scale)" if distance else "identity",
                "distance_scale": self._scale() if distance else None,
                "serve_offered": None if offered is None else bool(offered),
                "contract_sha256": self.contract_sha256_}

    def get_state(self):
        self._check_fitted()
        desc = self.describe()
        kind = desc["kind"]
        return {"image_shape": np.asarray(self.image_shape, dtype=np.int64),
                "kind": kind, "symmetric": int(desc["symmetric"]),
                "range": np.asarray(desc["range"], dtype=float),
                "conversion": "exp(-d/scale)" if kind == "distance" else "identity",
                "distance_scale": float(self._scale()),
                "contract_sha256": self.contract_sha256_, "serve_offered": int(self._offers()),
                "quality": int(desc["quality"]),
                "quality_threshold": float("nan") if self.quality_threshold_ is None
                else float(self.quality_threshold_)}

    @classmethod
    def from_state(cls, config, state):
        """Rebuild from a file: never takes a command from it (see `attach_host`). Its
        flags (``symmetric``, ``quality``, ``serve_offered``) are what `get_state`
        writes, 0 or 1 (`ssgallery.checks.stored_flag`): "false", 2 or an array is
        refused (`MatcherError`), never read as true."""
        config = dict(config)
        self = cls(timeout_base=config.get("timeout_base", 60.0),  # checked: InputError
                   timeout_per_pair=config.get("timeout_per_pair", 0.01),
                   distance_scale=config.get("distance_scale"),
                   serve=config.get("serve", True))
        try:
            self.image_shape = tuple(int(s) for s in np.asarray(state["image_shape"]))
            self.description_ = {"kind": _as_str(state["kind"]),
                                 "symmetric": stored_flag("symmetric", state["symmetric"]),
                                 "range": [float(v) for v in np.asarray(state["range"])]}
            self.distance_scale_ = _positive("state distance_scale",
                                             state["distance_scale"])
            self.contract_sha256_ = _as_str(state["contract_sha256"])
            self._contract_checked = False
            self.description_["quality"] = stored_flag("quality", state.get("quality", 0))
            threshold = float(np.asarray(state.get("quality_threshold", np.nan)))
            self.quality_threshold_ = None if np.isnan(threshold) else threshold
            if "serve_offered" in state:  # files written before the persistent mode: ask
                self.serve_offered_ = stored_flag("serve_offered", state["serve_offered"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MatcherError(f"external matcher state is incomplete or insane: {exc}") \
                from None
        lo, hi = self.description_["range"]
        if (len(self.image_shape) != 2 or min(self.image_shape) < 1
                or self.description_["kind"] not in ("similarity", "distance")
                or not lo < hi or len(self.contract_sha256_) != 64
                or self.description_["quality"] != (self.quality_threshold_ is not None)
                or not np.isfinite(self.quality_threshold_ or 0.0)):
            raise MatcherError("external matcher state is inconsistent (image shape, kind, "
                               "range, contract digest or quality threshold)")
        return self

    def attach_host(self, host):
        """Run the host's program (``host.argv``, None: none named) with its cache folder;
        its contract is checked against `contract_sha256_` before the first run."""
        self.command = host.argv
        self.cache_dir = host.cache_dir
        return self

    def dimension(self):
        self._check_fitted()
        return int(np.prod(self.image_shape))

    def similarity_range(self):
        """Bounds of s: the described range, through exp(-d / scale) for a distance."""
        lo, hi = self.describe()["range"]
        if self.describe()["kind"] == "distance":
            return (float(np.exp(-hi / self._scale())), float(np.exp(-lo / self._scale())))
        return (lo, hi)

    def check_prototypes(self, Z):
        """Prototypes are images: inside the pixel box."""
        Z = np.asarray(Z, dtype=float)
        if Z.size and (Z.min() < PIXEL_RANGE[0] or Z.max() > PIXEL_RANGE[1]):
            raise MatcherError("external matcher prototypes lie outside the pixel range "
                               f"[{PIXEL_RANGE[0]:g}, {PIXEL_RANGE[1]:g}]")

    def __repr__(self):
        cmd = "None" if self.command is None else repr(shlex.join(self.argv))
        return f"ExternalMatcher(command={cmd})"


def _positive(name, value, allow_zero=False, unit="", at_most=None):
    """``value`` (an option of the command line or a file's JSON, or a state attribute,
    ``name`` says which: ``option timeout_base``) as a float: a finite number > 0 (>= 0
    with ``allow_zero``), at most ``at_most`` when given; a bool, a string or anything
    else is refused (`InputError`: ``external matcher option timeout_base must be a
    finite number > 0 (seconds), got true``; ``... must be at most 604800 (seconds), got
    1e+300``). The same check whether the value comes from the command line or from a
    store or gallery (`from_state`)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not (is_finite_real(value) and (value > 0 or allow_zero and value == 0)):
        raise InputError(f"external matcher {name} must be a finite number "
                         f"{'>= 0' if allow_zero else '> 0'}{unit}, got {shown(value)}")
    if at_most is not None and value > at_most:
        raise InputError(f"external matcher {name} must be at most {at_most:g}{unit}, got "
                         f"{shown(value)}")
    return float(value)
