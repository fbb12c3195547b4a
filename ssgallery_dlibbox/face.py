"""From a grey image (float, [0, 255]) to its dlib face descriptor, without rounding.

The same steps as ssgallery's analytic ``dlib`` matcher (bilinear upsampling to a
shorter side of at least 150 px, HOG detector down to a score of -0.5 with the whole
image as the fallback box, 5 landmarks, dlib's 150 px face chip with padding 0.25, the
ResNet descriptor), split in two:

- **geometry** (where the face is): detector and landmarks run on the image rounded to
  8 bits, exactly as dlib sees a real image; the result is the affine map from chip
  pixels to image pixels that ``dlib.get_face_chip`` uses, and the detector score
  (the quality);
- **pixels** (what the face looks like): the float image is upsampled, and the chip
  sampled through that map, in floating point (bilinear, outside the image = 0), then
  described by `ssgallery_dlibbox.resnet` in float32.

On a real 8-bit image the chip differs from dlib's only by dlib's rounding of the
upsampled image and truncation of the chip to 8 bits. A prototype moved by a small
step changes its pixels, hence its descriptor, continuously; its geometry changes only
when the step changes a rounded pixel enough to move a landmark (a small jump).
"""

import hashlib
import importlib.util
import math
import os

import numpy as np

from .resnet import CHIP, forward, load_network

MIN_SIDE = 150       # pixels: the shorter side after upsampling
DETECT_FLOOR = -0.5  # the lowest detector score taken as a face
FALLBACK_QUALITY = -1.0  # quality of an image where nothing was detected
PADDING = 0.25       # dlib.get_face_chip's default
MODEL_FILES = {"recognition": "dlib_face_recognition_resnet_model_v1.dat",
               "landmarks": "shape_predictor_5_face_landmarks.dat"}

_MODELS = {}


class FaceError(Exception):
    """dlib or its model files are missing or unreadable."""


def model_paths():
    """Paths of the weight files of the ``face-recognition-models`` package (found
    without importing it: its ``__init__`` needs ``pkg_resources``)."""
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise FaceError("the face-recognition-models package is not installed "
                        "(pip install 'ssgallery[dlib]')")
    folder = os.path.join(next(iter(spec.submodule_search_locations)), "models")
    paths = {name: os.path.join(folder, f) for name, f in MODEL_FILES.items()}
    for path in paths.values():
        if not os.path.isfile(path):
            raise FaceError(f"model file missing: {path}")
    return paths


def model_digests():
    """SHA-256 of the weight files, dict name -> hex (once per process)."""
    if "sha256" not in _MODELS:
        digests = {}
        for name, path in model_paths().items():
            h = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    h.update(block)
            digests[name] = h.hexdigest()
        _MODELS["sha256"] = digests
    return _MODELS["sha256"]


def _models():
    """(dlib, detector, shape predictor, network layers), loaded once per process."""
    if "layers" not in _MODELS:
        try:
            import dlib
        except ImportError:
            raise FaceError("dlib is not installed (pip install 'ssgallery[dlib]')") from None
        paths = model_paths()
        try:
            _MODELS["detector"] = dlib.get_frontal_face_detector()
            _MODELS["predictor"] = dlib.shape_predictor(paths["landmarks"])
        except RuntimeError as exc:
            raise FaceError(f"dlib could not load its models: {exc}") from None
        _MODELS["layers"] = load_network(paths["recognition"])[1]
        _MODELS["dlib"] = dlib
    return _MODELS["dlib"], _MODELS["detector"], _MODELS["predictor"], _MODELS["layers"]


def upsample_factor(shape):
    """Integer factor bringing the shorter side of ``shape`` (H, W) to >= MIN_SIDE."""
    return max(1, math.ceil(MIN_SIDE / max(1, min(shape))))


def _resize(img, factor, mode):
    from PIL import Image

    if factor == 1:
        return img
    h, w = img.shape
    pil = Image.fromarray(img) if mode == "L" else Image.fromarray(img.astype(np.float32), "F")
    return np.asarray(pil.resize((w * factor, h * factor), Image.BILINEAR))


def geometry(img):
    """(chip map (3, 2), quality) of a float image (H, W): rows of the map send a chip
    pixel (column, row, 1) to upsampled-image coordinates (x, y)."""
    dlib, detector, predictor, _ = _models()
    u8 = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    up = _resize(u8, upsample_factor(u8.shape), "L")
    rects, scores, _ = detector.run(up, 0, DETECT_FLOOR)
    if len(rects):
        k = int(np.argmax(scores))
        box, quality = rects[k], float(scores[k])
    else:
        box, quality = dlib.rectangle(0, 0, up.shape[1] - 1, up.shape[0] - 1), FALLBACK_QUALITY
    rgb = np.ascontiguousarray(np.repeat(up[:, :, None], 3, axis=2))
    details = dlib.get_face_chip_details(predictor(rgb, box), CHIP, PADDING)
    return _chip_map(details), quality


def _chip_map(details):
    """The affine map dlib's extract_image_chip samples through: the chip's top-left,
    top-right and bottom-left corners onto the rectangle's, rotated about its centre."""
    r, angle = details.rect, details.angle
    cx, cy = (r.left() + r.right()) / 2, (r.top() + r.bottom()) / 2
    c, s = math.cos(angle), math.sin(angle)

    def rotate(x, y):
        return cx + c * (x - cx) - s * (y - cy), cy + s * (x - cx) + c * (y - cy)

    to = np.array([rotate(r.left(), r.top()), rotate(r.right(), r.top()),
                   rotate(r.left(), r.bottom())])
    corners = np.array([[0, 0, 1], [details.cols - 1, 0, 1], [0, details.rows - 1, 1]], float)
    return np.linalg.solve(corners, to)


def chip(img, chip_map, dlib_8bit=False):
    """The float chip (150, 150) of a float image (H, W) through ``chip_map``
    (`geometry`): bilinear on the float upsampled image, 0 outside it. ``dlib_8bit``:
    as dlib computes it, from the 8-bit upsampled image, truncated to 8 bits."""
    factor = upsample_factor(img.shape)
    if dlib_8bit:
        up = _resize(np.clip(np.rint(img), 0, 255).astype(np.uint8), factor, "L")
    else:
        up = _resize(np.asarray(img, dtype=np.float64), factor, "F")
    up = np.asarray(up, dtype=np.float64)
    cols, rows = np.meshgrid(np.arange(CHIP), np.arange(CHIP))
    xy = np.c_[cols.ravel(), rows.ravel(), np.ones(cols.size)] @ chip_map
    H, W = up.shape
    left, top = np.floor(xy[:, 0]).astype(int), np.floor(xy[:, 1]).astype(int)
    inside = (left >= 0) & (top >= 0) & (left + 1 < W) & (top + 1 < H)
    left, top = np.where(inside, left, 0), np.where(inside, top, 0)
    fx, fy = xy[:, 0] - left, xy[:, 1] - top
    value = ((1 - fy) * ((1 - fx) * up[top, left] + fx * up[top, left + 1])
             + fy * ((1 - fx) * up[top + 1, left] + fx * up[top + 1, left + 1]))
    value = np.where(inside, value, 0.0).reshape(CHIP, CHIP)
    return np.floor(value + 1e-9) if dlib_8bit else value


def describe(images, dlib_8bit=False):
    """Descriptors (n, 128) and qualities (n,) of float images, a list of (H, W)
    (``dlib_8bit``: see `chip`)."""
    layers = _models()[3]
    D, quality = np.empty((len(images), 128)), np.empty(len(images))
    for i, img in enumerate(images):
        chip_map, quality[i] = geometry(img)
        # one chip per evaluation: a batch's BLAS blocking would make an image's
        # descriptor depend, in its last bits, on the images described with it
        D[i] = forward(layers, chip(img, chip_map, dlib_8bit)[None])[0]
    return D, quality


def quality(images):
    """Detector scores (n,) of float images (no descriptor computed)."""
    return np.array([geometry(img)[1] for img in images], dtype=float)
