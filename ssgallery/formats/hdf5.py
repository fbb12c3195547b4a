"""HDF5 helpers shared by the store and the gallery: opening a checked ssgallery file,
matcher state as plain datasets/attributes (never pickled), rebuilding a matcher.

On the ``verify`` path: h5py and numpy only.
"""

import contextlib
import hashlib
import json
import os

import numpy as np

from ssgallery import jsontext
from ssgallery.checks import is_int, shown
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.attr_reads import bounded_attr

_JSON_KEYS = "_json_keys"


def now_utc():
    """Creation time stamp, ISO 8601 UTC, seconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0).isoformat()


def write_header(f, fmt, version):
    """The attributes every ssgallery file starts with: its format and version, the
    tool's version and the creation time."""
    from ssgallery import __version__

    f.attrs["format"] = fmt
    f.attrs["format_version"] = version
    f.attrs["tool_version"] = __version__
    f.attrs["created"] = now_utc()


@contextlib.contextmanager
def hdf5_image(path, userblock_size=0, fmt=None, privacy_key=None):
    """An ``h5py.File`` built in memory and written to ``path`` in one Python write when
    the block ends (nothing on an exception). HDF5 never writes to disk itself, so a full
    disk or ``ulimit -f`` is one OSError (EFBIG, ENOSPC), not a crash inside HDF5.

    ``userblock_size`` = `ssgallery.formats.seal.USERBLOCK` (stores and galleries)
    reserves the leading bytes of the seal, and the file is sealed in memory; with a
    ``privacy_key`` it is then encrypted in memory as a file of format ``fmt``
    (`ssgallery.formats.encryption`), and only the ciphertext is written: no plaintext
    byte reaches the disk."""
    import io

    import h5py

    from ssgallery.formats.integrity import checked_key
    from ssgallery.formats.seal import USERBLOCK, seal_buffer

    privacy_key = checked_key(privacy_key, "privacy")  # before anything is built
    buffer = io.BytesIO()
    with h5py.File(buffer, "w", userblock_size=userblock_size) as f:
        yield f
    data = buffer.getbuffer()
    pieces = [data]
    if userblock_size == USERBLOCK:
        seal_buffer(data, path)
        if privacy_key is not None:
            from ssgallery.formats.encryption import encrypted_pieces

            pieces = encrypted_pieces(data, fmt, privacy_key)
    with open(path, "wb") as handle:
        handle.writelines(pieces)


def _source(path, kind, hint, fmt, lazy, privacy_key, facts):
    """What ``h5py.File`` opens for `open_checked`, over one open of ``path``: the
    plaintext of an encrypted file (decrypted in memory), else the sealed file (checked
    per chunk read when ``lazy``, else whole, before HDF5 parses it). Fills ``facts``."""
    from ssgallery.formats import encryption
    from ssgallery.formats.readonly import opened
    from ssgallery.formats.seal import SealedFile

    handle, st = opened(path, kind, hint)
    try:
        head = os.pread(handle.fileno(), len(encryption.MAGIC), 0)
    except OSError as exc:
        handle.close()
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None
    facts.update(bytes=st.st_size, encrypted=encryption.is_encrypted(head), seal=None)
    if facts["encrypted"]:
        if lazy:
            return encryption.EncryptedFile(path, kind, fmt, privacy_key, handle=handle)
        return encryption.decrypt(path, kind, fmt, privacy_key, handle=handle)
    source = SealedFile(path, kind, handle=handle)  # raw bytes first: HDF5 never parses a
    facts["seal"] = hashlib.sha256(source.head).hexdigest()  # damaged byte
    if not lazy:
        try:
            source.check_all()
        except BaseException:
            source.close()
            raise
    return source


def open_checked(path, fmt, version, kind, hint="", rewrite="", lazy=False,
                 privacy_key=None, oldest=None, facts=None):
    """Open ``path`` read-only after checking it is an ssgallery file of format ``fmt``
    and a version from ``oldest`` (default: ``version``) to ``version``.

    The path is opened once: the seal (or the encryption) is checked on that
    descriptor and HDF5 reads that descriptor, never the path again, so what was checked
    is what is read.

    ``lazy``: check the seal of each chunk of the file when HDF5 first reads it
    (`ssgallery.formats.seal.SealedFile`), for readers of a small part of a big
    file; otherwise the whole file is checked before HDF5 opens it.

    ``privacy_key``: the host's privacy key (bytes), needed to read an encrypted file
    (decrypted in memory, each chunk authenticated: `ssgallery.formats.encryption`).

    ``facts``: a dict, filled with what that open found: ``bytes`` (the file's size),
    ``encrypted`` (bool) and ``seal`` (SHA-256 hex of its seal; None when encrypted).

    Raises `FormatError` (one line naming the file) when it is missing, not a
    regular file, not HDF5, of another format, with a ``format_version`` that is not an
    integer attribute (`_version`), of a format version older than ``oldest``
    (``rewrite`` says how to write it anew) or newer than ``version``, or encrypted and
    the key is missing or another.
    """
    import h5py

    from ssgallery.formats.integrity import checked_key

    path = os.fspath(path)
    privacy_key = checked_key(privacy_key, "privacy")  # given to a plain file's reader too
    source = _source(path, kind, hint, fmt, lazy, privacy_key, {} if facts is None else facts)
    try:
        handle = h5py.File(source, "r")
    except OSError:
        source.close()
        raise FormatError(f"not an {kind} (not a readable HDF5 file; corrupt or foreign)",
                          path=path) from None
    except BaseException:
        source.close()
        raise
    try:
        found = attr_str(bounded_attr(handle, "format", path))
    except (KeyError, ValueError, TypeError, OSError, RuntimeError):  # HDF5 errors
        handle.close()
        raise FormatError(f"corrupt {kind}: unreadable format tag", path=path) from None
    except FormatError:  # bounded_attr's: a tag larger than any ssgallery writes
        handle.close()
        raise
    if found != fmt:
        handle.close()
        from ssgallery.formats.kinds import other_kind

        raise FormatError(other_kind(kind, fmt, found), path=path)
    try:
        found_version = _version(bounded_attr(handle, "format_version", path))
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # HDF5 errors
        handle.close()
        raise FormatError(f"corrupt {kind}: {exc}", path=path) from None
    except FormatError:
        handle.close()
        raise
    if found_version > version:
        handle.close()
        raise FormatError(f"{kind} format version {found_version} is newer than this ssgallery "
                          f"supports ({version}); upgrade ssgallery", path=path)
    if found_version < (oldest or version):
        handle.close()
        # what a rewrite gives: any version read (a gallery of float64 prototypes is 2)
        written = " or ".join(str(v) for v in range(oldest or version, version + 1))
        raise FormatError(f"{kind} format version {found_version} has no integrity digest and "
                          f"is no longer read; {rewrite or 'write it again'} (version {written})",
                          path=path)
    return handle


def _version(value):
    """The ``format_version`` attribute as an int: a whole number stored as an integer
    (what `write_header` writes), never a string ("3"), a float (3.0), a bool or an
    array, which a writer of ours never gives (ValueError naming what was found)."""
    if is_int(value):
        return int(value)
    raise ValueError(f"format_version must be an integer, found {shown(value, typed=True)}")


def attr_str(value):
    """An HDF5 attribute as text.

    Parameters
    ----------
    value : bytes, str, number or None
        As h5py reads it (bytes are decoded as UTF-8, bad bytes replaced).

    Returns
    -------
    str or None
        None for None.
    """
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def write_state(group, state):
    """Write a dict of arrays / numbers / strings / JSON-able values into ``group``."""
    json_keys = []
    for key, value in state.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            group.create_dataset(key, data=value)
        elif isinstance(value, (str, bool, int, float, np.integer, np.floating, np.bool_)):
            group.attrs[key] = value
        else:  # lists (e.g. a command line), dicts, string arrays: JSON, never pickle
            if isinstance(value, np.ndarray):
                value = value.tolist()
            group.attrs[key] = jsontext.dumps(value)
            json_keys.append(key)
    group.attrs[_JSON_KEYS] = jsontext.dumps(json_keys)


def read_state(group, path=None):
    """Inverse of `write_state`: (state, digest of the group).

    Every member must be a hard link to a plain dataset (see
    `ssgallery.formats.integrity.read_group`)."""
    from ssgallery.formats.integrity import read_group

    arrays, attrs, digest = read_group(group, path)
    return decode_state(arrays, attrs), digest


def decode_state(arrays, attrs):
    """The state dict from a group's datasets and attributes (see `write_state`)."""
    json_keys = set(json.loads(attr_str(attrs.get(_JSON_KEYS, "[]"))))
    state = dict(arrays)
    for key, value in attrs.items():
        if key == _JSON_KEYS:
            continue
        if key in json_keys:
            state[key] = json.loads(attr_str(value))
        elif isinstance(value, (bytes, str)):
            state[key] = attr_str(value)
        elif isinstance(value, np.generic):
            state[key] = value.item()
        else:
            state[key] = value
    return state


def build_matcher(name, config, state, path=None, host=None):
    """Rebuild a fitted matcher from what a store or gallery holds, bound to the host's
    settings ``host`` (`ssgallery.matchers.host.HostMatcher`; default: from the
    environment and configuration file, see `ssgallery.matchers.host.host_matcher`).
    A matcher that runs no program names a ``--matcher-cmd`` it ignores
    (`ssgallery.matchers.host.name_unused`).
    """
    from ssgallery.matchers import get_matcher_class

    try:
        cls = get_matcher_class(name)
    except SsgalleryError as exc:
        raise FormatError(f"needs {exc}", path=path) from None
    try:
        matcher = cls.from_state(config, state)
    except SsgalleryError as exc:
        raise FormatError(f"bad matcher state for '{name}': {exc}", path=path) from None
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise FormatError(f"corrupt matcher state for '{name}': {exc}", path=path) from None
    from ssgallery.matchers.host import attached, host_matcher, name_unused, runs_program

    if runs_program(type(matcher)):  # its refusals name the file (lazy: first run)
        return attached(matcher, host if host is not None else host_matcher(), path)
    name_unused(host, name, path)
    return matcher


MAX_CLIENT_ID_BYTES = 200


def client_id_problem(name):
    """Why ``name`` cannot be a client id (None when it can).

    A client id is a name, never a path: valid UTF-8 of 1 to 200 bytes, without ``/``,
    ``\\``, control characters, a leading dot, or leading/trailing white space."""
    if not isinstance(name, str) or not name:
        return "empty client id"
    if len(name) > MAX_CLIENT_ID_BYTES:  # as many bytes at least: not copied to count them
        return f"client id longer than {MAX_CLIENT_ID_BYTES} bytes"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "client id is not valid UTF-8"
    if size > MAX_CLIENT_ID_BYTES:
        return f"client id longer than {MAX_CLIENT_ID_BYTES} bytes"
    if "/" in name or "\\" in name:
        return "client id contains a slash"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or ord(c) in (0x2028, 0x2029)
           for c in name):
        return "client id contains a control character"
    if name.startswith("."):
        return "client id starts with a dot"
    if name != name.strip():
        return "client id starts or ends with white space"
    return None


def split_ids(text):
    """The client ids of a comma-separated ``--clients``/``--background`` value.

    A comma inside an id is written ``\\,`` (``--clients 'doe\\, jane,c01'``): no id
    holds a backslash (`client_id_problem`), so the escape is never ambiguous. Each id
    is stripped of surrounding white space; empty ones are dropped.

    Parameters
    ----------
    text : str
        The value as typed.

    Returns
    -------
    list of str
    """
    import re

    pieces = [p.replace("\\,", ",") for p in re.split(r"(?<!\\),", text)]
    return [p.strip() for p in pieces if p.strip()]


def comma_hint(known):
    """``"; a comma inside an id is written '\\,' ..."`` when one of the ``known`` ids holds
    a comma (a value naming it unescaped was split), else ``""``."""
    held = next((c for c in known if "," in str(c)), None)
    if held is None:
        return ""
    typed = str(held).replace(",", "\\,")
    return f"; a comma inside an id is written '\\,' (e.g. '{typed}')"


def state_digest(state):
    """SHA-256 hex of a matcher state dict (arrays by dtype, shape and bytes; other values
    as JSON): equal digests = the same matcher basis (``compress --update`` compares the
    gallery's and the store's)."""
    import hashlib

    h = hashlib.sha256()
    for key in sorted(state):
        value = state[key]
        h.update(key.encode() + b"\0")
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            h.update(f"{value.dtype.str}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        else:
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif isinstance(value, np.generic):
                value = value.item()
            h.update(json.dumps(value, sort_keys=True).encode())
        h.update(b"\0")
    return h.hexdigest()
