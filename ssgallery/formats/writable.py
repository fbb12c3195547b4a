"""Which outputs a writer may replace: the "same kind only" rule of
`ssgallery.formats.atomic` (`check_writable`), and the ``kind`` tests the writers give
it (an ssgallery format tag, or `has_prefix` for a file signature).

An existing output is replaced only by an output of the same kind: a store is never
replaced by a gallery nor the reverse, a file that is not an ssgallery output of that
kind only with ``force``, a device node, FIFO, socket or folder never; an encrypted
store or gallery never by a plain one.

The existing file is looked at through one open (`Existing`, by
`ssgallery.safeio.open_regular`: read-only, never waiting on a FIFO, checked to be a
regular file on its descriptor), and its kind is read from
that descriptor within bounds (a signature's first bytes, a side-car of at most
`ssgallery.safeio.MAX_TEXT_BYTES`), never from the path again.
"""

import contextlib
import os
import stat

from ssgallery.checks import is_int
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.attr_reads import bounded_attr
from ssgallery.formats.integrity import KeyNeeded
from ssgallery.formats.kinds import NEWEST_VERSIONS, kind_label
from ssgallery.safeio import file_kind, file_name, open_regular

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Existing:
    """An existing output opened once (read-only, never waiting on a FIFO) for the
    same-kind check: every test of its kind reads this descriptor, never the path again.

    Attributes
    ----------
    path : str
        The file (the symlink-resolved target of the output).
    fd : int or None
        The open descriptor (`ssgallery.safeio.open_regular`); None when the file is
        not a regular one (never opened then) or could not be looked at.
    mode : int or None
        Its ``st_mode`` (None when it could not be looked at).
    regular : bool
        The open file is a regular file (False also when it could not be opened).
    """

    def __init__(self, path):
        self.path, self.fd, self.mode, self.regular, self._format = (path, None, None,
                                                                     False, False)
        self._version = None
        with contextlib.suppress(OSError):
            self.fd, st = open_regular(path)
            self.mode, self.regular = st.st_mode, self.fd is not None

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def head(self, size):
        """The first ``size`` bytes (fewer in a shorter file; b"" when unreadable)."""
        if not self.regular:
            return b""
        try:
            return os.pread(self.fd, size, 0)
        except OSError:
            return b""

    def read(self, limit):
        """The whole file, or None when it holds more than ``limit`` bytes or cannot be
        read: a check of its kind reads no more than it would accept."""
        if not self.regular:
            return None
        chunks, size = [], 0
        try:
            while size <= limit:
                piece = os.pread(self.fd, min(limit + 1 - size, 1 << 20), size)
                if not piece:
                    break
                chunks.append(piece)
                size += len(piece)
        except OSError:
            return None
        return None if size > limit else b"".join(chunks)

    def format(self):
        """`hdf5_format` of this open file (looked at once)."""
        if self._format is False:
            self._format, self._version = _format_of(self)
        return self._format

    def format_version(self):
        """The ``format_version`` of this open file, an int, when it is a sealed ssgallery
        HDF5 file that records one as a writer does; None otherwise (an encrypted file:
        its header names no version; read without the key)."""
        self.format()
        return self._version


def _format_of(existing):
    """``(format, format_version)`` of an open file (`Existing.format`,
    `Existing.format_version`)."""
    from ssgallery.formats.encryption import HEADER, header_format
    from ssgallery.formats.seal import SealedFile

    head = existing.head(HEADER)
    encrypted = header_format(head)
    if encrypted is not None or not head:
        return encrypted, None
    try:
        import h5py

        sealed = SealedFile(existing.path, handle=open(os.dup(existing.fd), "rb",  # noqa: SIM115
                                                       buffering=0))
        with sealed:
            sealed.check_all()  # HDF5 never parses an unchecked byte
            with h5py.File(sealed, "r") as f:
                value = bounded_attr(f, "format", existing.path, default="")
                version = bounded_attr(f, "format_version", existing.path)
    except (SsgalleryError, OSError, RuntimeError, ValueError, TypeError, KeyError):
        return None, None
    version = int(version) if is_int(version) else None  # a writer's int64 attribute
    return (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value),
            version)


def hdf5_format(path):
    """The ``format`` attribute of a sealed ssgallery HDF5 file, "" for one without it,
    None for any other file (never parsed: see `ssgallery.formats.seal`); for an
    encrypted store or gallery, the format named in its header (read without the key:
    `ssgallery.formats.encryption.file_format`). ``path`` is opened once
    (`Existing`)."""
    with Existing(os.fspath(path)) as existing:
        return existing.format()


def check_writable(path, kind=None, force=False, encrypted=None):
    """Raise `SsgalleryError` unless an output of ``kind`` may be written at ``path``.

    Called before long work so that a bad output fails at once, and again by
    `atomic_path` just before writing.

    Parameters
    ----------
    path : str or Path
    kind : str, callable or None
        str: the ssgallery HDF5 format tag the output will carry (e.g.
        ``"ssgallery-gallery"``); an existing file is of the same kind when it carries
        the same tag. callable(existing) -> bool: True when the existing file, opened
        once as an `Existing` (read its bytes with ``existing.head(size)`` or the
        bounded ``existing.read(limit)``, never by its path), is an output of the same
        kind (e.g. a PNG signature: `has_prefix`). None: any regular file is replaced.
    force : bool
        Replace an existing regular file that is not an output of the same kind. Never
        replaces another kind of ssgallery file, a folder or a special file.
    encrypted : bool, optional
        Whether the output will be encrypted with the privacy key (stores, galleries).
        False: an existing encrypted file is never replaced by a plain one, even forced
        (its owner meant it to stay encrypted: a plain copy would be a silent
        downgrade).

    Returns
    -------
    str or None
        The format `hdf5_format` found in the existing file (looked at in the same
        open), None when there is no file or no format was looked for.
    """
    path = os.fspath(path)
    st, target = _place(path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise SsgalleryError(f"is {file_kind(st.st_mode)}; refusing to replace it",
                             path=path)
    if kind is None:
        return None
    with Existing(target) as existing:  # one open: every test below reads it
        if existing.mode is not None and not existing.regular:  # swapped in since the stat
            raise SsgalleryError(f"is {file_kind(existing.mode)}; refusing to replace it",
                                 path=path)
        if callable(kind):
            return _check_output(path, existing, kind, force)
        return _check_format(path, existing, kind, force, encrypted)


def _place(path):
    """``(os.stat(path) or None when missing, the symlink-resolved target)``; raises
    unless a file can be written there (not a folder, in a writable folder)."""
    try:
        st = os.stat(file_name(path))  # follows a symlink: the target is what would be replaced
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise SsgalleryError(f"cannot write it ({exc.strerror})", path=path) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise SsgalleryError("is a folder, expected a file name", path=path)
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise SsgalleryError("folder does not exist", path=folder)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SsgalleryError("folder is not writable", path=folder)
    return st, target


def _check_output(path, existing, kind, force):
    """`check_writable` for a ``kind`` test (callable): the existing file passes it, or
    is forced and is no store or gallery (a store or gallery is refused as such, forced
    or not: the unforced line must not offer a --force that cannot help)."""
    if kind(existing):
        return
    found = existing.format()  # never a store or a gallery, even forced
    if found and found.startswith("ssgallery"):
        raise FormatError(f"{kind_label(found)}, not an output of this kind; refusing "
                          f"to replace it, even forced (choose another name)", path=path)
    if not force:
        raise SsgalleryError("exists and is not an output of this kind; refusing to "
                             "replace it unless forced", path=path)


def refuse_newer(fmt, version, path):
    """The one rule for a file a newer ssgallery wrote: an existing file of the format
    ``fmt`` (a store, a gallery, a score side-car) whose ``version`` is newer than this
    code reads (`ssgallery.formats.kinds.NEWEST_VERSIONS`) is never replaced, even
    forced: this code cannot read it, so it cannot tell what replacing it loses.

    Raises
    ------
    FormatError
        ``<path>: an ssgallery gallery of format version 9, newer than this ssgallery
        reads (3); refusing to replace it, even forced (...)``. Nothing for a version
        that is None (not found) or not newer.
    """
    newest = NEWEST_VERSIONS.get(fmt)
    if None not in (version, newest) and version > newest:
        raise FormatError(f"{kind_label(fmt)} of format version {version}, newer than "
                          f"this ssgallery reads ({newest}); refusing to replace it, "
                          "even forced (upgrade ssgallery, or choose another name)",
                          path=path)


def _check_format(path, existing, kind, force, encrypted):
    """`check_writable` for a format tag: the existing file carries it (and stays
    encrypted if it was, and is of no newer version than this code reads: one written
    by a newer ssgallery is never replaced, even forced), or is forced and is no other
    ssgallery file."""
    from ssgallery.formats.encryption import HEADER, header_format

    found = existing.format()
    if found == kind:
        if encrypted is False and header_format(existing.head(HEADER)) is not None:
            raise KeyNeeded("is encrypted; writing it again without the privacy key would "
                            "leave it in plaintext: give the key ({key}), or remove it "
                            "first", path=path)
        refuse_newer(kind, existing.format_version(), path)  # as enroll's reader does
        return found
    if found and found.startswith("ssgallery"):
        raise FormatError(f"not {kind_label(kind)} but {kind_label(found)}; refusing to "
                          f"replace it, even forced (choose another name)", path=path)
    if not force:
        raise FormatError(f"not {kind_label(kind)} (not written by ssgallery); refusing to "
                          f"replace it unless forced", path=path)
    return found


HEAD_BYTES = 64  # what `has_prefix` reads of a file for a pattern


def has_prefix(*prefixes):
    """A ``kind`` for `check_writable`: the existing file starts with one of
    ``prefixes``: bytes (e.g. the PNG signature) or a compiled bytes pattern matched at
    the start of its first `HEAD_BYTES` bytes (a signature with a gap, e.g. WebP's
    ``RIFF....WEBP``)."""

    def same_kind(existing):
        head = existing.head(max([HEAD_BYTES] + [len(p) for p in prefixes
                                                 if isinstance(p, bytes)]))
        return any(head.startswith(p) if isinstance(p, bytes) else bool(p.match(head))
                   for p in prefixes)

    return same_kind
