"""Atomic file writes (DESIGN.md §5): temporary file in the same folder, flush, fsync,
rename. A crash or Ctrl-C never leaves a half-written output behind."""

import contextlib
import os
import tempfile

from ssgallery.errors import SsgalleryError


def check_writable(path):
    """Raise :class:`SsgalleryError` unless a file can be created at ``path``.

    Called before long work so that a bad output path fails at once, not after it.
    """
    if os.path.isdir(path):
        raise SsgalleryError("is a folder, expected a file name", path=path)
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(folder):
        raise SsgalleryError("folder does not exist", path=folder)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SsgalleryError("folder is not writable", path=folder)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``.

    The caller writes the whole file to the yielded path (e.g. with ``h5py.File(tmp,
    "w")``) and closes it inside the ``with`` block. On any exception, including
    ``KeyboardInterrupt``, the temporary file is removed and ``path`` is untouched.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise SsgalleryError(f"cannot write {os.path.basename(path)} here ({exc.strerror})",
                             path=folder) from None
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise SsgalleryError(f"cannot write it ({exc.strerror})", path=path) from None
        with contextlib.suppress(OSError):
            dir_fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)


def write_text_atomic(path, text):
    """Write ``text`` (str, UTF-8) to ``path`` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))
