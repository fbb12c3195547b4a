"""How a gallery stores its prototypes: in the smallest dtype that holds every value
exactly, read back as float64, bit for bit the values the learner wrote.

A black-box matcher's prototypes are, by default, real training images (swapped, never
moved: ``--max-iter auto`` is 0 for an external matcher), whole numbers in [0, 255]:
they are stored as uint8, one byte a value instead of eight. Any other prototypes
(eigenface and dlib coefficients, moved pixels, protected templates) are stored as
float64, as before; nothing is ever rounded. The choice is one for the whole gallery
(every client group and ``/index``), so ``info`` reads it from the index without
opening a client group.

uint8 prototypes came with gallery format version 3 (`VERSION_DTYPES`): each version
stores one dtype, and a gallery is written at the version of its dtype (version 2 when
its prototypes are float64, which older ssgallery still reads; 3 only when every one is
uint8). A reader refuses prototypes stored in any other dtype than the file's version's
(a forged file: float64 in one client of a version-3 gallery, in its index, or in all of
it) with one line naming the file and the client (or the index).

Numpy only (on the ``verify`` path).
"""

import numpy as np

from ssgallery.errors import FormatError

FLOAT64 = np.dtype("<f8")
UINT8 = np.dtype("u1")
# the dtype each gallery format version stores every prototype in (`write_gallery`
# gives version 3 only to an all-uint8 gallery: a version-3 float64 dataset was forged)
VERSION_DTYPES = {2: (FLOAT64,), 3: (UINT8,)}


def _exact_uint8(prototypes):
    """True when every value of the float64 array is a whole number in [0, 255] that
    uint8 gives back bit for bit (no NaN, no infinity, no -0.0)."""
    P = np.ascontiguousarray(prototypes, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        back = P.astype(np.uint8).astype(np.float64)
    return np.array_equal(back.view(np.uint64), P.view(np.uint64))


def storage_dtype(prototype_arrays):
    """The dtype a gallery stores the prototypes of all its clients in: uint8 when every
    value of every array is a whole number in [0, 255] (`_exact_uint8`), else float64.

    Parameters
    ----------
    prototype_arrays : iterable of ndarray
        Each client's prototypes (m, d), as the learner wrote them.

    Returns
    -------
    numpy.dtype
    """
    arrays = list(prototype_arrays)
    if arrays and all(_exact_uint8(P) for P in arrays):
        return UINT8
    return FLOAT64


def storage_version(dtype):
    """The gallery format version that stores prototypes of ``dtype``."""
    return min(v for v, allowed in VERSION_DTYPES.items() if np.dtype(dtype) in allowed)


def stored_values(stored, version, where, path=None):
    """The float64 values of prototypes read from a gallery of format ``version``.

    Parameters
    ----------
    stored : ndarray
        The dataset as stored (``/clients/<id>/prototypes`` or ``/index/prototypes``).
    version : int
        The file's ``format_version``.
    where : str
        What is read, for the message (``client 'X'``, ``the search index``).

    Returns
    -------
    values : ndarray, float64
        The same shape; the values the writer was given.
    dtype : str
        The stored dtype's name (``uint8`` or ``float64``: what ``info`` counts).

    Raises
    ------
    FormatError
        A dtype other than the version's (int32, float32, uint8 in a version-2 file,
        float64 in a version-3 one, ...): one line naming the file and ``where``.
    """
    stored = np.asarray(stored)
    dtype = stored.dtype.newbyteorder("<") if stored.dtype.byteorder == ">" else stored.dtype
    allowed = VERSION_DTYPES.get(version, ())
    if dtype not in allowed:
        names = " or ".join(d.name for d in allowed) or "nothing"
        raise FormatError(f"refused: {where} has prototypes stored as {stored.dtype.name}; a "
                          f"format-{version} gallery stores them as {names}", path=path)
    return np.asarray(stored, dtype=np.float64), dtype.name
