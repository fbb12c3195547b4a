"""HDF5 helpers shared by the store and the gallery: opening a checked ssgallery file,
matcher state as plain datasets/attributes (never pickled), rebuilding a matcher.

On the ``verify`` path: h5py and numpy only.
"""

import json
import os

import numpy as np

from ssgallery.errors import FormatError, SsgalleryError

_JSON_KEYS = "_json_keys"


def now_utc():
    """Creation time stamp, ISO 8601 UTC, seconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0).isoformat()


def open_checked(path, fmt, version, kind, hint=""):
    """Open ``path`` read-only after checking it is an ssgallery file of format ``fmt``.

    Raises :class:`FormatError` (one line naming the file) when it is missing, not
    HDF5, of another format, or of a newer format version.
    """
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FormatError(f"no such {kind}{hint}", path=path)
    if os.path.isdir(path):
        raise FormatError(f"is a folder, expected an {kind} file", path=path)
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise FormatError(f"not an {kind} (not a readable HDF5 file; corrupt or foreign)",
                          path=path) from None
    found = _attr_str(handle.attrs.get("format"))
    if found != fmt:
        handle.close()
        what = f"format '{found}'" if found else "no ssgallery format tag"
        raise FormatError(f"not an {kind} ({what}, expected '{fmt}')", path=path)
    try:
        found_version = int(handle.attrs.get("format_version"))
    except (TypeError, ValueError):
        handle.close()
        raise FormatError(f"corrupt {kind}: bad format_version", path=path) from None
    if found_version > version:
        handle.close()
        raise FormatError(f"{kind} format version {found_version} is newer than this ssgallery "
                          f"supports ({version}); upgrade ssgallery", path=path)
    return handle


def _attr_str(value):
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
            group.attrs[key] = json.dumps(value)
            json_keys.append(key)
    group.attrs[_JSON_KEYS] = json.dumps(json_keys)


def read_state(group):
    """Inverse of :func:`write_state`."""
    json_keys = set(json.loads(_attr_str(group.attrs.get(_JSON_KEYS, "[]"))))
    state = {key: group[key][()] for key in group}
    for key, value in group.attrs.items():
        if key == _JSON_KEYS:
            continue
        if key in json_keys:
            state[key] = json.loads(_attr_str(value))
        elif isinstance(value, (bytes, str)):
            state[key] = _attr_str(value)
        elif isinstance(value, np.generic):
            state[key] = value.item()
        else:
            state[key] = value
    return state


def build_matcher(name, config, state, path=None):
    """Rebuild a fitted matcher from what a store or gallery holds."""
    from ssgallery.matchers import get_matcher_class

    try:
        cls = get_matcher_class(name)
    except SsgalleryError as exc:
        raise FormatError(f"needs {exc}", path=path) from None
    try:
        return cls.from_state(config, state)
    except SsgalleryError:
        raise
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt matcher state for '{name}': {exc}", path=path) from None
