"""Options objects checked once, where they come in: the base class (`CheckedOptions`),
the field declaration (`checked_field`) and the value checks that the options of
``compress`` and ``roc`` (`ssgallery.app.options`) and of the protocol
(`ssgallery.biometrics.protocol.ProtocolOptions`) share.

A check is ``check(name, value) -> value``: it returns the value normalised (``int``,
``float``, ``bool``) or raises `ssgallery.errors.InputError` naming the parameter with
`ssgallery.errors.option` (the command line shows it as its flag). Bools are refused
where a number is expected, as are NaN and infinity, and numbers where a bool is
expected (`flag_bool`: 0 and 1 are no flags, "no" is no false).

A value read from a file is checked with the same predicates (`is_int`, `is_bool`,
`is_finite_real`); `stored_flag` reads a yes/no value as a file stores it, and
`shown` (``typed=True``) says what a file held instead.
"""

import json
from dataclasses import field, fields

import numpy as np

from ssgallery.errors import InputError, option, printable


def is_int(value):
    """An integer (Python or numpy), not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def is_bool(value):
    """A bool (Python or numpy), not an integer nor a string: 0, 1, "no" and "false" are
    none (as `is_int` keeps the bools out of the integers)."""
    return isinstance(value, (bool, np.bool_))


def is_real(value):
    """A real number (Python or numpy, integer or float), not a bool nor a string."""
    return not isinstance(value, (bool, np.bool_)) \
        and isinstance(value, (int, float, np.integer, np.floating))


EXACT_INT = 2 ** 53  # integers of smaller magnitude are held exactly by a float


def is_finite_real(value):
    """A finite real number (`is_real`: a bool or a string is none), as a file's JSON
    or an option gives one: a float that is neither NaN nor infinite, or an integer of
    magnitude below 2**53 (`EXACT_INT`: one a float holds exactly; a JSON integer
    beyond it, such as 10**400, which no float holds, is none). Never raises."""
    if is_int(value):
        return -EXACT_INT < value < EXACT_INT
    return is_real(value) and bool(np.isfinite(value))


def positive_int(name, value):
    if not is_int(value) or value < 1:
        raise InputError(f"{option(name)} must be a positive integer, got {value!r}")
    return int(value)


def jobs_int(name, value):
    """A number of local worker processes: positive, or -1 for one per core
    (`ssgallery.learn.threads.worker_count`)."""
    if not is_int(value) or value == 0 or value < -1:
        raise InputError(f"{option(name)} must be a positive integer or -1 (one per core), "
                         f"got {value!r}")
    return int(value)


def non_negative_int(name, value):
    if not is_int(value) or value < 0:
        raise InputError(f"{option(name)} must be a non-negative integer, got {value!r}")
    return int(value)


def real(name, value):
    """``value`` as a float; a bool or a non-number is refused."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{option(name)} must be a number, got {value!r}") from None


def non_negative(name, value):
    """A finite number >= 0 (NaN and infinity are refused)."""
    if not 0.0 <= real(name, value) < np.inf:
        raise InputError(f"{option(name)} must be >= 0 and finite, got {value}")
    return float(value)


def parses_as_float(text):
    """True when ``float(text)`` reads ``text`` (a field of an external matcher's output,
    a rate typed as ``1%`` without its sign)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def not_a_fraction(value, low_open=False):
    """Why the number ``value`` is no rate: None when it is one, in [0, 1) ((0, 1) with
    ``low_open``); else ``"a fraction in (0, 1), got 2 (a rate is a fraction, not a
    percentage: 0.02 for 2 %)"`` (the hint for a value a percentage would give; ``value``
    a string: a percentage as typed, ``"2%"``, always refused so), the
    words every rate option's refusal uses (`probability`, `open_rate` and the command
    line's `ssgallery.cli.options.Fraction`)."""
    interval = f"{'(' if low_open else '['}0, 1)"
    if isinstance(value, str):  # a percentage as typed: "1%"
        percent = float(value.strip().removesuffix("%"))
        return (f"a fraction in {interval}, got {value.strip()} (a rate is a fraction, not a "
                f"percentage: {percent / 100:g} for {percent:g} %)")
    if (0.0 < value if low_open else 0.0 <= value) and value < 1.0:
        return None
    hint = (f" (a rate is a fraction, not a percentage: {value / 100:g} for {value:g} %)"
            if 1.0 <= value < 100.0 else "")
    return f"a fraction in {interval}, got {value:g}{hint}"


def probability(name, value):
    """A rate in [0, 1) (`not_a_fraction`)."""
    problem = not_a_fraction(real(name, value))
    if problem:
        raise InputError(f"{option(name)} must be {problem}")
    return float(value)


def open_rate(name, value):
    """A rate in (0, 1) (`not_a_fraction`)."""
    problem = not_a_fraction(real(name, value), low_open=True)
    if problem:
        raise InputError(f"{option(name)} must be {problem}")
    return float(value)


def seed_int(name, value):
    """A random seed: an integer in [0, 2**32 - 1] (what numpy and scikit-learn take)."""
    if not is_int(value) or not 0 <= value < 2 ** 32:
        raise InputError(f"{option(name)} must be an integer from 0 to 2**32 - 1, "
                         f"got {value!r}")
    return int(value)


def one_of(*choices):
    def check(name, value):
        if value not in choices:
            raise InputError(f"{option(name)} must be one of {', '.join(choices)}, "
                             f"got {value!r}")
        return value
    return check


def flag_bool(name, value):
    """A yes/no option as a ``bool``: a bool, Python or numpy (`is_bool`). Anything else
    is refused, 0 and 1 included (the types are kept apart, as `is_int` refuses a bool):
    ``guard="no"`` or ``force=[]`` is no flag."""
    if not is_bool(value):
        raise InputError(f"{option(name)} must be true or false, got {value!r}")
    return bool(value)


# ------------------------------------------------------------------- values of files

def shown(value, *, typed=False):
    """A refused value, for a message: at most 40 characters of its spelling, a numpy
    scalar as its Python value.

    ``typed=False`` (an option's value, a program's JSON answer): a string or a number as
    Python writes it (``'no'``, ``0``, ``nan``), anything else as its JSON says it
    (``true``, ``null``, ``["0", "1"]``). ``typed=True`` (what a file held where a value
    of some kind belongs, where ``str 'false'`` and ``bool False`` differ): ``nothing``,
    ``an array of shape (2,)``, or its type and its Python spelling (``str 'false'``,
    ``int 2``, ``bool True``), printable.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if typed and (value is None or isinstance(value, np.ndarray)):
        return "nothing" if value is None else f"an array of shape {value.shape}"
    text = repr(value)
    if not typed and (not isinstance(value, (str, int, float)) or isinstance(value, bool)):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):  # not a JSON value (an array of the state)
            pass
    return printable(f"{type(value).__name__} {text[:40]}") if typed else text[:40]


def stored_flag(name, value):
    """A yes/no value read from a file (an HDF5 attribute or a matcher state), as a
    ``bool``: what our writers write, a bool (h5py reads one back as ``numpy.bool_``) or
    an integer 0 or 1 (the external matcher's state), Python or numpy, or a 0-d array of
    one. Anything else, a string ("false" or "0"), another integer (2), a float (0.0),
    an array, raises ValueError naming ``name`` and what was found (`shown`; the
    caller names the file): ``symmetric must be 0 or 1 (or a bool), found str 'false'``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if is_bool(value) or (is_int(value) and value in (0, 1)):
        return bool(value)
    raise ValueError(f"{name} must be 0 or 1 (or a bool), found {shown(value, typed=True)}")


# ------------------------------------------------------------------- the objects' base

def checked_field(default, check=None, **metadata):
    """A field of a `CheckedOptions` dataclass: its default and ``check(name, value) ->
    value`` (raises `ssgallery.errors.InputError` naming the parameter with
    `ssgallery.errors.option`, returns the value normalised); ``metadata`` for the
    class's own use (e.g. how ``compress`` digests it)."""
    return field(default=default, metadata={"check": check, **metadata})


class CheckedOptions:
    """Base of a frozen options dataclass: checks every field (`checked_field`) once
    when built; `to_dict` / `from_dict`."""

    def __post_init__(self):
        for f in fields(self):
            check = f.metadata.get("check")
            if check is not None:
                object.__setattr__(self, f.name, check(f.name, getattr(self, f.name)))

    @classmethod
    def from_dict(cls, values):
        """The object from ``{field: value}`` (`to_dict`'s output); unknown names are
        refused, missing ones take their default."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InputError(f"unknown {cls.__name__} option(s): {', '.join(unknown)}")
        return cls(**values)

    def to_dict(self):
        """``{field: value}`` of every field."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
