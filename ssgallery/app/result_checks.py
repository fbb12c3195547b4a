"""What ``compress`` accepts as a client's trained model from outside this process: a
committed part (`ssgallery.app.parts`) or a Dask worker's result.

Both are data (issue 20): `check_result` refuses, with one line naming where the result
came from, anything the training code of this host could not have produced: another
client, arrays of the wrong kind or shape, non-finite values, prototypes implausible in
the matcher space, a threshold that accepts every probe or weights beyond the
training objective its provenance records (the gallery's own
`ssgallery.formats.gallery.check_model`), held-out scores that are not the three finite
1-D arrays training returns (``impostor`` scores, at least one, their store rows, and
``genuine`` scores; none longer than the store), a threshold and a Z-norm that are not
those of its held-out impostor scores at the run's target FAR (the calibration sets the
final thresholds from those scores: `ssgallery.app.thresholds`), a provenance without
the numbers of the summary, oversized metadata. The summary row is then the host's
own (`ssgallery.app.client_training.summary_row` of the checked values): nothing a
result says is printed as it came. A result that passes is plausible, not authentic:
authenticity comes from the host's signing key (parts) or a trusted cluster (Dask;
docs/security.md).
"""

import json

import numpy as np

from ssgallery.checks import EXACT_INT, is_finite_real, is_int, is_real
from ssgallery.errors import SsgalleryError, printable

MAX_META_BYTES = 1 << 16  # the JSON of a result's provenance and summary row
RESULT_SLACK = 1 << 20  # bytes: a result's zip headers and the cluster's message framing


def max_result_bytes(context, m):
    """The most bytes a Dask worker's result can take in this run (`worker_result`;
    the cluster's messages to ``compress`` are bounded by it,
    `ssgallery.app.parallel.DaskLimits`): prototypes and beta (at most ``m`` rows, for
    ``m="auto"`` the largest the search and the guard try, of the matcher's dimension),
    three held-out arrays no longer than the store, the metadata (at most
    `MAX_META_BYTES` of JSON held as UTF-32, and the few other values), float64 each,
    plus `RESULT_SLACK`; never more than a committed part
    (`ssgallery.app.client_result.MAX_PART_BYTES`), which is also the bound when the matcher's
    dimension is unknown.

    Parameters
    ----------
    context : tuple
        As `check_result`'s: ``(matcher, similarity, n_images, target_far)``.
    m : int or "auto"
        The run's ``CompressOptions.m``.

    Returns
    -------
    int
    """
    from ssgallery.app.client_fit import AUTO_M_GRID
    from ssgallery.app.client_result import MAX_PART_BYTES

    matcher, _, n_images, _ = context
    ceiling = MAX_PART_BYTES + RESULT_SLACK
    d = matcher.dimension()
    if d is None:
        return ceiling
    rows = max(AUTO_M_GRID) + 1 if m == "auto" else int(m)
    arrays = 8 * (rows * (int(d) + 1) + 3 * n_images)
    return int(min(ceiling, arrays + 8 * MAX_META_BYTES + RESULT_SLACK))


def worker_result(data, waiting, context, where):
    """A Dask worker's bytes (`ssgallery.app.client_result.encode_result`) as a checked
    `ClientResult` of one of the clients still ``waiting`` (``context``: see
    `check_result`). Raises `SsgalleryError` (one line)."""
    from ssgallery.app.client_result import decode_result

    result, _ = decode_result(data, where)
    if result.client not in waiting:
        raise SsgalleryError(f"a worker returned client '{printable(str(result.client)[:80])}'"
                             ", which this run did not ask for (or already has)", path=where)
    check_result(result, result.client, context, where)
    return result


def check_result(result, client, context, where):
    """Refuse a `ssgallery.app.client_result.ClientResult` that this host's training could not
    have produced for ``client`` (see the module docstring).

    Parameters
    ----------
    result : ClientResult
    client : str
        The client it must be.
    context : tuple
        ``(matcher, similarity, n_images, target_far)``: the run's matcher (dimension,
        plausible prototypes), its similarity (parameters and bounds), the number of
        images in the store (no held-out score array is longer) and the target FAR
        (the threshold is that of the held-out impostor scores at it).
    where : str
        Where the result came from, for the message.

    Raises
    ------
    SsgalleryError
        One line: ``<where>: <problem>``.
    """
    from ssgallery.formats.gallery import ClientModel, check_model
    from ssgallery.formats.gallery.checks import check_normalization

    matcher, similarity, n_images, target_far = context

    def refuse(problem):
        raise SsgalleryError(f"client '{printable(client)}': {problem}", path=where)

    if result.client != client:
        refuse(f"the result is for client '{printable(str(result.client)[:80])}'")
    for name in ("prototypes", "beta"):
        if not isinstance(getattr(result, name), np.ndarray):
            refuse(f"{name} is not an array")
    try:
        check_normalization(result.normalization) if result.normalization is not None \
            else None
        meta = json.dumps([result.provenance, result.row], allow_nan=False)
        times = np.array([result.intercept, result.threshold, result.seconds,
                          result.cpu_seconds], dtype=float)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        refuse(f"bad values ({str(exc)[:120]})")
    if not isinstance(result.provenance, dict) or not isinstance(result.row, dict) \
            or len(meta) > MAX_META_BYTES:
        refuse("provenance and summary row must be small JSON objects")
    if not np.isfinite(times).all() or (times[2:] < 0).any():
        refuse("non-finite intercept, threshold or times")
    _check_heldout(result.heldout, n_images, refuse)
    _check_calibration_inputs(result, target_far, refuse)
    result.row = _summary_row(result, refuse)
    model = ClientModel(client_id=client, prototypes=result.prototypes, beta=result.beta,
                        intercept=float(result.intercept), threshold=float(result.threshold),
                        similarity=similarity.params(), provenance=result.provenance)
    check_model(model, matcher, where)  # its weights within its objective too


def check_calibrated(results, clients, context, where):
    """Refuse final thresholds that accept every probe, after the calibration over every
    client (`ssgallery.app.thresholds.apply`): held-out scores consistent with each
    result's own threshold (`check_result`) can still, pooled, calibrate to one.

    Parameters
    ----------
    results : dict of str to ClientResult
    clients : iterable of str
        The clients whose thresholds this run set.
    context : tuple
        As `check_result`'s.
    where : dict of str to str
        Where each client's held-out scores (or, for an update, the calibration they
        join) came from, for the message (a client not in it: this host's training).

    Raises
    ------
    SsgalleryError
        One line naming the client and where its scores came from.
    """
    from ssgallery.formats.gallery import ClientModel, check_model

    matcher, similarity = context[:2]
    for c in clients:
        r = results[c]
        model = ClientModel(client_id=c, prototypes=r.prototypes, beta=r.beta,
                            intercept=float(r.intercept), threshold=float(r.threshold),
                            similarity=similarity.params(), provenance={})
        try:
            check_model(model, matcher)
        except SsgalleryError as exc:
            raise SsgalleryError(f"{exc} after the calibration of every client's threshold; "
                                 "its held-out scores, or the calibration an update joins, "
                                 "are not what compress gives", path=where.get(c)) from None


def _check_heldout(heldout, n_images, refuse):
    """Scores: finite 1-D float arrays, at most ``n_images`` long, at least one impostor
    score; ``impostor_row`` (the store row of each impostor score): integers in
    [0, n_images), one per score."""
    if not isinstance(heldout, dict) or \
            set(heldout) != {"impostor", "genuine", "impostor_row"}:
        refuse("held-out scores must be 'impostor', 'genuine' and 'impostor_row' arrays")
    for name, values in heldout.items():
        kind = "iu" if name == "impostor_row" else "f"
        if not isinstance(values, np.ndarray) or values.dtype.kind not in kind \
                or values.ndim != 1 or len(values) > n_images:
            refuse(f"held-out {name} must be a 1-D array of at most {n_images}")
        if kind == "f" and not np.isfinite(values).all():
            refuse(f"held-out {name} scores are not finite")
    rows = heldout["impostor_row"]
    if len(rows) != len(heldout["impostor"]) or (len(rows) and (rows.min() < 0
                                                                or rows.max() >= n_images)):
        refuse("held-out impostor rows are not rows of the store, one per score")
    if not len(heldout["impostor"]):
        refuse("no held-out impostor score (the thresholds are set from them)")


def _check_calibration_inputs(result, target_far, refuse):
    """The threshold and the Z-norm training derives from the held-out impostor scores
    (`ssgallery.app.client_training.train_client`) must be theirs: the calibration
    sets the final threshold from the scores and the Z-norm, so a threshold checked on
    its own would not be the one the gallery gets. Scores whose Z-norm overflows (finite
    ones of 1e308: numpy's warning on the terminal) are refused first."""
    from ssgallery.app.client_training import threshold_at_far
    from ssgallery.biometrics.heldout import znorm_parameters

    impostor = result.heldout["impostor"]
    with np.errstate(over="ignore", invalid="ignore"):  # refused below, not a warning
        own = znorm_parameters(impostor)
    if not (np.isfinite(own["mean"]) and np.isfinite(own["std"])):
        refuse("held-out impostor scores whose mean or spread overflows a float")
    if result.threshold != threshold_at_far(impostor, target_far):
        refuse(f"threshold {result.threshold:.6g} is not that of its held-out impostor "
               f"scores at the target FAR")
    norm = result.normalization
    values = [norm.get(k) for k in ("mean", "std")] if isinstance(norm, dict) else []
    if len(values) != 2 or set(norm) != set(own) or norm["kind"] != "znorm" \
            or norm["n"] != own["n"] \
            or not all(isinstance(v, float) for v in values) \
            or not np.isclose(values, [own["mean"], own["std"]], rtol=1e-9, atol=0).all():
        refuse("Z-norm is not that of its held-out impostor scores")


def checked_row(result, where):
    """``result``'s summary row built from its checked provenance numbers (what
    `check_result` does; also for the clients an update copies from an unsigned
    gallery, whose provenance is as much data). Raises `SsgalleryError` (one line)."""

    def refuse(problem):
        raise SsgalleryError(f"client '{printable(result.client)}': {problem}", path=where)

    return _summary_row(result, refuse)


_COUNTS = ("m", "svm_n_support", "n_impostor")
_RATES = ("cv_far", "cv_frr", "svm_cv_frr")


def _summary_row(result, refuse):
    """The client's summary row built here from the checked values and the provenance's
    numbers (`_COUNTS`: integers, ``m`` the number of prototypes; `_RATES` in [0, 1];
    ``svm_threshold``, ``omega`` finite; ``teacher_gap`` finite or None; ``cv_off_scale``
    and ``frr_heldout`` absent or a pair of counts, `_off_scale_ok`)."""
    from ssgallery.app.client_training import summary_row

    p = result.provenance

    def number(name, kind=float):
        value = p.get(name)
        if not (is_real(value) if kind is float else is_int(value)):
            refuse(f"provenance '{name}' is not a number")
        if not is_finite_real(value):
            refuse(f"provenance '{name}' is not a finite number")
        return value

    if number("m", int) != len(result.beta) or any(number(n, int) < 0 for n in _COUNTS) \
            or any(not 0 <= number(n) <= 1 for n in _RATES):
        refuse("provenance counts or rates out of range")
    number("svm_threshold"), number("omega")
    if p.get("teacher_gap") is not None:
        number("teacher_gap")
    if not _off_scale_ok(p.get("cv_off_scale")):
        refuse("provenance 'cv_off_scale' is not [accepted, impostors] whole numbers")
    if not _off_scale_ok(p.get("frr_heldout")):
        refuse("provenance 'frr_heldout' is not [rejected, genuine] whole numbers")
    return summary_row(result.client, p, result.threshold, result.beta, result.intercept,
                       result.normalization)


def _off_scale_ok(value):
    """A provenance's ``cv_off_scale`` (`ssgallery.app.client_fit`; compress names the
    client and prints the pair) or ``frr_heldout`` (`ssgallery.app.thresholds.apply`):
    absent, or ``[accepted, impostors]`` (``[rejected, genuine]``) whole numbers with
    0 <= the first <= the second and the second >= 1."""
    if value is None:
        return True
    whole = isinstance(value, list) and len(value) == 2 and all(map(is_int, value))
    return whole and 0 <= value[0] <= value[1] and 1 <= value[1] < EXACT_INT
