"""The values an enrollment store reader refuses (`ssgallery.formats.store.load_store`,
after the digest and the layout: the gallery's twin is `ssgallery.formats.gallery.checks`):
array lengths, the cached features' shape, client ids, non-finite features, image digests
that are not SHA-256 hex, pixels that are not finite grey levels on [0, 255], and
subjects listed twice or without an image (`store_problem`); and, as they are read, the
string datasets (`string_list`) and the pixels' type (`check_pixels`)."""

import numpy as np

from ssgallery.checks import shown
from ssgallery.formats.hdf5 import client_id_problem


def store_problem(store, strs):
    """Why a store read from a file cannot be used, or None.

    Parameters
    ----------
    store : EnrollmentStore
        As `ssgallery.formats.store.load_store` built it: images an array or a
        `ssgallery.formats.store_rows.StoreImages` (checked chunk by chunk unless 8-bit).
    strs : dict of str to list of str
        The string datasets as read (labels, paths, sha256, roots, clients, background).

    Returns
    -------
    str or None
        The problem, in the words of ``corrupt ssgallery enrollment store: <problem>``;
        the first found in this order: array lengths, features' shape, a client id,
        NaN or infinite features, a sha256 that is not a hex digest, NaN, infinite or
        out-of-range pixels (on [0, 255]), the client and background lists.
    """
    n = len(store.images)
    if store.images.ndim != 3 or any(len(v) != n for v in strs.values()
                                     if v is not strs["clients"] and v is not strs["background"]):
        return "inconsistent array lengths"
    if store.features is not None and (store.features.ndim != 2 or len(store.features) != n):
        return f"features {store.features.shape} for {n} images"
    bad = next((c for c in store.clients + store.background if client_id_problem(c)), None)
    if bad is not None:
        return f"client id {bad!r}: {client_id_problem(bad)}"
    if store.features is not None and not np.isfinite(store.features).all():
        return "NaN or infinite pixels or features"
    return (_sha256_problem(strs["sha256"]) or _pixels_problem(store.images)
            or _subjects_problem(store) or _stale_problem(store))


def _sha256_problem(digests):
    """Why the ``sha256`` list is not what enroll writes (None when it is): each one a
    SHA-256 hex digest, 64 lowercase hexadecimal digits (``enroll --add`` compares them
    with the files' to tell an enrolled image from a new one; the fingerprint hashes
    them)."""
    for row, digest in enumerate(digests):
        if len(digest) != 64 or digest.strip("0123456789abcdef"):
            return (f"sha256 of image {row} is not 64 lowercase hex digits, found "
                    f"{shown(digest)}")
    return None


def _stale_problem(store):
    """Why the store's ``stale_clients`` is not what ``enroll --add`` records (None when
    it is): a list of distinct subjects of the store (clients or background)."""
    stale, listed = store.stale_clients, set(store.clients + store.background)
    if not isinstance(stale, list) or not all(isinstance(c, str) and c in listed
                                              for c in stale) or len(set(stale)) < len(stale):
        return (f"stale_clients must be a list of the store's subjects, found "
                f"{shown(stale, typed=True)}")
    return None


def _subjects_problem(store):
    """Why the store's client and background lists disagree with its images (None when
    they agree): each subject listed once, in one list, with at least one image."""
    listed = store.clients + store.background
    seen, twice = set(), None
    for name in listed:
        if name in seen:
            twice = name
            break
        seen.add(name)
    if twice is not None:
        both = twice in store.clients and twice in store.background
        return f"{twice!r} is listed {'as client and background' if both else 'twice'}"
    have = set(np.unique(store.labels).tolist())
    empty = next((name for name in listed if name not in have), None)
    return None if empty is None else f"{empty!r} is listed but has no image"


def _pixels_problem(images):
    """Why the pixels are not what enroll stores (None when they are): every one a
    finite number on the grey scale [0, 255] (`ssgallery.images.decode` clips to it).
    A lazily read store is checked chunk by chunk unless its pixels are integers
    (`check_pixels` checked those)."""
    if isinstance(images, np.ndarray):
        blocks = [images]
    elif images.integer:  # a StoreImages of integers: checked as it was opened
        return None
    else:
        blocks = (c for _, c in images.chunks())
    for block in blocks:
        if not np.isfinite(block).all():
            return "NaN or infinite pixels or features"
        if block.size and (block.min() < 0 or block.max() > 255):
            return _outside(block)
    return None


def _outside(block):
    """``pixels outside [0, 255] (found V)``, V the first such value of ``block``."""
    flat = np.asarray(block).ravel()
    value = flat[np.flatnonzero((flat < 0) | (flat > 255))[0]]
    return f"pixels outside [0, 255] (found {float(value):g})"


def string_list(f, name):
    """The 1-D string dataset ``name`` of the open store, as a list of str.

    Parameters
    ----------
    f : h5py.File
        The open store.
    name : str
        ``labels``, ``paths``, ``sha256``, ``roots``, ``clients`` or ``background``.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        ``/<name> is not a list of strings`` (`ssgallery.formats.store.load_store` refuses
        the store with it).
    """
    obj = f[name]
    if getattr(obj, "ndim", None) != 1 or obj.dtype.kind not in "OSU":
        raise ValueError(f"/{name} is not a list of strings")
    return [str(s) for s in obj.asstr()[()]]


def check_pixels(f):
    """Refuse ``/images`` of values no writer gives: pixels are stored as unsigned
    integers or floats (`ssgallery.formats.store.EnrollmentStore.save`), never complex
    numbers (read as their real part, numpy's ComplexWarning quoting a line of
    `ssgallery.formats.store`), booleans or strings; integers of a type wider than
    uint8 are read here, a block at a time, and must lie on [0, 255] (`store_problem`
    checks float pixels).

    Parameters
    ----------
    f : h5py.File
        The open store.

    Raises
    ------
    ValueError
        ``/images holds <dtype> values, not pixels`` or ``pixels outside [0, 255] (found
        V)`` (`ssgallery.formats.store.load_store` refuses the store with it).
    """
    data = f["images"]
    dtype = getattr(data, "dtype", None)
    if dtype is None or dtype.kind not in "uif":
        raise ValueError(f"/images holds {dtype if dtype is not None else 'no'} values, "
                         "not pixels")
    if dtype.kind in "iu" and dtype != np.uint8 and data.ndim == 3:  # no writer gives them
        for start in range(0, len(data), 1024):
            block = data[start:start + 1024]
            if block.size and (block.min() < 0 or block.max() > 255):
                raise ValueError(_outside(block))
