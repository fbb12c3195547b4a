"""Which outputs a writer may replace: the "same kind only" rule of
`ssgallery.formats.atomic` (`check_writable`), and the ``kind`` tests the writers give
it (an ssgallery format tag, or `has_prefix` for a file signature).

An existing output is replaced only by an output of the same kind: a store is never
replaced by a gallery nor the reverse, a file that is not an ssgallery output of that
kind only with ``force``, a device node, FIFO, socket or folder never; an encrypted
store or gallery never by a plain one.
"""

import contextlib
import os
import stat

from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.integrity import KeyNeeded
from ssgallery.formats.kinds import kind_label

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _special_name(mode):
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def hdf5_format(path):
    """The ``format`` attribute of a sealed ssgallery HDF5 file, "" for one without it,
    None for any other file (never parsed: see `ssgallery.formats.seal`); for an
    encrypted store or gallery, the format named in its header (read without the key:
    `ssgallery.formats.encryption.file_format`)."""
    from ssgallery.formats.encryption import file_format
    from ssgallery.formats.seal import check_seal

    encrypted = file_format(path)
    if encrypted is not None:
        return encrypted
    try:
        check_seal(path)
        import h5py

        with h5py.File(path, "r") as f:
            value = f.attrs.get("format", "")
    except (SsgalleryError, OSError, RuntimeError, ValueError):
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _is_encrypted(path):
    from ssgallery.formats.encryption import file_format

    return file_format(path) is not None


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
        the same tag. callable(path) -> bool: True when the existing file is an output
        of the same kind (e.g. a PNG signature). None: any regular file is replaced.
    force : bool
        Replace an existing regular file that is not an output of the same kind. Never
        replaces another kind of ssgallery file, a folder or a special file.
    encrypted : bool, optional
        Whether the output will be encrypted with the privacy key (stores, galleries).
        False: an existing encrypted file is never replaced by a plain one, even forced
        (its owner meant it to stay encrypted: a plain copy would be a silent
        downgrade).
    """
    path = os.fspath(path)
    st, target = _place(path)
    if st is None:
        return
    if not stat.S_ISREG(st.st_mode):
        raise SsgalleryError(f"is {_special_name(st.st_mode)}; refusing to replace it",
                             path=path)
    if kind is None:
        return
    if callable(kind):
        _check_output(path, target, kind, force)
    else:
        _check_format(path, target, kind, force, encrypted)


def _place(path):
    """``(os.stat(path) or None when missing, the symlink-resolved target)``; raises
    unless a file can be written there (not a folder, in a writable folder)."""
    try:
        st = os.stat(path)  # follows a symlink: the target is what would be replaced
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


def _check_output(path, target, kind, force):
    """`check_writable` for a ``kind`` test (callable): the existing file passes it, or
    is forced and is no store or gallery."""
    if kind(target):
        return
    if not force:
        raise SsgalleryError("exists and is not an output of this kind; refusing to "
                             "replace it unless forced", path=path)
    found = hdf5_format(target)  # forced: still never a store or a gallery
    if found and found.startswith("ssgallery"):
        raise FormatError(f"{kind_label(found)}, not an output of this kind; refusing "
                          f"to replace it, even forced (choose another name)", path=path)


def _check_format(path, target, kind, force, encrypted):
    """`check_writable` for a format tag: the existing file carries it (and stays
    encrypted if it was), or is forced and is no other ssgallery file."""
    found = hdf5_format(target)
    if found == kind:
        if encrypted is False and _is_encrypted(target):
            raise KeyNeeded("is encrypted; writing it again without the privacy key would "
                            "leave it in plaintext: give the key ({key}), or remove it "
                            "first", path=path)
        return
    if found and found.startswith("ssgallery"):
        raise FormatError(f"not {kind_label(kind)} but {kind_label(found)}; refusing to "
                          f"replace it, even forced (choose another name)", path=path)
    if not force:
        raise FormatError(f"not {kind_label(kind)} (not written by ssgallery); refusing to "
                          f"replace it unless forced", path=path)


HEAD_BYTES = 64  # what `has_prefix` reads of a file for a pattern


def has_prefix(*prefixes):
    """A ``kind`` for `check_writable`: the existing file starts with one of
    ``prefixes``: bytes (e.g. the PNG signature) or a compiled bytes pattern matched at
    the start of its first `HEAD_BYTES` bytes (a signature with a gap, e.g. WebP's
    ``RIFF....WEBP``)."""

    def same_kind(path):
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            head = handle.read(max([HEAD_BYTES] + [len(p) for p in prefixes
                                                   if isinstance(p, bytes)]))
            return any(head.startswith(p) if isinstance(p, bytes) else bool(p.match(head))
                       for p in prefixes)
        return False

    return same_kind
