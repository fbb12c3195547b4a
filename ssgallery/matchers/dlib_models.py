"""The dlib models of `ssgallery.matchers.deep` (the weight files of the
``face-recognition-models`` package, loaded once per process) and the descriptor cache
of a process (`save_cache`, `load_cache` keep it in a file between runs).

``dlib`` is imported only when the models are loaded (`load_models`).
"""

import hashlib
import importlib.util
import json
import os

import numpy as np

from ssgallery.errors import MatcherError

DIM = 128
MODEL_FILES = {"recognition": "dlib_face_recognition_resnet_model_v1.dat",
               "landmarks": "shape_predictor_5_face_landmarks.dat"}
EXTRA_HINT = "the dlib matcher needs the extra: pip install 'ssgallery[dlib]'"

CACHE_SIZE = 20000      # images whose (descriptor, quality) a process remembers

_MODELS = {}  # loaded once per process: name -> dlib object, plus "sha256"
# This process's descriptor cache: (detect, shape, pixel digest) -> (descriptor or None,
# quality); `ssgallery.matchers.deep.DlibMatcher.describe` fills it (emptied at
# CACHE_SIZE images), `save_cache` and `load_cache` keep it in a file between runs.
DESCRIPTOR_CACHE = {}


def import_dlib():
    """The ``dlib`` module, imported when first needed.

    Returns
    -------
    module

    Raises
    ------
    MatcherError
        dlib is not installed (`EXTRA_HINT`).
    """
    try:
        import dlib
    except ImportError:
        raise MatcherError(EXTRA_HINT) from None
    return dlib


def model_paths():
    """Paths of the weight files shipped by ``face-recognition-models``: dict name -> str.

    Found without importing that package (its ``__init__`` needs ``pkg_resources``).
    """
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise MatcherError(EXTRA_HINT)
    folder = os.path.join(next(iter(spec.submodule_search_locations)), "models")
    paths = {k: os.path.join(folder, f) for k, f in MODEL_FILES.items()}
    for path in paths.values():
        if not os.path.isfile(path):
            raise MatcherError(f"dlib model file missing: {path}; reinstall the extra: "
                               "pip install 'ssgallery[dlib]'")
    return paths


def model_digests():
    """SHA-256 of the installed weight files, dict name -> hex (computed once per process)."""
    if "sha256" not in _MODELS:
        digests = {}
        for name, path in model_paths().items():
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            digests[name] = h.hexdigest()
        _MODELS["sha256"] = digests
    return _MODELS["sha256"]


def load_models():
    """(detector, shape predictor, recogniser), loaded once per process."""
    if "recognition" not in _MODELS:
        dlib = import_dlib()
        paths = model_paths()
        try:
            _MODELS["detector"] = dlib.get_frontal_face_detector()
            _MODELS["landmarks"] = dlib.shape_predictor(paths["landmarks"])
            _MODELS["recognition"] = dlib.face_recognition_model_v1(paths["recognition"])
        except RuntimeError as exc:
            raise MatcherError(f"dlib could not load its models: {exc}") from None
    return _MODELS["detector"], _MODELS["landmarks"], _MODELS["recognition"]


def save_cache(path):
    """Write this process's descriptor cache to ``path`` (``.npz``), with the SHA-256 of
    the installed weights, so that another process (a benchmark's next run) can
    `load_cache` it instead of recomputing every descriptor. Returns the number of
    images written."""
    keys = list(DESCRIPTOR_CACHE)
    desc = np.full((len(keys), DIM), np.nan)
    for i, key in enumerate(keys):
        if DESCRIPTOR_CACHE[key][0] is not None:
            desc[i] = DESCRIPTOR_CACHE[key][0]
    np.savez(path, detect=np.array([k[0] for k in keys], dtype=bool),
             shape=np.array([k[1] for k in keys], dtype=np.int64).reshape(-1, 2),
             digest=np.array([np.frombuffer(k[2], np.uint8) for k in keys],
                            dtype=np.uint8).reshape(-1, 16), descriptor=desc,
             quality=np.array([DESCRIPTOR_CACHE[k][1] for k in keys], dtype=float),
             model_sha256=np.array(json.dumps(model_digests(), sort_keys=True)))
    return len(keys)


def load_cache(path):
    """Add the descriptors saved by `save_cache` to this process's cache; returns
    the number of images added (0 when the file was made with other weights)."""
    with np.load(path) as f:
        if json.loads(str(f["model_sha256"])) != model_digests():
            return 0
        rows = zip(f["detect"], f["shape"], f["digest"], f["descriptor"], f["quality"])
        for detect, shape, digest, desc, quality in rows:
            key = (bool(detect), tuple(int(s) for s in shape), digest.tobytes())
            DESCRIPTOR_CACHE[key] = (None if np.isnan(desc[0]) else desc.copy(), float(quality))
        return len(f["quality"])
