"""Standard JSON text (RFC 8259) for everything ssgallery writes as JSON.

Python's ``json.dumps`` writes the floats NaN, +inf and -inf as ``NaN``, ``Infinity`` and
``-Infinity`` unless told otherwise: not JSON (``jq``, JavaScript's ``JSON.parse`` and
every strict parser refuse the whole text). Every JSON text ssgallery writes for a user
or a script goes through `dumps`: each command's ``--json``, ``roc``'s ``summary.json``,
the side-cars of score files, and the JSON records of a gallery's or a store's header
(the 1:N operating point, the threshold calibration, each client's provenance and
normalisation, the matcher's configuration). A float that is not finite is written as
``null`` (as JavaScript's ``JSON.stringify`` does). A reader for which such a value
means something maps ``null`` back: a hazard of a gallery's 1:N curve is +inf where
every held-out search passes (`ssgallery.formats.gallery.header_open_set`).

Reading is unchanged: Python's json module still reads the ``Infinity`` of files written
before. Digests that hash a JSON text (a store's fingerprint, a part's run key, an
external matcher's contract) keep their own ``json.dumps``: they are never read back.

Standard library only; below every other layer.
"""

import json
import math

__all__ = ["dumps", "finite_or_none"]


def finite_or_none(value):
    """``value`` with every float that is not finite replaced by None, in dicts, lists
    and tuples at any depth (tuples become lists, as JSON has them); anything else as
    it is."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def dumps(value, **kwargs):
    """Standard JSON text of ``value``: `finite_or_none` of it, written by
    ``json.dumps(..., allow_nan=False, **kwargs)`` (``indent``, ``sort_keys``, ...)."""
    return json.dumps(finite_or_none(value), allow_nan=False, **kwargs)
