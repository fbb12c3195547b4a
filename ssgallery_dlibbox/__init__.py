"""``ssgallery-dlibbox``: dlib face descriptors as a black-box matcher program.

It speaks the external-matcher contract of ssgallery (docs/external-matcher.md) and
answers only scores, like a vendor's matcher: no descriptor and no gradient leave it, so
ssgallery learns prototypes in pixel space through the heuristic gradient of Eq. 7::

    ssgallery-dlibbox --probe-list A.txt --gallery-list B.txt [--out S.txt]
    ssgallery-dlibbox --quality-list A.txt [--out Q.txt]
    ssgallery-dlibbox --describe
    ssgallery-dlibbox --serve       # persistent mode: JSON-line requests on stdin/stdout

Lists hold one image path per line: a grey 8-bit image file (.pgm/.png/.jpg/.bmp/.tif,
colour converted to grey) or a float32 ``.npy`` of shape (H, W) on [0, 255] (a
prototype: never rounded). The score is the **squared Euclidean distance** between the
two images' dlib ResNet descriptors (128-d; ``kind: distance``, symmetric, 0 for
identical images); ssgallery turns it into s = exp(-d / scale) with scale the median
training distance, which is the RBF of ssgallery's analytic ``dlib`` matcher. The
descriptor is computed as that matcher computes it, in floating point from the pixels
on (`ssgallery_dlibbox.face`); ``--dlib-8bit`` rounds as dlib's Python API does instead.

Quality (``--quality-list``): the face detector's score, -1 where nothing was detected.

Descriptors of image files (not of .npy prototypes, which move) are kept in
``--cache-dir`` across calls, keyed by the SHA-256 of their pixels; a served program
also remembers every descriptor it computed, so a request costs one descriptor per
image it has not seen (a moved prototype).
"""

import argparse
import collections
import hashlib
import json
import os
import sys

import numpy as np

PROG = "ssgallery-dlibbox"
VERSION = 1
RANGE_HI = 16.0  # (2 + 2)^2: descriptor norms measured 1.26-1.56 on LFW crops and non-faces
MEMORY_ITEMS = 50000  # descriptors a process remembers (about 1 KB each)
CHUNK = 64  # probes per block of the distance computation


class BoxError(Exception):
    """A problem with the input of one call (reported on one line, exit 2)."""


def describe_json(dlib_8bit=False):
    """The ``--describe`` object: the contract's keys and what identifies the model."""
    from .face import model_digests

    return {"kind": "distance", "symmetric": True, "range": [0.0, RANGE_HI],
            "serve": True, "quality": True, "program": PROG, "version": VERSION,
            "distance": "squared Euclidean distance between dlib ResNet face descriptors",
            "pixels": "8-bit as dlib" if dlib_8bit else "float",
            "model_sha256": model_digests()}


def read_list(path):
    """Paths in a list file, one per line (blank lines ignored)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return [line.rstrip("\r\n") for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise BoxError(f"cannot read list {path}: {exc}") from None


def load_image(path):
    """One image as float64 (H, W) on the 8-bit scale, from .npy or an image file."""
    try:
        if path.lower().endswith(".npy"):
            arr = np.load(path, allow_pickle=False)
        else:
            from PIL import Image

            # the formats ssgallery documents, nothing else: never Ghostscript (EPS)
            with Image.open(path, formats=("PPM", "PNG", "JPEG", "BMP", "TIFF")) as img:
                arr = np.asarray(img.convert("L"))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one clear line
        raise BoxError(f"cannot read image {path}: {exc}") from None
    arr = np.asarray(arr)
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2 or min(arr.shape) < 8 or not np.issubdtype(arr.dtype, np.number):
        raise BoxError(f"{path}: expected a grey image of at least 8x8, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise BoxError(f"{path}: image has non-finite pixels")
    if arr.min() < 0 or arr.max() > 255:
        raise BoxError(f"{path}: pixels outside [0, 255]")
    return arr


class Describer:
    """Descriptors of image files, remembered by pixel content.

    Parameters
    ----------
    cache_dir : str or None
        Folder keeping the descriptors of image files (not .npy) across calls.
    dlib_8bit : bool
        Round the upsampled image and truncate the chip to 8 bits, as dlib does.
    """

    def __init__(self, cache_dir=None, dlib_8bit=False):
        self.cache_dir, self.dlib_8bit = cache_dir, dlib_8bit
        self.memory = collections.OrderedDict()  # key -> (descriptor, quality)
        self.cache_said = False  # that cache_dir cannot be written: said once

    def _folder(self):
        from .face import model_digests

        tag = hashlib.sha256(json.dumps([VERSION, self.dlib_8bit, model_digests()],
                                        sort_keys=True).encode()).hexdigest()[:16]
        return os.path.join(self.cache_dir, tag)

    def _disk(self, key):
        try:
            row = np.load(os.path.join(self._folder(), key + ".npy"), allow_pickle=False)
        except (OSError, ValueError):
            return None
        if row.shape != (129,) or row.dtype != np.float64 or not np.all(np.isfinite(row)):
            return None
        return row[:128], float(row[128])

    def _store(self, key, value, on_disk):
        self.memory[key] = value
        self.memory.move_to_end(key)
        while len(self.memory) > MEMORY_ITEMS:
            self.memory.popitem(last=False)
        if on_disk and self.cache_dir:
            folder = self._folder()
            path = os.path.join(folder, key + ".npy")
            try:
                os.makedirs(folder, exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp.npy"
                np.save(tmp, np.append(value[0], value[1]))
                os.replace(tmp, path)
            except OSError as exc:  # a cache that cannot be written is only slower
                self._unwritable(exc)

    def _unwritable(self, exc):
        """Say once, on stderr, that ``cache_dir`` cannot keep descriptors."""
        if self.cache_said:
            return
        self.cache_said = True
        d = self.cache_dir
        why = "not a folder" if os.path.lexists(d) and not os.path.isdir(d) \
            else exc.strerror or exc
        print(f"{PROG}: warning: --cache-dir {d}: cannot write there ({why}); running "
              "without a cache (every image is described again on each call)", file=sys.stderr)

    def describe(self, paths):
        """(descriptors (n, 128), qualities (n,), keys) of image files."""
        from .face import describe

        keys, images, todo = [], {}, {}
        for path in paths:
            if not os.path.isfile(path):
                raise BoxError(f"no such image file: {path}")
            img = load_image(path)
            key = hashlib.sha256(repr(img.shape).encode() + img.tobytes()).hexdigest()
            keys.append(key)
            if key in self.memory or key in todo:
                continue
            real = not path.lower().endswith(".npy")
            hit = self._disk(key) if (real and self.cache_dir) else None
            if hit is not None:
                self._store(key, hit, False)
            else:
                todo[key], images[key] = real, img
        for key, real in todo.items():  # each kept at once: a killed call loses one
            D, q = describe([images[key]], self.dlib_8bit)
            self._store(key, (D[0], float(q[0])), real)
        values = [self.memory[k] for k in keys]
        return (np.array([v[0] for v in values]).reshape(len(keys), 128),
                np.array([v[1] for v in values], dtype=float), keys)


def squared_distances(A, B):
    """(n, m) squared Euclidean distances between rows, exactly symmetric."""
    out = np.empty((len(A), len(B)))
    for i0 in range(0, len(A), CHUNK):
        diff = A[i0:i0 + CHUNK, None, :] - B[None, :, :]
        out[i0:i0 + CHUNK] = np.einsum("ijk,ijk->ij", diff, diff)
    return out


def format_matrix(S):
    return "".join(" ".join(f"{v:.9g}" for v in row) + "\n" for row in S)


def _answer(request, describer):
    """The text answering ``request`` (probe_list + gallery_list, or quality_list)."""
    if request.get("quality_list"):
        return format_matrix(describer.describe(read_list(request["quality_list"]))[1][:, None])
    if request.get("probe_list") and request.get("gallery_list"):
        probes, galleries = read_list(request["probe_list"]), read_list(request["gallery_list"])
        if not probes or not galleries:
            return format_matrix(np.zeros((len(probes), len(galleries))))
        A, _, ka = describer.describe(probes)
        B, _, kb = describer.describe(galleries)
        S = squared_distances(A, B)
        S[np.array(ka)[:, None] == np.array(kb)[None, :]] = 0.0
        return format_matrix(S)
    raise BoxError("a request needs probe_list and gallery_list, or quality_list")


def _write(text, out):
    if not out:
        sys.stdout.write(text)
        return
    tmp = out + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        raise BoxError(f"cannot write {out}: {exc.strerror or exc}") from None


def _face_errors():
    from .face import FaceError
    from .resnet import ModelError

    return (BoxError, FaceError, ModelError)


def serve(stdin, stdout, describer):
    """The persistent mode: one JSON request per input line, one JSON answer per line."""
    errors = _face_errors() + (ValueError, TypeError)
    for line in stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not req.get("out"):
                raise BoxError("a request needs probe_list and gallery_list, or "
                               "quality_list, and out")
            _write(_answer(req, describer), req["out"])
            reply = {"ok": True}
        except errors as exc:
            reply = {"error": " ".join(str(exc).split())}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return 0


def _parser():
    p = argparse.ArgumentParser(
        prog=PROG, description="dlib face descriptors as a black-box matcher "
        "(ssgallery matcher contract): squared descriptor distances only.")
    p.add_argument("--probe-list", help="text file, one probe image path per line")
    p.add_argument("--gallery-list", help="text file, one gallery image path per line")
    p.add_argument("--quality-list", help="text file, one image path per line: print the "
                   "face detector's score of each, one per line")
    p.add_argument("--out", help="write the |probes| x |gallery| matrix (or the qualities) "
                   "here (default stdout)")
    p.add_argument("--describe", action="store_true", help="print the matcher's JSON description")
    p.add_argument("--serve", action="store_true",
                   help="persistent mode: read one JSON request per line on stdin "
                   '({"probe_list", "gallery_list", "out"} or {"quality_list", "out"}), write '
                   'the answer to "out" and answer {"ok": true} or {"error": ...} on stdout; '
                   "exit at end of input")
    p.add_argument("--cache-dir", help="keep the descriptors of image files (not .npy) here "
                   "across calls, keyed by pixel content (1 KB per image); a folder that "
                   "cannot be written is one warning on stderr, and no cache")
    p.add_argument("--dlib-8bit", action="store_true",
                   help="round the upsampled image and truncate the face chip to 8 bits as "
                   "dlib's Python API does (scores of real images then equal ssgallery's "
                   "dlib matcher exactly; a prototype's small steps are lost)")
    return p


def main(argv=None):
    """Console entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    errors = _face_errors()
    try:
        if args.describe:
            print(json.dumps(describe_json(args.dlib_8bit)))
            return 0
        describer = Describer(args.cache_dir, args.dlib_8bit)
        if args.serve:
            return serve(sys.stdin, sys.stdout, describer)
        if not args.quality_list and (not args.probe_list or not args.gallery_list):
            _parser().error("--probe-list and --gallery-list are required (or "
                            "--quality-list, or --describe)")
        _write(_answer(vars(args), describer), args.out)
    except errors as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
