"""`ReadOnlyFile`: the file object ``h5py.File`` reads a checked file through (a sealed
file, `ssgallery.formats.seal.SealedFile`; an encrypted one,
`ssgallery.formats.encryption.EncryptedFile`): position, seeking and closing, once.

Standard library only (on the ``verify`` path).
"""

import io
import os


class ReadOnlyFile(io.RawIOBase):
    """A read-only, seekable raw file of ``size`` bytes over an open ``handle`` (closed
    with it). Subclasses implement ``readinto`` (from `tell`, advancing it).

    Parameters
    ----------
    path : str or Path
        The file, for messages.
    kind : str
        What it is, for messages (e.g. ``"gallery"``).
    handle : file object
        Open for reading; closed by `close`.
    size : int
        Bytes a reader sees (seek positions are relative to it).
    """

    def __init__(self, path, kind, handle, size):
        super().__init__()
        self.path, self.kind = path, kind
        self._handle, self._size = handle, size
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=os.SEEK_SET):
        """Move to ``offset`` from the start, the position or the end (``whence``).

        Raises
        ------
        ValueError
            An unknown ``whence``, or a position before the start (as ``io`` files do);
            the position is unchanged.
        """
        if self.closed:
            raise ValueError("seek of a closed file")
        bases = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}
        if whence not in bases:
            raise ValueError(f"invalid whence ({whence!r}, should be 0, 1 or 2)")
        position = bases[whence] + int(offset)
        if position < 0:
            raise ValueError(f"negative seek position {position}")
        self._pos = position
        return position

    def tell(self):
        return self._pos

    def _remaining(self, wanted):
        """How many of ``wanted`` bytes a read from here returns (0 at or past the end)."""
        return min(wanted, max(self._size - self._pos, 0))

    def close(self):
        self._handle.close()
        super().close()
