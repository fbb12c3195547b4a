"""The external-matcher contract's answers: parsing them, bounding them, and the
contract's digest (docs/external-matcher.md).

A program's ``--describe`` JSON (`parse_describe`), its score or quality matrix
(`parse_matrix`, at most `answer_limit` bytes) and the SHA-256 that a store or gallery
keeps of the contract (`contract_digest`). Nothing here runs a program: see
`ssgallery.matchers.external.oneshot` and `ssgallery.matchers.external.serve`.
"""

import hashlib
import json
import math

import numpy as np

from ssgallery.checks import is_bool, is_finite_real, parses_as_float, shown
from ssgallery.errors import MatcherError
from ssgallery.tables import counted

MAX_ANSWER_BASE = 1 << 20  # bytes of a program's output, plus ...
MAX_ANSWER_PER_PAIR = 64  # ... this many per scored pair
QUALITY_MARGIN = 0.5  # threshold: lowest training quality - this x (median - lowest)


def answer_limit(n_pairs):
    """Most bytes a program's answer may hold for ``n_pairs`` scored pairs."""
    return MAX_ANSWER_BASE + MAX_ANSWER_PER_PAIR * int(n_pairs)


def parse_describe(out, program):
    """A program's ``--describe`` answer (bytes), checked.

    Returns
    -------
    raw : dict
        The JSON object as printed (what `contract_digest` hashes).
    desc : dict
        Normalised: ``kind`` ("similarity" or "distance"), ``symmetric`` (bool),
        ``range`` ([lo, hi], lo < hi) and ``quality`` (bool).

    Raises
    ------
    MatcherError
        Not a JSON object with a valid kind, or a field of another type than the
        contract's (`DESCRIBE_FLAGS` and ``range``, `_range`): one line naming
        ``program``. An answer is never read as what it is not: ``"serve": "yes"`` is
        no ``true``, ``"range": ["0", "1"]`` no numbers.
    """
    try:
        raw = json.loads(out.decode("utf-8"))
        kind = raw["kind"]
    except (ValueError, KeyError, TypeError, RecursionError):  # nested past the stack
        raise MatcherError(f"matcher {program} --describe did not print a JSON object with "
                           f"a 'kind': {_printed(out)}") from None
    if kind not in ("similarity", "distance"):
        raise MatcherError(f"matcher {program} --describe: kind must "
                           f"be 'similarity' or 'distance', not {shown(kind)}")
    for flag in DESCRIBE_FLAGS:
        if not is_bool(raw.get(flag, False)):
            raise MatcherError(f"matcher {program} --describe: {flag} must be true or "
                               f"false, got {shown(raw[flag])}")
    desc = {"kind": kind, "symmetric": raw.get("symmetric", False),
            "range": _range(raw.get("range", [-np.inf, np.inf]), program),
            "quality": raw.get("quality", False)}
    return raw, desc


def _printed(out):
    """What a program printed (bytes), for a message: its first line (60 characters at
    most), or that it printed nothing (a banner before the JSON is seen as such)."""
    lines = out.decode("utf-8", "replace").strip().splitlines()
    if not lines:
        return "it printed nothing on stdout"
    more = f" and {counted(len(lines) - 1, 'more line')}" if len(lines) > 1 else ""
    return f"it printed {lines[0].strip()[:60]!r}{more}"


DESCRIBE_FLAGS = ("symmetric", "quality", "serve")  # JSON booleans, false when absent


def _range(value, program):
    """The described ``range`` as [lo, hi] floats: two JSON numbers (not a string nor a
    boolean; -Infinity and Infinity for an open end, a finite one `is_finite_real`),
    lo < hi."""
    numbers = isinstance(value, list) and len(value) == 2 and all(
        is_finite_real(v) or isinstance(v, float) and math.isinf(v) for v in value)
    if not (numbers and value[0] < value[1]):
        raise MatcherError(f"matcher {program} --describe: range must be [lo, hi], two "
                           f"numbers with lo < hi, got {shown(value)}")
    return [float(v) for v in value]


def described_differently(program, stored, described):
    """The one-line refusal of a file whose stored description of the external matcher
    (``stored``: kind, symmetric, range, quality) is not what ``program`` describes
    (``described``, `parse_describe`'s ``desc``) although the contract digests agree:
    the digest covers the program's ``--describe`` answer, not the file's copy of it, so
    the file's copy was edited. Names each field that differs, as JSON says it."""
    fields = [k for k in sorted(described) if stored.get(k) != described[k]]
    said = ", ".join(f"{k}: {shown(stored.get(k))}" for k in fields)
    says = ", ".join(f"{k}: {shown(described[k])}" for k in fields)
    return (f"matcher {program}: the file says {said}, the program describes itself as "
            f"{says}, with the contract digest the file records (the file's stored "
            "description was edited: restore the file or make it again)")


def contract_digest(describe_json, config):
    """SHA-256 (hex) of a program's whole ``--describe`` JSON and the stored config."""
    text = json.dumps({"describe": describe_json, "config": config}, sort_keys=True,
                      separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


RANGE_TOLERANCE = 1e-6  # relative to the range's width: printing rounds the last digit


def parse_matrix(text, shape, program, bounds=None, quality=False, empty="an empty answer"):
    """Parse the program's answer into a finite float matrix of ``shape``; with
    ``bounds`` = (lo, hi), every value must lie in it (values beyond it by less than
    `RANGE_TOLERANCE` of its width, printing's rounding, are clipped to it). ``quality``:
    the answer of a ``--quality-list`` request (shape (n, 1)), named as such. ``empty``:
    what an answer of no number was (``ProgramClient._call``: an empty answer file, or
    none written and nothing on stdout).

    Raises
    ------
    MatcherError
        One line naming ``program`` (and ``--quality-list``): an empty answer, the first
        token that is no number with its line, the row count or lengths, the first
        score that is not finite.
    """
    who = f"matcher {program}" + (" --quality-list" if quality else "")
    expected = (counted(shape[0], "quality", "qualities") + ", one per line" if quality
                else f"a {shape[0]} x {shape[1]} matrix")
    rows = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not rows:
        raise MatcherError(f"{who} returned nothing ({empty}), expected {expected}")
    for n, row in rows:
        bad = next((v for v in row if not parses_as_float(v)), None)
        if bad is not None:  # before the shape: a banner line is no extra row
            raise MatcherError(f"{who} returned a non-number {bad[:40]!r} (line {n} of its "
                               f"answer), expected {expected}{_commas(bad, row, shape)}")
    rows = [row for _, row in rows]
    if len(rows) != shape[0] or any(len(r) != shape[1] for r in rows):
        raise MatcherError(_shape_refused(rows, shape, who, expected, quality))
    S = np.array([[float(v) for v in r] for r in rows], dtype=float).reshape(shape)
    if not np.all(np.isfinite(S)):
        i, j = np.argwhere(~np.isfinite(S))[0]
        first = f"image {i}" if quality else f"probe {i}, gallery {j}"
        raise MatcherError(f"{who} returned {int((~np.isfinite(S)).sum())} "
                           f"non-finite score(s) (first: {first}: {S[i, j]})")
    return S if bounds is None else _within(S, bounds, program)


def _commas(bad, row, shape):
    """What a non-number ``bad`` of the answer's line ``row`` (its tokens) with commas in
    it says of the layout: a row of as many tokens as ``shape`` has columns, each a number
    with a decimal comma ('0,93', a locale's), or numbers separated by commas
    ('1.5,2.5'); "" otherwise."""
    if not any(parses_as_float(v) for v in bad.replace(";", ",").split(",") if v):
        return ""
    if len(row) == shape[1] and all(parses_as_float(v.replace(",", ".", 1)) for v in row):
        return " (a decimal comma: the numbers are written with a decimal point, 0.5, " \
            "whatever the program's locale)"
    return " (numbers separated by white space, not commas)"


def _shape_refused(rows, shape, who, expected, quality):
    """The line refusing an answer of ``rows`` (lists of tokens) that is not ``shape``:
    its row count or row lengths; a score matrix (not ``quality``) of gallery x probe
    says it is transposed."""
    got = counted(len(rows), "row") if len(rows) != shape[0] else "rows of " + "/".join(
        sorted({str(len(r)) for r in rows}))
    transposed = not quality and shape[0] != shape[1] and len(rows) == shape[1] and all(
        len(r) == shape[0] for r in rows)
    return (f"{who} returned {got}, expected {expected}" + (
        f" (it returned the {shape[1]} x {shape[0]} transpose: the contract's rows are the "
        "--probe-list images, its columns the --gallery-list images)" if transposed else ""))


def _within(S, bounds, program):
    """``S`` clipped to ``bounds`` after checking that no value lies beyond them."""
    lo, hi = (float(b) for b in bounds)
    width = hi - lo if np.isfinite(hi - lo) else 1.0  # a half-open range: absolute slack
    slack = RANGE_TOLERANCE * max(width, 1.0)
    outside = (S < lo - slack) | (S > hi + slack)
    if outside.any():
        i, j = np.argwhere(outside)[0]
        raise MatcherError(f"matcher {program} returned {int(outside.sum())} score(s) outside "
                           f"its range [{lo:g}, {hi:g}] (first: probe {i}, gallery {j}: "
                           f"{S[i, j]:g})")
    return np.clip(S, lo, hi)


def quality_threshold(quality):
    """The quality a probe needs to be a face, from the training images' (n,): the
    lowest minus `QUALITY_MARGIN` times its distance to the median (every training
    image passes; a probe must look at least nearly as much like a face)."""
    q = np.asarray(quality, dtype=float)
    low = float(q.min())
    return low - QUALITY_MARGIN * (float(np.median(q)) - low)
