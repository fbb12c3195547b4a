"""What a score file says about itself: its side-car ``<file>.json`` (or the ``#`` lines
of an older ssgallery file), read as input like any other: a regular file of at most
`ssgallery.safeio.MAX_TEXT_BYTES` (never a FIFO waited on, never a device read
without end), and every value checked before the evaluation uses it (`checked_meta`).
A value of another type or out of range is one line naming the file, never an
internal error or a figure computed from it."""

import json
import math

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, shown
from ssgallery.errors import InputError
from ssgallery.formats.kinds import NEWEST_VERSIONS
from ssgallery.safeio import MAX_TEXT_BYTES, read_regular

MAGIC = "ssgallery-scores"  # the format of a side-car (and of an older file's '#' line)
# the side-car's format_version, the newest this code reads (and writes): the one list
SIDECAR_VERSION = NEWEST_VERSIONS[MAGIC]
# per-client values that count something: >= 0 and below EXACT_INT (their means and
# spreads over clients are summed: 1e308 overflowed there, numpy's warning on stderr)
NON_NEGATIVE = ("matches", "fit_seconds")


def float_or_none(value):
    """A per-client value of a side-car or of an older file's ``#`` line as a float.

    Parameters
    ----------
    value : float, str or None
        ``None`` and ``"none"`` (how an older file writes a missing value) mean unknown.

    Returns
    -------
    float or None

    Raises
    ------
    ValueError
        A value that is no number.
    """
    return None if value in (None, "none") else float(value)


def read_sidecar(side, magic):
    """The side-car ``side`` as a dict (its ``format`` is ``magic``); `InputError`
    ``bad score metadata (...)`` naming it otherwise."""
    return sidecar_meta(read_regular(side, "score metadata", MAX_TEXT_BYTES), magic, side)


def sidecar_meta(data, magic, side):
    """The bytes ``data`` of the side-car ``side`` as a dict: what `read_sidecar` reads
    (`sidecar_version`, and a version no newer than `SIDECAR_VERSION`;
    `ssgallery.biometrics.scores`' writers replace only a side-car `sidecar_version`
    accepts, and never a newer one, even forced).

    Parameters
    ----------
    data : bytes
    magic : str
        The ``format`` the side-car must carry.
    side : str
        Names the side-car in messages.

    Returns
    -------
    dict

    Raises
    ------
    InputError
        Not JSON, not an object of format ``magic``, a ``format_version`` that is no
        integer >= 1 or newer than `SIDECAR_VERSION`.
    """
    meta, version = sidecar_version(data, magic, side)
    if version > SIDECAR_VERSION:
        raise InputError(f"score metadata format version {version} is newer than this "
                         f"ssgallery reads ({SIDECAR_VERSION}); upgrade ssgallery", path=side)
    return meta


def sidecar_version(data, magic, side):
    """``(meta, format_version)`` of the side-car bytes ``data``, whatever the version
    (`sidecar_meta` refuses a newer one; a writer refuses to replace one,
    `ssgallery.formats.writable.refuse_newer`). `InputError` ``bad score metadata
    (...)`` for what is no side-car of format ``magic``, or a ``format_version`` that
    is no integer >= 1 (absent, in a hand-written one: `SIDECAR_VERSION`)."""
    try:
        meta = json.loads(data.decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != magic:
            raise ValueError(f"format is not {magic!r}")
        version = meta.get("format_version", SIDECAR_VERSION)  # hand-written: may lack it
        if not is_int(version) or version < 1:
            raise ValueError(f"format_version must be an integer >= 1, got "
                             f"{shown(version, typed=True)}")
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise InputError(f"bad score metadata ({str(exc)[:200]})", path=side) from None
    return meta, int(version)


def _whole(name, value, low, where):
    """``value`` as an int >= ``low``: an integer, or the digits of an older file's
    ``#`` line (a string)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if not is_int(value) or not low <= value < EXACT_INT:
        raise InputError(f"bad score metadata: {name} must be an integer >= {low}, got "
                         f"{shown(value, typed=True)}", path=where)
    return int(value)


def _client_values(client, info, where):
    if not isinstance(info, dict):
        raise InputError(f"bad score metadata: client {shown(client)}: expected an object, "
                         f"got {shown(info, typed=True)}", path=where)
    out = {}
    for key, value in info.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):  # not known
            out[key] = None
            continue
        if not is_finite_real(value) or (key in NON_NEGATIVE
                                         and not 0 <= value < EXACT_INT):
            sign = "a non-negative " if key in NON_NEGATIVE else "a "
            below = " below 2**53" if key in NON_NEGATIVE else ""
            raise InputError(f"bad score metadata: client {shown(client)}: {key} must be "
                             f"{sign}finite number{below} or null, got "
                             f"{shown(value, typed=True)}", path=where)
        out[key] = float(value)
    return out


def checked_meta(meta, clients, method, m, repetition, where):
    """``(method, m, repetition, clients)`` of a score file: ``meta``'s values where it
    has them (``m`` None or ``"none"`` for no m), else the ones given (from the file's
    name); ``clients`` {id: {name: float or None}}. ``where`` names the file that
    holds the metadata in the `InputError` of a value that is not what a writer writes."""
    method = meta.get("method", method)
    if not isinstance(method, str) or not method:
        raise InputError(f"bad score metadata: method must be a name, got "
                         f"{shown(method, typed=True)}", path=where)
    m = meta.get("m", m)
    m = None if m in (None, "none") else _whole("m", m, 1, where)
    repetition = _whole("repetition", meta.get("repetition", repetition), 0, where)
    if clients is None:
        clients = {}
    if not isinstance(clients, dict):
        raise InputError(f"bad score metadata: clients must be an object, got "
                         f"{shown(clients, typed=True)}", path=where)
    return method, m, repetition, {str(c): _client_values(c, info, where)
                                   for c, info in clients.items()}
