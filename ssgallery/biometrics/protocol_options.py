"""What the protocol runs (`ProtocolOptions`, Sect. IV-A), checked once when built, as the
options of ``compress`` are (`ssgallery.checks`); `ssgallery.biometrics.protocol` runs it.
"""

from dataclasses import dataclass

import numpy as np

from ssgallery.checks import (
    CheckedOptions,
    checked_field,
    flag_bool,
    is_int,
    jobs_int,
    non_negative,
    positive_int,
    seed_int,
)
from ssgallery.errors import InputError, option
from ssgallery.learn.defaults import DEFAULT_BETWEEN

DEFAULT_METHODS = ("svm", "ssvm", "svm-red", "svm-sel")
SSVM_METHODS = ("ssvm", "ssvm-paper")  # the distillers ``between`` applies to


def _methods(name, value):
    """A tuple of method names and (name, m) pairs; one name alone is one method."""
    entries = (value,) if isinstance(value, str) else tuple(value)
    if not entries:
        raise InputError("no methods to compare")
    out = []
    for entry in entries:
        if isinstance(entry, (tuple, list)) and len(entry) == 2 \
                and isinstance(entry[0], str) and entry[0] and is_int(entry[1]) \
                and entry[1] >= 1:
            out.append((entry[0], int(entry[1])))
        elif isinstance(entry, str) and entry:
            out.append(entry)
        else:
            raise InputError(f"{option(name)} takes method names and (name, m) pairs with "
                             f"m a positive integer, got {entry!r}")
    _once(name, out)
    return tuple(out)


def _once(name, values):
    """Refuse a method or an m listed twice: it would be trained and counted twice, as
    two repetitions of one row (and one score file written over the other)."""
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise InputError(f"{option(name)} lists {twice!r} twice")


def _prototype_counts(name, value):
    """A tuple of positive integers; one integer alone is one value; None: the default."""
    if value is None:
        return None
    m = [value] if np.isscalar(value) else list(value)
    if not m or not all(is_int(v) for v in m):
        raise InputError(f"{option(name)} must be one or more positive integers, "
                         f"got {value!r}")
    if any(v < 1 for v in m):
        raise InputError(f"the number of prototypes m must be at least 1, got "
                         f"{[int(v) for v in m]}")
    _once(name, [int(v) for v in m])
    return tuple(int(v) for v in m)


def _optional_positive_int(name, value):
    return None if value is None else positive_int(name, value)


def _method_options(name, value):
    """``{variant name: {keyword: value}}`` copied (None: no extra options)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, dict) for k, v in value.items()):
        raise InputError(f"{option(name)} must map method names to dicts of options, "
                         f"got {value!r}")
    return {k: dict(v) for k, v in value.items()}


def _norm_folds(name, value):
    if not is_int(value) or value < 0 or value == 1:
        raise InputError(f"the normalisation folds must be 0 (none) or at least 2, got "
                         f"{value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class ProtocolOptions(CheckedOptions):
    """What `run_protocol` runs (Sect. IV-A), checked once when built
    (`ssgallery.checks`: a bool or a fraction where an integer is expected is refused,
    and anything but a bool, 0 and 1 included, where a bool is).

    Attributes
    ----------
    methods : tuple of str or (str, int)
        Names known to `ssgallery.biometrics.methods.make_method` (or variants named in
        ``method_options``); ``"svm"`` is the teacher. A pair ``(name, m)`` runs that
        method at that m only. One name alone is taken as one method. Each entry once.
    m : tuple of int, optional
        Prototypes per client (an int is taken as one value, each value once); every
        method except ``"svm"`` runs at each value. None (default): ``(DEFAULT_M,)``
        (`ssgallery.learn.defaults`), or ``(BLACK_BOX_M,)`` on a black-box store
        (`ssgallery.app.roc.roc_store`), as ``compress`` trains it.
    n_enrolled : int, optional
        Enrolled clients per repetition (default: half of the subjects); with n_train,
        repetitions and seed, see `make_splits` (which checks them against the labels).
    n_train, repetitions : int
        Positive.
    seed : int
        From 0 to 2**32 - 1.
    n_jobs : int
        Parallel client fits (joblib); 1 runs in this process, -1 one per core.
    identification : bool
        Also search: score every genuine probe against every client (not only its own),
        so that each table carries a full search in ``table.search``.
    norm_folds : int
        With ``identification``: folds of the held-out normalisation of each method's
        scores (`ssgallery.biometrics.heldout.heldout_normalisation`, as ``compress``
        sets each client's Z-norm: its training impostors held out by subject), whose
        parameters the search tables carry per client (``norm_mean``, ``norm_std``) so
        that searches are ranked as deployed; 0 ranks raw scores (cheaper: every
        client is refitted once per fold and method).
    method_options : dict name -> dict
        Extra keyword arguments for `ssgallery.biometrics.methods.make_method`.
        A ``"method"`` entry makes ``name`` a variant of that registry method (e.g.
        ``{"ssvm-lam6": {"method": "ssvm", "lam": 1e-6}}``), so several settings of one
        method share each client's teacher; its tables carry the variant's name.
        ``"svm"``: keyword arguments of the teacher every method shares
        (`ssgallery.learn.teacher.SimilaritySVM`, e.g. ``{"svm": {"at_bound":
        "libsvm"}}``).
    between : float
        The super-sparse SVMs (`SSVM_METHODS` and their variants) also distil the SVM's
        scores at points half-way between each client's training images and its
        impostors', with this total weight relative to the training images', as
        ``compress --between`` does (`ssgallery.learn.targets.between_points`;
        analytic matchers only); default `ssgallery.learn.defaults.DEFAULT_BETWEEN`, as
        ``compress``; 0: the paper's training images only. A variant whose
        ``method_options`` set ``between`` keeps its own.
    """

    methods: tuple = checked_field(DEFAULT_METHODS, _methods)
    m: tuple = checked_field(None, _prototype_counts)
    n_enrolled: int = checked_field(None, _optional_positive_int)
    n_train: int = checked_field(5, positive_int)
    repetitions: int = checked_field(5, positive_int)
    seed: int = checked_field(0, seed_int)
    n_jobs: int = checked_field(1, jobs_int)
    identification: bool = checked_field(False, flag_bool)
    method_options: dict = checked_field(None, _method_options)  # noqa: RUF009 (a field())
    norm_folds: int = checked_field(5, _norm_folds)
    between: float = checked_field(DEFAULT_BETWEEN, non_negative)
