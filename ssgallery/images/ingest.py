"""Image ingestion: reading, validating and normalising the face images of a face folder
``ROOT/<client>/*.{pgm,png,jpg,...}`` (scanned by `ssgallery.images.scan`, whose names
this module re-exports) or of a probe list (one file's decoding:
`ssgallery.images.decode`).

Every image becomes a float32 array (H, W) on the 8-bit grey scale [0, 255]. Sizes are
given PIL-style as ``(width, height)``; arrays are ``(height, width)``. Every problem a
user can cause (missing or empty folder, a non-image file, a truncated image, a client
with too few images, a size mismatch under ``strict``) raises
`ssgallery.errors.InputError` with a one-line message naming the file or folder;
with ``skip_bad=True`` bad files are reported through ``warn`` and skipped instead.
"""

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ssgallery.errors import InputError
from ssgallery.images.decode import (  # noqa: F401  (DECODERS, MAX_IMAGE_PIXELS, read_image)
    DECODERS,
    MAX_IMAGE_PIXELS,
    check_size,
    decode_image,
    fit_size,
    fmt_size,
    read_file_bytes,
    read_image,
)
from ssgallery.images.scan import (  # noqa: F401  (public here too)
    IMAGE_EXTENSIONS,
    InputWarning,
    default_warn,
    natural_key,
    scan_faces,
    too_few_images,
    use_option,
)
from ssgallery.progress import as_progress

DEFAULT_SIZE = (92, 112)  # (width, height) of the AT&T faces
MIN_SCALE = 0.25  # a probe smaller than a quarter of the gallery's width or height: FTA


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
               clients=None, warn=default_warn, extensions=IMAGE_EXTENSIONS, progress=None,
               min_images_option=False, input_options=True):
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
    min_images_option, input_options : bool
        See `scan_faces`.
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
    size = check_size(size)
    warn = default_warn if warn is None else warn
    listing = scan_faces(root, extensions=extensions, min_images=min_images,
                         skip_bad=skip_bad, clients=clients, warn=warn,
                         min_images_option=min_images_option, input_options=input_options)
    images, labels, rel, digests = None, [], [], []  # images: filled in place, no list
    resized = []
    total = sum(len(paths) for _, paths in listing)
    progress.start("reading images", total, "images")
    for client, paths in listing:
        kept = 0
        for path in paths:
            progress.advance()
            data = read_file_bytes(path)
            arr = _decode_or_skip(data, path, skip_bad, warn, input_options)
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
            raise too_few_images(root / client, kept, min_images, "readable ",
                                 min_images_option)
    progress.end()
    if resized:
        first, have = resized[0]
        warn(f"resized {len(resized)} image(s) to {fmt_size(size)} (first: {first} was "
             f"{fmt_size(have)})" + use_option("strict", "to refuse them", input_options))
    return FaceSet(images=images[:len(labels)],
                   labels=np.array(labels, dtype=str), paths=rel, sha256=digests,
                   root=os.fspath(root))


def _decode_or_skip(data, path, skip_bad, warn, input_options=True):
    """The image in ``data``; None (with a warning) for a bad file with ``skip_bad``
    (``input_options``: see `scan_faces`)."""
    try:
        return decode_image(data, path)
    except InputError as exc:
        if not skip_bad:
            raise InputError(f"{exc}" + use_option("skip_bad", "to skip it", input_options)) \
                from None
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
            data = read_file_bytes(path)
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
        arr = fit_size(arr, size, strict, path)
        resized.append((path, have))
    return arr, size


def too_small(have, size):
    """Why a probe of ``have`` (width, height) holds no face for a gallery of ``size``:
    ``"too small to hold a face (9x11, the gallery's faces are 92x112)"`` when it is
    smaller than `MIN_SCALE` of it in a dimension (enlarged more than 4 times: no face
    detail left; a failure to acquire, `ssgallery.app.verify.failures_to_acquire`);
    else None."""
    (sw, sh), (w, h) = have, size
    if sw < MIN_SCALE * w or sh < MIN_SCALE * h:
        return f"too small to hold a face ({sw}x{sh}, the gallery's faces are {w}x{h})"
    return None


def resize_warning(resized, size):
    """The one warning for the probes ``resized`` (``(path, (w, h) before)``, in order)
    to ``size``: ``"resized 300 probe image(s) to 92x112 (first: a.png was 46x56)"``;
    None when there is none."""
    if not resized:
        return None
    first, have = resized[0]
    return (f"resized {len(resized)} probe image(s) to {fmt_size(size)} (first: {first} "
            f"was {fmt_size(have)})")


def load_image_list(paths, size=DEFAULT_SIZE, strict=False, warn=default_warn,
                    return_sizes=False, failed=None, progress=None, resized=None):
    """Read probe images into one array.

    Parameters
    ----------
    paths : iterable of str or Path
    size : (width, height) or None
        Common size (the gallery's); ``None`` takes the first image's size.
    strict : bool
        Refuse images of another size instead of resizing them.
    warn : callable(str) or None
        Receives each warning (the images resized, except those `too_small` to hold a
        face: failures to acquire, which verify names); None: `default_warn`.
    return_sizes : bool
        Also return each file's own size before any resize.
    failed : list, optional
        Receives ``(index, message)`` for each file that cannot be read (missing, not an
        image, too large, another size with ``strict``), which is then left out of the
        result instead of raising.
    progress : ssgallery.progress.Progress, optional
        One step per file (phase "reading probes").
    resized : list, optional
        Receives ``(path, (w, h) before)`` of each file resized (not `too_small`), which
        are then not warned of here: the caller of several batches warns once
        (`resize_warning`).

    Returns
    -------
    images : ndarray, shape (n, H, W), float32 on [0, 255]
        n = the files read (all of them unless some ``failed``).
    sizes : ndarray, shape (n, 2), int, (width, height) as read; only with ``return_sizes``
    """
    out, sizes, shown, size = _read_probes(list(paths), check_size(size), strict, failed,
                                           as_progress(progress))
    if not out and failed:
        w, h = size if size is not None else (0, 0)
        empty = np.zeros((0, h, w), dtype=np.float32)
        return (empty, np.zeros((0, 2), dtype=np.int64)) if return_sizes else empty
    if not out:
        raise InputError("no probe images given")
    shown = [(path, have) for path, have in shown if too_small(have, size) is None]
    if resized is not None:  # not those too small to hold a face: verify says so, once
        resized.extend(shown)
    elif shown:
        (default_warn if warn is None else warn)(resize_warning(shown, size))
    images = np.stack(out).astype(np.float32, copy=False)
    return (images, np.asarray(sizes, dtype=np.int64)) if return_sizes else images


def _read_probes(paths, size, strict, failed, progress):
    """`load_image_list`'s reading: (images, their sizes as read, the resized ones as
    ``(path, (w, h) before)``, the common size)."""
    out, sizes, resized = [], [], []
    progress.start("reading probes", len(paths), "images")
    for i, path in enumerate(paths):
        progress.advance()
        try:
            arr = decode_image(read_file_bytes(path), path)
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
    return out, sizes, resized, size
