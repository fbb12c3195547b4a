"""`ReadOnlyFile`: the file object ``h5py.File`` reads a checked file through (a sealed
file, `ssgallery.formats.seal.SealedFile`; an encrypted one,
`ssgallery.formats.encryption.EncryptedFile`): position, seeking and closing, once;
`opened`, how such a file is opened by its name, and `with_header`, how either reads
its header from that open; `reads_at_most`, a bound on each read HDF5 makes through
one (`ssgallery.formats.attr_reads`: an attribute's bytes refused before they are read).

Standard library only (on the ``verify`` path).
"""

import contextlib
import contextvars
import errno
import io
import os

from ssgallery.errors import FormatError
from ssgallery.safeio import file_kind, open_regular


def opened(path, kind, hint=""):
    """``path`` opened once for reading (an unbuffered binary file) and its ``fstat``:
    `ssgallery.safeio.open_regular` (read-only, never waiting on a FIFO, a regular file
    by its descriptor: what is checked is what is then read). `FormatError` otherwise,
    naming the file as a ``kind`` (``hint``: what to do about a missing one)."""
    try:
        fd, st = open_regular(path)  # a folder or a socket is never opened
    except FileNotFoundError:
        raise FormatError(f"no such {kind}{hint}", path=path) from None
    except OSError as exc:
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None
    if fd is None:  # named as every input is (`ssgallery.safeio.file_kind`)
        raise FormatError(f"{kind} is {file_kind(st.st_mode)}, expected a regular file",
                          path=path)
    return open(fd, "rb", buffering=0), st


def with_header(path, kind, read, handle=None):
    """``(handle, read(handle))``: ``handle`` (an unbuffered binary file already open on
    the file ``path`` names), else ``path`` `opened`, and what ``read`` makes of its
    header (a seal, `ssgallery.formats.seal`; an encrypted container,
    `ssgallery.formats.encryption`); ``handle`` is closed on any error, an ``OSError``
    raised as `FormatError` naming the file as a ``kind``."""
    if handle is None:  # never waiting on a FIFO, a regular file by its descriptor
        handle = opened(path, kind)[0]
    try:
        return handle, read(handle)
    except OSError as exc:
        handle.close()
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None
    except BaseException:
        handle.close()
        raise


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

    def _within_limit(self, n):
        """Refuse (``OSError`` EFBIG, which HDF5 reports as a failed read) a read of ``n``
        bytes above the limit `reads_at_most` set, recording ``n`` in it."""
        limit = _READ_LIMIT.get()
        if limit is not None and n > limit.most:
            limit.asked = n
            raise OSError(errno.EFBIG, f"a read of {n} bytes, above the limit of {limit.most}")


class ReadLimit:
    """The limit of `reads_at_most` (``most`` bytes) and the size of the first read
    refused under it (``asked``; None: none was)."""

    def __init__(self, most):
        self.most, self.asked = int(most), None


_READ_LIMIT = contextvars.ContextVar("ssgallery_read_limit", default=None)


@contextlib.contextmanager
def reads_at_most(most):
    """While the block runs (in this thread), a read of more than ``most`` bytes at once
    from any `ReadOnlyFile` fails (HDF5 reads a variable-length string's heap in one
    read of its whole size: a 44 MB attribute is refused before any of it is read).

    Yields
    ------
    ReadLimit
        Its ``asked``: the size of the read refused, or None.
    """
    limit = ReadLimit(most)
    token = _READ_LIMIT.set(limit)
    try:
        yield limit
    finally:
        _READ_LIMIT.reset(token)
