"""Reading untrusted input files safely: regular files only, bounded sizes, printable names.

Every input ssgallery reads by name (probe images, probe lists, score files, a matcher
program's answer file) goes through `read_regular`, and every file read by name (those,
the key files, stores and galleries) is opened by `open_regular`: the path is
checked with ``os.stat`` before it is opened (a FIFO, a device such as ``/dev/zero``,
a socket or a folder is refused without opening it), opened with ``O_NONBLOCK`` (a
FIFO swapped in after the check cannot block), checked again on the open descriptor,
and read up to a documented maximum. `printable` escapes control characters so
that a file or client name can never fake a line of output.

Standard library only (on the ``verify`` path); below every other layer.
"""

import os
import stat

from ssgallery.errors import InputError, printable

MiB = 1 << 20
MAX_IMAGE_BYTES = 64 * MiB  # a probe or enrolment image file
MAX_TEXT_BYTES = 64 * MiB  # a probe list or score file


OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def file_name(path, error=InputError):
    """``os.fspath(path)``, refused in one line when no file can have that name.

    The one check of a name before ssgallery stats, opens, resolves or writes it: a NUL
    character cannot be in a file name, and ``os.stat``, ``os.open`` and
    ``os.path.realpath`` raise a bare ``ValueError`` on one. argv cannot carry it, but a
    name read from data can (a claims or probe list, a ``Path`` a library caller built
    from a CSV, a JSON string's ``\\u0000``).

    Parameters
    ----------
    path : str, bytes or os.PathLike
    error : type
        The `ssgallery.errors.SsgalleryError` subclass to raise.

    Returns
    -------
    str or bytes

    Raises
    ------
    error
        ``<name>: the name holds a NUL character, which no file name can``.
    """
    name = os.fspath(path)
    if ("\0" if isinstance(name, str) else b"\0") in name:
        shown = name if isinstance(name, str) else name.decode("utf-8", "replace")
        raise error("the name holds a NUL character, which no file name can", path=shown)
    return name


def file_kind(mode):
    """What a file of ``mode`` (an ``st_mode``) is, as a message names a file that is
    not a regular one: "a folder", "a FIFO (named pipe)", "a character device", "a
    block device", "a socket", "a symbolic link" (a name looked at without following
    it: ``open_regular(..., dir_fd=...)``), else "not a regular file"."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path, dir_fd=None):
    """``path`` opened once for reading if it is a regular file: ``(fd, st)``.

    The one way ssgallery opens a file it reads by name: checked with ``os.stat`` first
    (a FIFO, a device, a socket or a folder is never opened), opened read-only,
    close-on-exec and with ``O_NONBLOCK`` (a FIFO swapped in after the check cannot
    block), then checked again on the descriptor (``st`` is its ``fstat``): what was
    checked is what is read. The caller words its own refusals (`file_kind` names
    what a file is) and closes ``fd``.

    Parameters
    ----------
    path : str or Path
    dir_fd : int, optional
        An open folder that ``path`` (a name in it) is looked up in; a symbolic link is
        then never followed: it is looked at, not through (``st`` says what it is, no
        descriptor), and one swapped in after the look is not opened (``O_NOFOLLOW``:
        ``OSError``). Compress's parts folder (`ssgallery.app.parts`).

    Returns
    -------
    fd : int or None
        The open descriptor; None (nothing left open) when ``path`` is not a regular
        file.
    st : os.stat_result
        What ``path`` is (the descriptor's ``fstat`` once opened).

    Raises
    ------
    OSError
        As ``os.stat`` or ``os.open`` raise it (`FileNotFoundError` for a missing file).
    InputError
        A name no file can have (`file_name`).
    """
    follow = dir_fd is None
    st = os.stat(file_name(path), dir_fd=dir_fd, follow_symlinks=follow)
    if not stat.S_ISREG(st.st_mode):
        return None, st
    fd = os.open(path, OPEN_FLAGS | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):  # swapped in since the stat
        os.close(fd)
        return None, st
    return fd, st


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
        Missing, not a regular file, unreadable, or larger than ``max_bytes``; a name
        no file can have (`file_name`).
    """
    file_name(path, error)
    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        raise error(missing or f"no such {what}", path=path) from None
    except OSError as exc:
        raise error(f"cannot read {what} ({getattr(exc, 'strerror', None) or exc})",
                    path=path) from None
    if fd is None:
        raise error(f"{what} is {file_kind(st.st_mode)}, expected a regular file", path=path)
    with os.fdopen(fd, "rb") as handle:
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


# --------------------------------------------------------------------------- environment
# Every SSGALLERY_* variable anything of the project reads, and what it holds. The CLI
# refuses any other SSGALLERY_* variable (a misspelt SSGALLERY_KEY_FILE must not mean
# "no key") and any value its kind does not allow (`check_environment`); the library
# reads them through `env_text` / `env_seconds`, which apply the same rules. A new
# variable is added here.
ENVIRONMENT = {
    "SSGALLERY_KEY_FILE": ("path", "the signing key file"),
    "SSGALLERY_PRIVACY_KEY_FILE": ("path", "the privacy (encryption) key file"),
    "SSGALLERY_MATCHER_CMD": ("text", "the external matcher program and its arguments"),
    "SSGALLERY_CONFIG": ("path", "the configuration file"),
    "SSGALLERY_LOCK_TIMEOUT": ("seconds", "how long a writer waits for another run's lock"),
    "SSGALLERY_DEBUG": ("flag", "0 or 1: print the traceback of an internal error"),
    "SSGALLERY_DATA": ("path", "the folder holding the real data sets"),
    "SSGALLERY_ATT_FACES": ("path", "the AT&T faces folder"),
    "SSGALLERY_LFW": ("path", "the LFW faces folder"),
    "SSGALLERY_BENCH_PAGES": ("path", "where benchmarks write their pages"),
    "SSGALLERY_BENCH_OUT": ("path", "where benchmarks write their other outputs"),
    "SSGALLERY_PROGRESS_INTERVAL": ("seconds", "seconds between progress lines on a pipe"),
}
PREFIX = "SSGALLERY_"
MAX_SECONDS = 7 * 24 * 3600.0  # a lock wait of a week: anything longer is a typo


def _env_problem(name, value):
    """Why ``value`` cannot be the value of the variable ``name`` (None when it can)."""
    if name not in ENVIRONMENT:
        known = ", ".join(sorted(ENVIRONMENT))
        return f"is not a variable of ssgallery (known: {known}); unset it"
    kind = ENVIRONMENT[name][0]
    if not value.strip():
        return ("is set but empty; unset it, or give "
                f"{ENVIRONMENT[name][1]}")
    if kind == "flag" and value not in ("0", "1"):
        return f"must be 0 or 1, got {printable(value[:40])!r}"
    if kind == "seconds":
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
        if seconds is None or not 0 <= seconds <= MAX_SECONDS:  # NaN fails this too
            return (f"must be a number of seconds from 0 to {MAX_SECONDS:.0f}, got "
                    f"{printable(value[:40])!r}")
    return None


def _env_error(name, problem):
    return InputError(f"environment variable {name} {problem}")


def env_text(name):
    """The value of the environment variable ``name`` (one of `ENVIRONMENT`), or None
    when it is not set; an empty value is an error, never "not set"."""
    value = os.environ.get(name)
    if value is None:
        return None
    problem = _env_problem(name, value)
    if problem:
        raise _env_error(name, problem)
    return value


def env_seconds(name, default):
    """A number of seconds from the environment variable ``name`` (``default`` when it
    is not set)."""
    value = env_text(name)
    return default if value is None else float(value)


def check_environment():
    """Refuse (`InputError`, one line) any ``SSGALLERY_*`` variable that is not one of
    `ENVIRONMENT` or whose value its kind does not allow."""
    for name in sorted(os.environ):
        if name.startswith(PREFIX):
            problem = _env_problem(name, os.environ[name])
            if problem:
                raise _env_error(name, problem)
