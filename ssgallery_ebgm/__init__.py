"""``ssgallery-ebgm``: a reference Elastic Bunch Graph Matching face matcher.

It speaks the external-matcher contract of ssgallery (docs/formats.md) and is used by
ssgallery only through it, exactly like a third-party program::

    ssgallery-ebgm --probe-list A.txt --gallery-list B.txt [--out S.txt]
    ssgallery-ebgm --quality-list A.txt [--out Q.txt]
    ssgallery-ebgm --describe
    ssgallery-ebgm --serve       # persistent mode: JSON-line requests on stdin/stdout

Lists hold one image path per line (.pgm/.png/.jpg read with Pillow as 8-bit grey, or a
float ``.npy`` of shape (H, W) on the [0, 255] scale). The output is the |A| x |B|
similarity matrix in list order (stdout without ``--out``). Every image is transformed
once per call (identical files are transformed once), images whose shape differs from
the first gallery image are resampled to it. Deterministic; scores lie in [-1, 1], 1
for identical images. See `ssgallery_ebgm.graph` for the algorithm.

Quality (``--quality-list``, failure to acquire): how well an image's face graph
matches its own mirror image, the same graph match and jet similarity as a score
(`quality_files`): a frontal face is nearly left-right symmetric, and an image without
Gabor structure (uniform, black) scores 0. ssgallery learns the threshold from the
enrolled images.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np

from .gabor import responses
from .graph import GraphMatcher

PROG = "ssgallery-ebgm"
DESCRIPTION = {"kind": "similarity", "symmetric": False, "range": [-1.0, 1.0], "serve": True,
               "quality": True}


class EbgmError(Exception):
    """A problem with the input of one call (reported on one line, exit 2)."""


def read_list(path):
    """Paths in a list file, one per line (blank lines ignored), relative to the cwd."""
    try:
        with open(path, encoding="utf-8") as handle:
            return [line.rstrip("\r\n") for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise EbgmError(f"cannot read list {path}: {exc}") from None


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
        raise EbgmError(f"cannot read image {path}: {exc}") from None
    arr = np.asarray(arr)
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2 or arr.shape[0] < 8 or arr.shape[1] < 8 or not np.issubdtype(
        arr.dtype, np.number
    ):
        raise EbgmError(f"{path}: expected a grey image of at least 8x8, got shape {arr.shape}")
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise EbgmError(f"{path}: image has non-finite pixels")
    return arr


def _resample(arr, shape):
    from PIL import Image

    img = Image.fromarray(arr.astype(np.float32), mode="F")
    return np.asarray(img.resize((shape[1], shape[0]), Image.BILINEAR), dtype=float)


def _digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _response(path, shape, key, cache_dir=None):
    """Gabor responses of one file (H*W, 40) complex64, read from / kept in ``cache_dir``
    (exactly: a cached response gives the same scores as a fresh one)."""
    cached = None
    if cache_dir and not path.lower().endswith(".npy"):  # real images; prototypes change
        cached = os.path.join(cache_dir, f"{key}-{shape[0]}x{shape[1]}.npy")
        try:
            R = np.load(cached, allow_pickle=False)
            if R.dtype == np.complex64 and R.shape == (shape[0] * shape[1], 40):
                return R
        except (OSError, ValueError):
            pass
    arr = load_image(path)
    if arr.shape != tuple(shape):
        arr = _resample(arr, shape)
    R = responses(arr)
    if cached:
        try:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = f"{cached}.{os.getpid()}.tmp.npy"
            np.save(tmp, R)
            os.replace(tmp, cached)
        except OSError as exc:  # a cache that cannot be written is only slower: said once
            _cache_unwritable(cache_dir, exc)
    return R


_unwritable = set()  # cache folders already said to be unwritable (by this process)


def _cache_unwritable(cache_dir, exc):
    """Say once per folder, on stderr, that ``cache_dir`` cannot keep responses."""
    if cache_dir in _unwritable:
        return
    _unwritable.add(cache_dir)
    why = "not a folder" if os.path.lexists(cache_dir) and not os.path.isdir(cache_dir) \
        else exc.strerror or exc
    print(f"{PROG}: warning: --cache-dir {cache_dir}: cannot write there ({why}); running "
          "without a cache (every image is transformed again on each call)", file=sys.stderr)


def score_files(probe_paths, gallery_paths, chunk=32, cache_dir=None):
    """Similarity matrix (len(probe_paths), len(gallery_paths)) of image files.

    Each distinct gallery image (by content hash) is transformed once and keeps its
    80 node jets; distinct probes are transformed ``chunk`` at a time and scored
    against the whole gallery, so memory stays bounded for long lists. With
    ``cache_dir``, responses of image files (not .npy) are kept there across calls.
    """
    if not probe_paths or not gallery_paths:
        return np.zeros((len(probe_paths), len(gallery_paths)))
    for path in list(probe_paths) + list(gallery_paths):
        if not os.path.isfile(path):
            raise EbgmError(f"no such image file: {path}")
    matcher = GraphMatcher(load_image(gallery_paths[0]).shape)
    g_keys = [_digest(p) for p in gallery_paths]
    g_first = {}
    for key, path in zip(g_keys, gallery_paths):
        g_first.setdefault(key, path)
    g_feat = {k: matcher.gallery_features(_response(p, matcher.shape, k, cache_dir))
              for k, p in g_first.items()}
    g_order = list(g_feat)
    g_index = {k: i for i, k in enumerate(g_order)}
    cols = [g_index[k] for k in g_keys]
    p_keys = [_digest(p) for p in probe_paths]
    p_first = {}
    for key, path in zip(p_keys, probe_paths):
        p_first.setdefault(key, path)
    p_order = list(p_first)
    S = np.empty((len(p_order), len(g_order)))
    galleries = [g_feat[k] for k in g_order]
    for i0 in range(0, len(p_order), chunk):
        probes = [matcher.probe_features(_response(p_first[k], matcher.shape, k, cache_dir))
                  for k in p_order[i0 : i0 + chunk]]
        S[i0 : i0 + len(probes)] = matcher.score(probes, galleries)
    p_index = {k: i for i, k in enumerate(p_order)}
    rows = [p_index[k] for k in p_keys]
    return S[np.ix_(rows, cols)]


def quality_files(paths):
    """Face-likeness of image files, shape (n,): the score of each image (its graph
    searched in the mirrored image) against itself; images are resampled to the first
    one's shape. In [-1, 1]; 0 for an image without Gabor structure."""
    if not paths:
        return np.zeros(0)
    for path in paths:
        if not os.path.isfile(path):
            raise EbgmError(f"no such image file: {path}")
    matcher = GraphMatcher(load_image(paths[0]).shape)
    out = np.empty(len(paths))
    for i, path in enumerate(paths):
        arr = load_image(path)
        if arr.shape != matcher.shape:
            arr = _resample(arr, matcher.shape)
        mirror = matcher.probe_features(responses(np.ascontiguousarray(arr[:, ::-1])))
        out[i] = matcher.score([mirror], [matcher.gallery_features(responses(arr))])[0, 0]
    return out


def format_matrix(S):
    return "".join(" ".join(f"{v:.9g}" for v in row) + "\n" for row in S)


def _parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Elastic Bunch Graph Matching of face images (ssgallery matcher contract).",
    )
    p.add_argument("--probe-list", help="text file, one probe image path per line")
    p.add_argument("--gallery-list", help="text file, one gallery image path per line")
    p.add_argument("--quality-list", help="text file, one image path per line: print the "
                   "quality (face-likeness) of each, one per line")
    p.add_argument("--out", help="write the |probes| x |gallery| matrix (or the qualities) "
                   "here (default stdout)")
    p.add_argument("--describe", action="store_true", help="print the matcher's JSON description")
    p.add_argument("--serve", action="store_true",
                   help="persistent mode: read one JSON request per line on stdin "
                   '({"probe_list", "gallery_list", "out"} or {"quality_list", "out"}), write '
                   'the answer to "out" and answer {"ok": true} or {"error": ...} on stdout; '
                   "exit at end of input")
    p.add_argument("--cache-dir", help="keep the Gabor responses of image files (not .npy) here "
                   "across calls, keyed by content (3.3 MB per 92x112 image); a folder that "
                   "cannot be written is one warning on stderr, and no cache")
    return p


def _keep_heap():
    """Ask glibc to keep freed large blocks instead of unmapping them: the matcher
    allocates the same big chunk arrays over and over, and page faults cost more
    than the arithmetic. No-op elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 256 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 512 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def _answer(request, out, cache_dir):
    """Answer ``request`` (probe_list + gallery_list, or quality_list); write the matrix
    (one column for qualities) to ``out`` (atomically) or stdout."""
    if request.get("quality_list"):
        S = quality_files(read_list(request["quality_list"]))[:, None]
    elif request.get("probe_list") and request.get("gallery_list"):
        S = score_files(read_list(request["probe_list"]), read_list(request["gallery_list"]),
                        cache_dir=cache_dir)
    else:
        raise EbgmError("a request needs probe_list and gallery_list, or quality_list")
    text = format_matrix(S)
    if out:
        tmp = out + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, out)
        except OSError as exc:
            raise EbgmError(f"cannot write {out}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)


def serve(stdin, stdout, cache_dir=None):
    """The persistent mode: one JSON request per input line, one JSON answer per line."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not req.get("out"):
                raise EbgmError("a request needs probe_list and gallery_list, or "
                                "quality_list, and out")
            _answer(req, req["out"], cache_dir)
            reply = {"ok": True}
        except (EbgmError, ValueError, TypeError) as exc:
            reply = {"error": " ".join(str(exc).split())}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return 0


def main(argv=None):
    """Console entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.describe:
        print(json.dumps(DESCRIPTION))
        return 0
    if args.serve:
        _keep_heap()
        try:
            return serve(sys.stdin, sys.stdout, args.cache_dir)
        except KeyboardInterrupt:
            return 130
    if not args.quality_list and (not args.probe_list or not args.gallery_list):
        _parser().error("--probe-list and --gallery-list are required (or --quality-list, "
                        "or --describe)")
    _keep_heap()
    try:
        _answer(vars(args), args.out, args.cache_dir)
    except EbgmError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
