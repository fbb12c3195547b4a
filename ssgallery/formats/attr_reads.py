"""Bounded reads of the HDF5 attributes of ssgallery's files: every reader of a store's
or a gallery's attributes (the format tag, the header, its records, the groups' digests
and states) gets them here, each held to the size an attribute ssgallery writes can have
in that file (`attr_limit`), so that a file cannot make a reader parse, hash or keep an
attribute of any size (a 44 MB ``calibration`` record, 1,000,000 people edited into its
``far_by_person`` and the gallery re-hashed, made ``info`` use 341 MB and 8 s).

A fixed-size attribute (a number, an array, a fixed-length string) is refused from its
stored size, before its value is read. HDF5 gives no size of a variable-length string
(what h5py writes for a ``str``: the JSON records) before reading it (its storage size is
that of its 16-byte heap reference): its bytes are read, no more than the file holds,
and refused before anything decodes, hashes or parses them.

Standard library, numpy and h5py only (on the ``verify`` path).
"""

import numpy as np

from ssgallery.errors import FormatError, printable
from ssgallery.formats.readonly import reads_at_most

__all__ = ["ATTR_FLOOR", "ATTR_PER_ENTRY", "MAX_ATTRIBUTES", "attr_limit", "bounded_attr",
           "bounded_attrs"]

ATTR_FLOOR = 16 << 20  # bytes any attribute may hold (16 MiB: about 350,000 impostor
# people in a calibration record's far_by_person, at about 47 bytes each)
ATTR_PER_ENTRY = 16 << 10  # and per client (lists of client ids)
MAX_ATTRIBUTES = 1024  # attributes of one group or dataset (ssgallery writes < 30)
# the dataset whose rows are a file's clients: a gallery's index, a store's list
_ENTRIES = {"client_index": "gallery", "clients": "store"}


def attr_limit(h5file):
    """The most bytes an attribute of ``h5file`` (an open store or gallery) may hold:
    `ATTR_FLOOR` and `ATTR_PER_ENTRY` per client the file states (the rows of a
    gallery's ``client_index`` or a store's ``clients``: their shape, not their bytes; a
    dataset whose extent the file does not store is refused where it is read,
    `ssgallery.formats.integrity.check_node`).

    Returns
    -------
    (int, str)
        The limit and what it is for (``a gallery of 4 clients``), for messages.
    """
    import h5py

    for name, kind in _ENTRIES.items():
        link = h5file.get(name, getlink=True)
        node = h5file.get(name) if isinstance(link, h5py.HardLink) else None
        if isinstance(node, h5py.Dataset) and node.ndim >= 1:
            n = int(node.shape[0])
            return ATTR_FLOOR + ATTR_PER_ENTRY * n, \
                f"a {kind} of {n} client{'' if n == 1 else 's'}"
    return ATTR_FLOOR, "a file"


def _where(obj, name):
    return f"attribute '{printable(name)}' of {printable(obj.name)}"


def _size(value):
    """The bytes of a read variable-length value (a string, or an array of them)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        return sum(_size(v) for v in value.ravel())
    return int(getattr(value, "nbytes", 0))


def bounded_attr(obj, name, path, limit=None, default=None):
    """One attribute of ``obj`` (an h5py group or dataset) as h5py reads it, held to
    ``limit`` (`attr_limit` of its file when None); ``default`` when it is absent.

    Raises
    ------
    FormatError
        ``refused: attribute 'calibration' of / holds 44001668 bytes, more than the
        16842752 a gallery of 4 clients can hold (an edited or foreign file)``.
    """
    try:
        aid = obj.attrs.get_id(name)
    except KeyError:
        return default
    most, what = attr_limit(obj.file) if limit is None else limit
    variable = _variable(aid.get_type(), obj, name, path)
    stored = aid.get_storage_size()
    if not variable and stored > most:  # fixed size: refused before it is read
        _refuse(obj, name, path, stored, most, what)
    if not variable:
        return obj.attrs[name]
    with reads_at_most(most) as asked:  # a read of a file opened by `open_checked`
        try:
            value = obj.attrs[name]
        except (OSError, RuntimeError):  # HDF5's failed read
            if asked.asked is None:
                raise
            _refuse(obj, name, path, asked.asked, most, what, "needs a read of")
    if _size(value) > most:  # a file h5py opened itself
        _refuse(obj, name, path, _size(value), most, what)
    return value


def _variable(kind, obj, name, path):
    """Whether an attribute of HDF5 type ``kind`` is a variable-length string (or an
    array of them): numbers, booleans and strings are all ssgallery writes; another
    class (compound, variable-length sequence, reference, ...) is refused, unread."""
    import h5py

    cls = kind.get_class()
    if cls in (h5py.h5t.INTEGER, h5py.h5t.FLOAT, h5py.h5t.ENUM):
        return False
    if cls == h5py.h5t.STRING:
        return bool(kind.is_variable_str())
    raise FormatError(f"refused: {_where(obj, name)} is of an HDF5 type ssgallery never "
                      "writes (an edited or foreign file)", path=path)


def _refuse(obj, name, path, size, most, what, verb="holds"):
    raise FormatError(f"refused: {_where(obj, name)} {verb} {size} bytes, more than the "
                      f"{most} {what} can hold (an edited or foreign file)", path=path)


def bounded_attrs(obj, path, limit=None):
    """Every attribute of ``obj`` ({name: value}, as h5py reads them), each held to
    ``limit`` (`bounded_attr`; None: `attr_limit` of its file; False: none, for the
    digests of a file being written or re-hashed, whatever it holds), and no more than
    `MAX_ATTRIBUTES` of them (counted before any is read)."""
    if limit is False:
        return dict(obj.attrs.items())
    limit = attr_limit(obj.file) if limit is None else limit
    count = len(obj.attrs)
    if count > MAX_ATTRIBUTES:
        raise FormatError(f"refused: {printable(obj.name)} has {count} attributes, more than "
                          f"the {MAX_ATTRIBUTES} any file of ssgallery's can have (an edited "
                          "or foreign file)", path=path)
    return {name: bounded_attr(obj, name, path, limit) for name in obj.attrs}

