"""Reading one image file: its bytes (bounded, `ssgallery.safeio`), the decoders allowed to
see them (`DECODERS`, the decompression-bomb limit `MAX_IMAGE_PIXELS`), the decoded
float32 (H, W) grey array on [0, 255], and its size (`fit_size`, `check_size`).
`ssgallery.images.ingest` reads folders and lists of them; it re-exports
`read_image`, `DECODERS` and `MAX_IMAGE_PIXELS`.

Every problem a file can have (missing, not an image, truncated, corrupt, too large,
non-finite pixels, another size under ``strict``) raises `ssgallery.errors.InputError`
with a one-line message naming the file.
"""

import contextlib
import io
import os
import sys
import warnings

import numpy as np

from ssgallery.errors import InputError
from ssgallery.safeio import MAX_IMAGE_BYTES, read_regular

# The only Pillow decoders that ever see a file's bytes: the documented formats
# (docs/guide.md), recognised by content, whatever the file's extension. Pillow tries
# no other plugin, so an EPS/PS file never starts Ghostscript and the rarely used
# decoders (PSD, FITS, ...) never parse untrusted input. PPM also reads PBM and PGM.
DECODERS = ("PPM", "PNG", "JPEG", "BMP", "TIFF")
# Pillow's decompression-bomb limit: a larger image is refused, whatever its file size
# (its DecompressionBombWarning is an error). 40 Mpx: an 8K photo fits.
MAX_IMAGE_PIXELS = 40_000_000


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


def decode_image(data, path):
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


def read_file_bytes(path):
    """The bytes of an image file: a regular file of at most 64 MiB
    (`ssgallery.safeio.MAX_IMAGE_BYTES`)."""
    return read_regular(path, "image", MAX_IMAGE_BYTES, missing="no such file")


def fmt_size(size):
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
    arr = decode_image(read_file_bytes(path), path)
    return fit_size(arr, size, strict, path)


def fit_size(arr, size, strict, path):
    if size is None:
        return arr
    have = (arr.shape[1], arr.shape[0])
    if have == tuple(size):
        return arr
    if strict:
        raise InputError(f"image is {fmt_size(have)}, expected {fmt_size(size)} "
                         "(strict size checking)", path=path)
    return _resize(arr, size)


def check_size(size):
    if size is None:
        return None
    try:
        w, h = (int(s) for s in size)
    except (TypeError, ValueError):
        raise InputError(f"image size must be (width, height), got {size!r}") from None
    if w < 1 or h < 1:
        raise InputError(f"image size must be positive, got {fmt_size((w, h))}")
    if w * h > MAX_IMAGE_PIXELS:
        raise InputError(f"image size {fmt_size((w, h))} is more than {MAX_IMAGE_PIXELS} "
                         "pixels")
    return (w, h)
