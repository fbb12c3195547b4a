"""The enrollment store's images read on demand, a slice of rows at a time.

`StoreImages` is a store's ``/images`` left on disk (`ssgallery.formats.store.load_store`
with ``images=False``: ``compress`` of a large store), each read checked against the
store that was loaded; `StackedImages` reads several image arrays (or `StoreImages`)
as one (``enroll --add``: the old store's rows, then the new ones). Both are
importable from `ssgallery.formats.store` too, which writes them a slice at a time.
"""

import hashlib
import os

import numpy as np

from ssgallery.formats import integrity
from ssgallery.formats.attr_reads import bounded_attr
from ssgallery.formats.hdf5 import open_checked
from ssgallery.formats.kinds import NEWEST_VERSIONS

# the store's format tag, the newest version this code reads and writes, and how messages
# name a store: here because `StoreImages` reopens the file; `ssgallery.formats.store`,
# their home for every other reader, imports them from here
FORMAT = "ssgallery-enrollment"
FORMAT_VERSION = NEWEST_VERSIONS[FORMAT]
KIND = "ssgallery enrollment store"


class StoreImages:
    """The store's ``/images`` read on demand, in slices (``images=False`` in
    `ssgallery.formats.store.load_store`): ``len``, ``shape``, ``dtype`` and ``[rows]``
    like an array.

    ``images[a:b]`` and ``images[index_array]`` open the file, read only those rows
    (h5py slicing) and return float32 (k, H, W) in the order asked for. An encrypted
    store is read with ``privacy_key``, decrypting only the chunks those rows need.
    Rows come only from the store `load_store` checked (its ``digest``, compared at
    each open), never from another one written at the path since (an ``enroll``
    finishing while ``compress`` runs): that is one line naming the store. An
    unencrypted store is reopened through its seal (every chunk checked before HDF5
    parses it, `ssgallery.formats.seal.SealedFile`), and ``seal``, the SHA-256 of the
    seal `load_store` read, must be the reopened file's: the same bytes, not a file that
    merely records the same digest. A chunk is hashed once while the file at the path
    stays the one opened before (``SealedFile``'s ``checked``): a seal-1 store (one
    chunk) is not hashed whole again at each slice.
    """

    def __init__(self, path, shape, integer=False, privacy_key=None, digest=None,
                 seal=None):
        self.path = os.fspath(path)
        self.privacy_key = privacy_key
        self.digest = digest
        self.seal = seal
        self._checked = {}  # SealedFile's chunks found good in the file opened before
        self.shape = tuple(int(s) for s in shape)
        self.integer = bool(integer)  # stored as integers (always finite)
        self.dtype = np.dtype(np.float32)
        self.ndim = len(self.shape)

    def __len__(self):
        return self.shape[0]

    def _open(self):
        import h5py

        from ssgallery.formats.seal import SealedFile

        if self.privacy_key is not None:  # each chunk authenticated with the key
            return open_checked(self.path, FORMAT, FORMAT_VERSION, KIND, lazy=True,
                                privacy_key=self.privacy_key)
        source = SealedFile(self.path, KIND, self._checked)
        try:
            integrity.unchanged(self.seal, hashlib.sha256(source.head).hexdigest(), "store",
                                self.path, what="seal SHA-256")
            return h5py.File(source, "r")
        except BaseException:
            source.close()
            raise

    def __getitem__(self, rows):
        with self._open() as f:
            integrity.unchanged(self.digest, bounded_attr(f, "digest", self.path), "store",
                                self.path)
            data = f["images"]
            if isinstance(rows, slice):
                return data[rows].astype(np.float32)
            rows = np.asarray(rows, dtype=np.int64).ravel()
            if rows.size == 0:
                return np.zeros((0,) + self.shape[1:], dtype=np.float32)
            order, inverse = np.unique(rows, return_inverse=True)  # h5py wants increasing
            return data[order][inverse].astype(np.float32)

    def chunks(self, size=2048):
        """Yield ``(start, images[start:start + size])`` over the whole store."""
        for start in range(0, len(self), size):
            yield start, self[start:start + size]


class StackedImages:
    """Image arrays (or `StoreImages`) one after the other, read like one array of rows:
    ``len``, ``shape``, ``size`` and ``[a:b]`` (``enroll --add``: the old store's images,
    still on disk, then the new ones, never copied into one array)."""

    def __init__(self, parts):
        self.parts = [p for p in parts if len(p)]
        shapes = {tuple(p.shape[1:]) for p in self.parts}
        if len(shapes) > 1:
            raise ValueError(f"images of different shapes {sorted(shapes)}")
        n = sum(len(p) for p in self.parts)
        self.shape = (n,) + (shapes.pop() if shapes else (0, 0))
        self.size = int(np.prod(self.shape))
        self.dtype = np.dtype(np.float32)
        self.ndim = len(self.shape)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, rows):
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("StackedImages reads contiguous slices of rows only")
        start, stop, _ = rows.indices(len(self))
        out, offset = [], 0
        for part in self.parts:
            lo, hi = max(start - offset, 0), min(stop - offset, len(part))
            if lo < hi:
                out.append(np.asarray(part[lo:hi], dtype=np.float32))
            offset += len(part)
        if not out:
            return np.zeros((0,) + self.shape[1:], dtype=np.float32)
        return out[0] if len(out) == 1 else np.concatenate(out)


__all__ = ["FORMAT", "FORMAT_VERSION", "KIND", "StackedImages", "StoreImages"]
