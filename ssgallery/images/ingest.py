"""Image ingestion: scanning ``ROOT/<client>/*.{pgm,png,jpg,...}``, reading, validating
and normalising face images.

Every image becomes a float32 array (H, W) on the 8-bit grey scale [0, 255]. Sizes are
given PIL-style as ``(width, height)``; arrays are ``(height, width)``. Every problem a
user can cause (missing or empty folder, a non-image file, a truncated image, a client
with too few images, a size mismatch under ``strict``) raises
`ssgallery.errors.InputError` with a one-line message naming the file or folder;
with ``skip_bad=True`` bad files are reported through ``warn`` and skipped instead.
"""

import contextlib
import hashlib
import io
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ssgallery.errors import InputError, option
from ssgallery.formats.hdf5 import client_id_problem
from ssgallery.progress import as_progress
from ssgallery.safeio import MAX_IMAGE_BYTES, read_regular

IMAGE_EXTENSIONS = (".pgm", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
# The only Pillow decoders that ever see a file's bytes: the documented formats
# (docs/guide.md), recognised by content, whatever the file's extension. Pillow tries
# no other plugin, so an EPS/PS file never starts Ghostscript and the rarely used
# decoders (PSD, FITS, ...) never parse untrusted input. PPM also reads PBM and PGM.
DECODERS = ("PPM", "PNG", "JPEG", "BMP", "TIFF")
DEFAULT_SIZE = (92, 112)  # (width, height) of the AT&T faces
# Pillow's decompression-bomb limit: a larger image is refused, whatever its file size
# (its DecompressionBombWarning is an error). 40 Mpx: an 8K photo fits.
MAX_IMAGE_PIXELS = 40_000_000


class InputWarning(UserWarning):
    """A recoverable input problem (a resized image, a skipped bad file)."""


def default_warn(message):
    """Report ``message`` as an `InputWarning` (the CLI passes its own printer)."""
    warnings.warn(message, InputWarning, stacklevel=3)


def natural_key(name):
    """Sort key putting ``s2`` before ``s10`` (digit runs compare as numbers)."""
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok.lower())
            for tok in re.split(r"(\d+)", str(name)) if tok]


def _is_hidden(name):
    return name.startswith(".")


# --------------------------------------------------------------------------- reading
def _looks_truncated(exc):
    text = str(exc).lower()
    return isinstance(exc, EOFError) or any(
        w in text for w in ("truncat", "eof", "not enough", "premature end"))


def _exif_upright(img, image_ops):
    """Apply the EXIF orientation; a broken EXIF block leaves the image as stored."""
    try:
        return image_ops.exif_transpose(img)
    except (OSError, ValueError, KeyError, TypeError, SyntaxError):
        return img


def _register_decoders():
    """Import the plugins of `DECODERS` (nothing else): Pillow then never needs to
    import its other plugins (``Image.init``) to find one of them."""
    from PIL import (  # noqa: F401 (registers the plugins)
        BmpImagePlugin,
        JpegImagePlugin,
        PngImagePlugin,
        PpmImagePlugin,
        TiffImagePlugin,
    )


@contextlib.contextmanager
def _c_stderr(said, active=True):
    """Keep what C libraries write to file descriptor 2 during the block (libtiff
    prints its warnings and errors there, a second line beside ssgallery's one) and
    put its first line in ``said``. Nothing is captured when fd 2 cannot be
    duplicated (closed)."""
    import tempfile

    try:
        saved = os.dup(2) if active else None
    except OSError:
        saved = None
    if saved is None:
        yield
        return
    with tempfile.TemporaryFile() as sink:
        try:
            sys.stderr.flush()
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read(4096).decode("utf-8", "replace").strip()
            said.extend(line for line in text.splitlines()[:1] if line)


@contextlib.contextmanager
def _quiet():
    """Silence PIL's chatter (corrupt EXIF...) but make a decompression bomb an error."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        yield


def _too_large(path, pixels=None):
    size = f" ({pixels} pixels)" if pixels else ""
    return InputError(f"image too large{size}: at most {MAX_IMAGE_PIXELS} pixels", path=path)


def _decode(data, path):
    """Bytes of an image file -> float32 (H, W) grey array on [0, 255]."""
    from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

    ImageFile.LOAD_TRUNCATED_IMAGES = False  # a truncated file must fail, not be padded
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    _register_decoders()
    try:
        with _quiet():
            img = Image.open(io.BytesIO(data), formats=DECODERS)
    except UnidentifiedImageError:
        raise InputError("not an image in a supported format (PGM/PPM, PNG, JPEG, BMP, "
                         "TIFF)", path=path) from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _too_large(path) from None
    except (OSError, ValueError, SyntaxError, EOFError, TypeError, KeyError,
            IndexError) as exc:
        if _looks_truncated(exc):
            raise InputError("truncated image", path=path) from None
        raise InputError(f"not an image ({exc})", path=path) from None
    if img.width * img.height > MAX_IMAGE_PIXELS:
        raise _too_large(path, img.width * img.height)
    said = []
    try:
        with _quiet(), _c_stderr(said, img.format == "TIFF"):
            img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _too_large(path) from None
    except (OSError, ValueError, SyntaxError, EOFError, TypeError, KeyError, IndexError,
            MemoryError) as exc:
        if _looks_truncated(exc):
            raise InputError("truncated image", path=path) from None
        why = f"; libtiff: {said[0]}" if said else ""
        raise InputError(f"corrupt image ({exc}{why})", path=path) from None
    img = _exif_upright(img, ImageOps)
    if img.width < 1 or img.height < 1:
        raise InputError("empty image (0 pixels)", path=path)
    if img.mode == "F" and not np.isfinite(np.asarray(img)).all():  # float TIFF or PFM
        raise InputError("image has non-finite pixels (NaN or infinity)", path=path)
    try:
        return _grey(img)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise InputError(f"unsupported image mode {img.mode} ({exc})", path=path) from None


def _grey(img):
    """A loaded PIL image -> float32 (H, W) on [0, 255]."""
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        arr = np.asarray(img, dtype=np.float32) * (255.0 / 65535.0)
    elif mode == "I":
        arr = np.asarray(img, dtype=np.float64)
        top = 65535.0 if arr.max(initial=0) > 255 else 255.0
        arr = (np.clip(arr, 0, top) * (255.0 / top)).astype(np.float32)
    elif mode == "F":
        arr = np.clip(np.asarray(img, dtype=np.float32), 0, 255)
    else:
        arr = np.asarray(img.convert("L"), dtype=np.float32)
    return np.ascontiguousarray(arr, dtype=np.float32)


def _resize(arr, size):
    """Bilinear resize of a float (H, W) array to ``size = (width, height)``."""
    from PIL import Image

    out = Image.fromarray(np.asarray(arr, dtype=np.float32), mode="F").resize(
        tuple(int(s) for s in size), Image.BILINEAR)
    return np.clip(np.asarray(out, dtype=np.float32), 0, 255)


def _read_file(path):
    """The bytes of an image file: a regular file of at most 64 MiB
    (`ssgallery.safeio.MAX_IMAGE_BYTES`)."""
    return read_regular(path, "image", MAX_IMAGE_BYTES, missing="no such file")


def _fmt_size(size):
    return f"{size[0]}x{size[1]}"


def read_image(path, size=None, strict=False):
    """Read one image as grey float32 on [0, 255].

    Parameters
    ----------
    path : str or Path
    size : (width, height) or None
        Common size; an image of another size is resized (bilinear) unless ``strict``.
    strict : bool
        Refuse an image whose size differs from ``size``.

    Returns
    -------
    image : ndarray, shape (H, W), float32

    Raises
    ------
    InputError
        Missing file, not an image, truncated or corrupt image, size mismatch (strict).
    """
    arr = _decode(_read_file(path), path)
    return _fit_size(arr, size, strict, path)


def _fit_size(arr, size, strict, path):
    if size is None:
        return arr
    have = (arr.shape[1], arr.shape[0])
    if have == tuple(size):
        return arr
    if strict:
        raise InputError(f"image is {_fmt_size(have)}, expected {_fmt_size(size)} "
                         "(strict size checking)", path=path)
    return _resize(arr, size)


def _check_size(size):
    if size is None:
        return None
    try:
        w, h = (int(s) for s in size)
    except (TypeError, ValueError):
        raise InputError(f"image size must be (width, height), got {size!r}") from None
    if w < 1 or h < 1:
        raise InputError(f"image size must be positive, got {_fmt_size((w, h))}")
    if w * h > MAX_IMAGE_PIXELS:
        raise InputError(f"image size {_fmt_size((w, h))} is more than {MAX_IMAGE_PIXELS} "
                         "pixels")
    return (w, h)


# --------------------------------------------------------------------------- scanning
def scan_faces(root, extensions=IMAGE_EXTENSIONS, min_images=1, skip_bad=False,
               clients=None, warn=default_warn):
    """List the clients and their image files under ``root``.

    ``root`` holds one folder per client (the folder name is the client id) with that
    client's images. Hidden files and folders are skipped, as are plain files directly
    in ``root`` (READMEs, manifests). Clients and files are sorted naturally (s2 < s10).

    Parameters
    ----------
    root : str or Path
    extensions : tuple of str
        Lower-case image extensions (matched case-insensitively).
    min_images : int
        A client folder with fewer images is an error.
    skip_bad : bool
        Warn and skip non-image files instead of failing.
    clients : iterable of str or None
        Only these client folders (each must exist).
    warn : callable(str) or None
        Receives each warning; None: `default_warn`.

    Returns
    -------
    list of (client_id, [Path, ...])
    """
    root = Path(root)
    warn = default_warn if warn is None else warn
    if not root.exists():
        raise InputError("face folder does not exist", path=root)
    if not root.is_dir():
        raise InputError("not a folder (expected ROOT/<client>/<images>)", path=root)
    exts = tuple(e.lower() for e in extensions)
    folders = sorted((p for p in root.iterdir() if p.is_dir() and not _is_hidden(p.name)),
                     key=lambda p: natural_key(p.name))
    for folder in folders:  # folder names are client ids: check them before any work
        problem = client_id_problem(folder.name)
        if problem:
            raise InputError(f"cannot enrol this folder: {problem}", path=folder)
    if clients is not None:
        wanted = [str(c) for c in clients]
        by_name = {p.name: p for p in folders}
        missing = [c for c in wanted if c not in by_name]
        if missing:
            raise InputError(f"no client folder {', '.join(missing)}", path=root)
        folders = [by_name[c] for c in sorted(set(wanted), key=natural_key)]
    if not folders:
        loose = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in exts]
        hint = f"; found {len(loose)} image(s) directly in it" if loose else ""
        raise InputError(f"no client folders (expected ROOT/<client>/<images>){hint}",
                         path=root)
    out = []
    for folder in folders:
        paths = []
        for entry in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
            if _is_hidden(entry.name):
                continue
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError("file name is not valid UTF-8; rename it", path=entry) \
                    from None
            if entry.is_dir():
                warn(f"{entry}: ignoring sub-folder inside a client folder")
                continue
            if entry.suffix.lower() in exts:
                paths.append(entry)
                continue
            msg = f"not an image file (extension '{entry.suffix or '(none)'}')"
            if not skip_bad:
                raise InputError(f"{msg}; use {option('skip_bad')} to skip it", path=entry)
            warn(f"{entry}: {msg}; skipped")
        if len(paths) < min_images:
            raise InputError(f"client folder has {len(paths)} image(s), at least "
                             f"{min_images} needed", path=folder)
        out.append((folder.name, paths))
    return out


# --------------------------------------------------------------------------- loading
@dataclass
class FaceSet:
    """Loaded face images with their provenance.

    Attributes
    ----------
    images : ndarray, shape (n, H, W), float32 on [0, 255]
    labels : ndarray, shape (n,), str (client ids)
    paths : list of str, paths relative to the root (POSIX separators)
    sha256 : list of str, hex digests of the files' bytes
    root : str
    """

    images: np.ndarray
    labels: np.ndarray
    paths: list = field(default_factory=list)
    sha256: list = field(default_factory=list)
    root: str = ""

    def __len__(self):
        return len(self.labels)

    @property
    def clients(self):
        """Client ids in natural order."""
        return sorted(set(self.labels.tolist()), key=natural_key)

    @property
    def size(self):
        """(width, height) of the images."""
        return (self.images.shape[2], self.images.shape[1])


def load_faces(root, size=DEFAULT_SIZE, strict=False, skip_bad=False, min_images=1,
               clients=None, warn=default_warn, extensions=IMAGE_EXTENSIONS, progress=None):
    """Scan and read a face folder ``ROOT/<client>/<images>``.

    Parameters
    ----------
    root : str or Path
    size : (width, height) or None
        Common size; ``None`` takes the first image's size. Images of another size are
        resized (bilinear, one summary warning) or refused when ``strict``.
    strict : bool
    skip_bad : bool
        Warn and skip non-image, truncated or corrupt files instead of failing.
    min_images : int
        Minimum number of (readable) images per client.
    clients : iterable of str or None
        Only these clients.
    warn : callable(str) or None
        Receives each warning; None: `default_warn`.
    progress : ssgallery.progress.Progress, optional
        One step per file read (phase "reading images").

    Returns
    -------
    FaceSet
    """
    root = Path(root)
    progress = as_progress(progress)
    size = _check_size(size)
    warn = default_warn if warn is None else warn
    listing = scan_faces(root, extensions=extensions, min_images=min_images,
                         skip_bad=skip_bad, clients=clients, warn=warn)
    images, labels, rel, digests = None, [], [], []  # images: filled in place, no list
    resized = []
    total = sum(len(paths) for _, paths in listing)
    progress.start("reading images", total, "images")
    for client, paths in listing:
        kept = 0
        for path in paths:
            progress.advance()
            data = _read_file(path)
            arr = _decode_or_skip(data, path, skip_bad, warn)
            if arr is None:
                continue
            arr, size = _conform(arr, size, strict, path, resized)
            if images is None:
                images = np.empty((total,) + arr.shape, dtype=np.float32)
            images[len(labels)] = arr
            labels.append(client)
            rel.append(path.relative_to(root).as_posix())
            digests.append(hashlib.sha256(data).hexdigest())
            kept += 1
        if kept < min_images:
            raise InputError(f"client folder has {kept} readable image(s), at least "
                             f"{min_images} needed", path=root / client)
    progress.end()
    if resized:
        first, have = resized[0]
        warn(f"resized {len(resized)} image(s) to {_fmt_size(size)} (first: {first} was "
             f"{_fmt_size(have)}); use {option('strict')} to refuse them")
    return FaceSet(images=images[:len(labels)],
                   labels=np.array(labels, dtype=str), paths=rel, sha256=digests,
                   root=os.fspath(root))


def _decode_or_skip(data, path, skip_bad, warn):
    """The image in ``data``; None (with a warning) for a bad file with ``skip_bad``."""
    try:
        return _decode(data, path)
    except InputError as exc:
        if not skip_bad:
            raise InputError(f"{exc}; use {option('skip_bad')} to skip it") from None
        warn(f"{exc}; skipped")
        return None


def file_rows(root, clients, known, skip_bad=False, warn=default_warn,
              extensions=IMAGE_EXTENSIONS, progress=None):
    """The (relative path, sha256) of every image file of ``clients`` under ``root``,
    as `load_faces` would list them, without keeping any pixel.

    A file whose pair is in ``known[client]`` is hashed only; any other file is also
    decoded, so that a bad one is skipped (``skip_bad``) or refused exactly as
    `load_faces` would.

    ``progress`` (`ssgallery.progress.Progress`): one step per file (phase "checking
    enrolled images").

    Returns
    -------
    dict
        client id -> set of (relative path, sha256).
    """
    root = Path(root)
    warn = default_warn if warn is None else warn
    progress = as_progress(progress)
    listing = scan_faces(root, extensions=extensions, min_images=0, skip_bad=skip_bad,
                         clients=clients, warn=warn)
    rows = {}
    progress.start("checking enrolled images", sum(len(p) for _, p in listing), "images")
    for client, paths in listing:
        mine = rows.setdefault(client, set())
        for path in paths:
            progress.advance()
            data = _read_file(path)
            row = (path.relative_to(root).as_posix(), hashlib.sha256(data).hexdigest())
            if row in known.get(client, ()) or \
                    _decode_or_skip(data, path, skip_bad, warn) is not None:
                mine.add(row)
    progress.end()
    return rows


def _conform(arr, size, strict, path, resized):
    """Bring ``arr`` to ``size`` (None: adopt this image's size), noting a resize in
    ``resized`` as (path, (w, h) before); returns (image, size)."""
    have = (arr.shape[1], arr.shape[0])
    if size is None:
        return arr, have
    if have != size:
        arr = _fit_size(arr, size, strict, path)
        resized.append((path, have))
    return arr, size


def load_image_list(paths, size=DEFAULT_SIZE, strict=False, warn=default_warn,
                    return_sizes=False, failed=None, progress=None):
    """Read probe images into one array.

    Parameters
    ----------
    paths : iterable of str or Path
    size : (width, height) or None
        Common size (the gallery's); ``None`` takes the first image's size.
    strict : bool
        Refuse images of another size instead of resizing them.
    warn : callable(str) or None
        Receives each warning; None: `default_warn`.
    return_sizes : bool
        Also return each file's own size before any resize.
    failed : list, optional
        Receives ``(index, message)`` for each file that cannot be read (missing, not an
        image, too large, another size with ``strict``), which is then left out of the
        result instead of raising.
    progress : ssgallery.progress.Progress, optional
        One step per file (phase "reading probes").

    Returns
    -------
    images : ndarray, shape (n, H, W), float32 on [0, 255]
        n = the files read (all of them unless some ``failed``).
    sizes : ndarray, shape (n, 2), int, (width, height) as read; only with ``return_sizes``
    """
    size = _check_size(size)
    warn = default_warn if warn is None else warn
    out, resized, sizes = [], [], []
    progress = as_progress(progress)
    paths = list(paths)
    progress.start("reading probes", len(paths), "images")
    for i, path in enumerate(paths):
        progress.advance()
        try:
            arr = _decode(_read_file(path), path)
            have = (arr.shape[1], arr.shape[0])
            arr, size = _conform(arr, size, strict, path, resized)
        except InputError as exc:
            if failed is None:
                raise
            failed.append((i, str(exc)))
            continue
        sizes.append(have)
        out.append(arr)
    progress.end()
    if not out and failed:
        w, h = size if size is not None else (0, 0)
        empty = np.zeros((0, h, w), dtype=np.float32)
        return (empty, np.zeros((0, 2), dtype=np.int64)) if return_sizes else empty
    if not out:
        raise InputError("no probe images given")
    if resized:
        first, have = resized[0]
        warn(f"resized {len(resized)} probe image(s) to {_fmt_size(size)} (first: {first} "
             f"was {_fmt_size(have)})")
    images = np.stack(out).astype(np.float32, copy=False)
    return (images, np.asarray(sizes, dtype=np.int64)) if return_sizes else images
