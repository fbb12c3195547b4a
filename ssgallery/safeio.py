"""Reading untrusted input files safely: regular files only, bounded sizes, printable names.

Every input ssgallery reads by name (probe images, probe lists, score files, a matcher
program's answer file, the key file) goes through `read_regular`: the path is
checked with ``os.stat`` before it is opened (a FIFO, a device such as ``/dev/zero``,
a socket or a folder is refused without opening it), opened with ``O_NONBLOCK`` (a
FIFO swapped in after the check cannot block), checked again on the open descriptor,
and read up to a documented maximum. `printable` escapes control characters so
that a file or client name can never fake a line of output.

Standard library only (on the ``verify`` path); below every other layer.
"""

import os
import stat

from ssgallery.errors import InputError, printable  # noqa: F401 (re-exported)

MiB = 1 << 20
MAX_IMAGE_BYTES = 64 * MiB  # a probe or enrolment image file
MAX_TEXT_BYTES = 64 * MiB  # a probe list or score file


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path, what, max_bytes, error=InputError, missing=None):
    """The bytes of the regular file ``path`` (at most ``max_bytes``).

    Parameters
    ----------
    path : str or Path
    what : str
        Names the input in messages ("probe list", "image").
    max_bytes : int
    error : type
        The `ssgallery.errors.SsgalleryError` subclass to raise.
    missing : str, optional
        The message for a missing file (default ``no such <what>``).

    Raises
    ------
    error
        Missing, not a regular file, unreadable, or larger than ``max_bytes``.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(missing or f"no such {what}", path=path) from None
    except (OSError, ValueError) as exc:
        raise error(f"cannot read {what} ({getattr(exc, 'strerror', None) or exc})",
                    path=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} is {_kind(st.st_mode)}, expected a regular file", path=path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror or exc})", path=path) from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} is {_kind(st.st_mode)}, expected a regular file", path=path)
        if st.st_size > max_bytes:
            raise error(f"{what} is too large ({st.st_size} bytes, at most {max_bytes})",
                        path=path)
        try:  # a buffer of the file's size, not of max_bytes; more only if it grew
            data = handle.read(st.st_size + 1)
            if len(data) > st.st_size:
                data += handle.read(max_bytes + 1 - len(data))
        except OSError as exc:
            raise error(f"cannot read {what} ({exc.strerror or exc})", path=path) from None
    if len(data) > max_bytes:
        raise error(f"{what} is too large (more than {max_bytes} bytes)", path=path)
    return data
