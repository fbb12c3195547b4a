"""Content digests, link checks and HMAC signatures of ssgallery's HDF5 files.

Both file kinds (store and gallery, format version 2) carry SHA-256 digests of their
content, computed from what a reader gets back from HDF5 (so writing and checking
share one code path: the writer computes them by reading the written file back):

* `node_digest` of a group: its attributes (sorted by name, each tagged with its
  type) and, recursively, each member's name and digest; of a dataset: its dtype,
  shape and bytes. Only hard links to plain (non-virtual, internal) datasets and groups
  are read: a soft link, an external link, a virtual dataset or a dataset stored in an
  external raw file is refused (`check_node`), so a file never makes ssgallery
  read another file.
* the root ``digest`` attribute: SHA-256 over the canonical root attributes (every
  root attribute but ``digest`` and ``hmac``) and the bytes of the sections the file
  format names (the gallery's ``/client_index``); other sections' digests are root
  attributes (``section_digests``), so they are covered without being read.
* an optional root ``hmac``: HMAC-SHA256 of the ``digest`` (hex, ASCII) with the
  host's key (`load_key`). With a key configured, readers refuse unsigned or
  wrongly signed files.

Standard library, numpy and h5py only (on the ``verify`` path).
"""

import hashlib
import hmac as _hmac
import json

import numpy as np

from ssgallery.errors import FormatError
from ssgallery.formats.attr_reads import attr_limit, bounded_attrs
from ssgallery.formats.keys import (  # noqa: F401  (public here too)
    KEY_ENV,
    MAX_KEY_BYTES,
    MIN_KEY_BYTES,
    PRIVACY_KEY_ENV,
    FileKey,
    KeyNeeded,
    checked_key,
    key_problem,
    key_source,
    load_key,
    reads_key_files,
)

ROOT_EXCLUDED = ("digest", "hmac")
SLICE_BYTES = 16 * 1024 * 1024  # a large dataset is hashed a slice of rows at a time


# ----------------------------------------------------------------------------- canonical bytes

def _update_value(h, value):
    """Feed one attribute value into ``h``, tagged with its type."""
    if isinstance(value, bytes):
        h.update(b"b%d:" % len(value) + value)
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        h.update(b"s%d:" % len(data) + data)
    else:
        _update_array(h, np.asarray(value))


def _little_endian(arr):
    arr = np.ascontiguousarray(arr)
    return arr.astype(arr.dtype.newbyteorder("<")) if arr.dtype.byteorder == ">" else arr


def _update_array(h, arr):
    if arr.dtype.kind == "O":  # variable-length strings (store datasets)
        h.update(b"o" + repr(arr.shape).encode() + b":")
        for item in arr.ravel():
            _update_value(h, item)
        return
    arr = _little_endian(arr)
    h.update(f"a{arr.dtype.str}{arr.shape}:".encode())
    h.update(arr.reshape(-1).view(np.uint8))


def _update_dataset(h, dataset):
    """`_update_array` of the dataset's content, read a slice of rows at a time: the
    same bytes, without the whole array (and a copy of it) in memory at once."""
    row_bytes = dataset.dtype.itemsize * int(np.prod(dataset.shape[1:], dtype=np.int64))
    if dataset.dtype.kind == "O" or dataset.ndim == 0 or dataset.nbytes <= SLICE_BYTES \
            or row_bytes == 0:
        _update_array(h, dataset[()])
        return
    dtype = dataset.dtype.newbyteorder("<") if dataset.dtype.byteorder == ">" else dataset.dtype
    h.update(f"a{dtype.str}{dataset.shape}:".encode())
    step = max(1, SLICE_BYTES // row_bytes)
    for start in range(0, dataset.shape[0], step):
        h.update(_little_endian(dataset[start:start + step]).reshape(-1).view(np.uint8))


def attrs_digest(attrs, exclude=()):
    """SHA-256 (hex) over the attributes ``attrs`` (a mapping), sorted by name."""
    h = hashlib.sha256(b"attrs\0")
    for name in sorted(attrs):
        if name in exclude:
            continue
        key = name.encode("utf-8", "surrogatepass")
        h.update(b"k%d:" % len(key) + key)
        _update_value(h, attrs[name])
    return h.hexdigest()


def array_digest(arr):
    """SHA-256 (hex) of one array's dtype, shape and bytes."""
    h = hashlib.sha256(b"array\0")
    _update_array(h, np.asarray(arr))
    return h.hexdigest()


# ----------------------------------------------------------------------------- links

def check_node(parent, name, path=None):
    """``parent[name]`` after checking it is a hard link to an internal object.

    Raises
    ------
    FormatError
        Missing member, soft or external link, virtual dataset, external raw storage.
    """
    import h5py

    where = f"{parent.name.rstrip('/')}/{name}"
    link = parent.get(name, getlink=True)
    if link is None:
        raise FormatError(f"corrupt file: {where} is missing", path=path)
    if not isinstance(link, h5py.HardLink):
        kind = "an external link" if isinstance(link, h5py.ExternalLink) else "a soft link"
        raise FormatError(f"refused: {where} is {kind} (links are never followed)", path=path)
    node = parent[name]
    if isinstance(node, h5py.Dataset):
        if node.is_virtual or node.external:
            raise FormatError(f"refused: {where} is a virtual or externally stored dataset",
                              path=path)
        _check_extent(node, where, path)
    return node


EXTENT_FLOOR = 1 << 20  # bytes: a dataset this small is never questioned
MAX_INFLATION = 1100  # deflate's best ratio is about 1032:1; unfiltered data is 1:1


def _check_extent(dataset, where, path):
    """Refuse a dataset whose extent is larger than the bytes the file stores for it
    could hold (a sparse chunked dataset: its shape claims gigabytes the file never
    wrote, which reading or hashing would make up as fill values), before anything
    is read: its metadata only."""
    logical = int(dataset.size) * dataset.dtype.itemsize
    if logical <= EXTENT_FLOOR:
        return
    stored = dataset.id.get_storage_size()
    # scaleoffset: None without the scale-offset filter, else its setting (0: automatic)
    filtered = dataset.compression is not None or dataset.scaleoffset is not None
    if logical > stored * (MAX_INFLATION if filtered else 1):
        raise FormatError(f"refused: {where} claims {logical} bytes, the file stores "
                          f"{stored} for it (a sparse or inflated dataset)", path=path)


def node_digest(node, path=None, exclude=(), limit=None):
    """SHA-256 (hex) of a group (attributes + members, recursively) or a dataset, every
    attribute read bounded (`ssgallery.formats.attr_reads.bounded_attrs`; ``limit``: its
    `~ssgallery.formats.attr_reads.attr_limit`, found when None).

    Returns
    -------
    digest : str
    """
    import h5py

    limit = attr_limit(node.file) if limit is None else limit
    h = hashlib.sha256()
    if isinstance(node, h5py.Dataset):
        h.update(b"dataset\0" + attrs_digest(bounded_attrs(node, path, limit)).encode())
        _update_dataset(h, node)
        return h.hexdigest()
    h.update(b"group\0" + attrs_digest(bounded_attrs(node, path, limit), exclude).encode())
    for name in sorted(node):
        child = check_node(node, name, path)
        key = name.encode("utf-8", "surrogatepass")
        h.update(b"m%d:" % len(key) + key + node_digest(child, path, limit=limit).encode())
    return h.hexdigest()


def read_group(group, path=None, limit=None):
    """Datasets (name -> array) and attributes (name -> value) of a flat group, with the
    group's digest: one pass, every link checked, every attribute read bounded
    (`ssgallery.formats.attr_reads.bounded_attrs`; ``limit``: its
    `~ssgallery.formats.attr_reads.attr_limit`, found when None).

    Returns
    -------
    arrays : dict
    attrs : dict
    digest : str
    """
    import h5py

    if not isinstance(group, h5py.Group):
        raise FormatError(f"corrupt file: {group.name} is a dataset, expected a group",
                          path=path)
    h = hashlib.sha256()
    limit = attr_limit(group.file) if limit is None else limit
    attrs = bounded_attrs(group, path, limit)
    h.update(b"group\0" + attrs_digest(attrs).encode())
    arrays = {}
    for name in sorted(group):
        child = check_node(group, name, path)
        if not isinstance(child, h5py.Dataset):
            raise FormatError(f"corrupt file: {child.name} is a group, expected a dataset",
                              path=path)
        arrays[name] = child[()]
        sub = hashlib.sha256(b"dataset\0" + attrs_digest(bounded_attrs(child, path, limit))
                             .encode())
        _update_array(sub, arrays[name])
        key = name.encode("utf-8", "surrogatepass")
        h.update(b"m%d:" % len(key) + key + sub.hexdigest().encode())
    return arrays, attrs, h.hexdigest()


def root_digest(root_attrs, *sections):
    """The root digest: canonical root attributes (without ``digest``/``hmac``) and the
    bytes of ``sections`` (arrays, e.g. the gallery's client index), in order."""
    h = hashlib.sha256(b"ssgallery-root\0" + attrs_digest(root_attrs, ROOT_EXCLUDED).encode())
    for arr in sections:
        h.update(array_digest(arr).encode())
    return h.hexdigest()


def section_digests(root_attrs, path=None):
    """The root attribute ``section_digests`` (JSON name -> hex) as a dict."""
    raw = root_attrs.get("section_digests")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise FormatError("corrupt file: bad or missing section digests", path=path)
    return value


def attr_text(value):
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def unchanged(checked, found, kind, path, what="digest"):
    """Refuse a file opened again by one command (a store's rows read in slices, a
    gallery's clients read one by one) whose ``what`` ``found`` is not the one
    ``checked`` at its first open: another ``kind`` (store, gallery) was written at
    ``path`` meanwhile, and what the command read would mix two files. One line naming
    the file (`FormatError`) and what was compared: ``"digest"`` (the digest the file
    records), or ``"seal SHA-256"`` (the SHA-256 of the seal of the bytes read,
    `ssgallery.formats.seal.SealedFile.head`)."""
    found = str(attr_text(found))
    if checked is not None and found != checked:
        raise FormatError(f"changed while this command read it ({what} {checked[:12]}... "
                          f"when checked, now {found[:12]}...: another {kind} was written "
                          "here meanwhile): run the command again", path=path)


def check_digest(found, expected, what, path=None):
    """Raise one line naming ``what`` unless the two digests agree."""
    if not isinstance(expected, str) or not _hmac.compare_digest(found, expected):
        raise FormatError(f"integrity check failed: {what} does not match its digest "
                          "(the file was edited or is damaged)", path=path)



def sign(digest, key):
    """HMAC-SHA256 (hex) of a root digest with the signing ``key`` (`checked_key`)."""
    return _hmac.new(checked_key(key), digest.encode("ascii"), hashlib.sha256).hexdigest()


def check_signature(root_attrs, digest, key, kind, path=None):
    """With a key: refuse an unsigned or wrongly signed file. Without: nothing.

    The refusal of an unsigned file names the key's source (`key_source`): ``key_file``
    or ``$SSGALLERY_KEY_FILE`` for a `FileKey` (`load_key`), else the parameter ``key``."""
    key = checked_key(key)
    if key is None:
        return
    found = root_attrs.get("hmac")
    if found is None:
        raise FormatError(f"{kind} is not signed, and a signing key is configured "
                          f"({key_source('signing', isinstance(key, FileKey))})", path=path)
    if isinstance(found, bytes):
        found = found.decode("ascii", "replace")
    if not _hmac.compare_digest(str(found), sign(digest, key)):
        raise FormatError(f"{kind} signature does not match the configured key "
                          "(signed with another key, or edited)", path=path)
