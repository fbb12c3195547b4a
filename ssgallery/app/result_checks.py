"""What ``compress`` accepts as a client's trained model from outside this process: a
committed part (`ssgallery.app.parts`) or a Dask worker's result.

Both are data (issue 20): `check_result` refuses, with one line naming where the result
came from, anything the training code of this host could not have produced: another
client, arrays of the wrong kind or shape, non-finite values, prototypes implausible in
the matcher space or a threshold that accepts every probe (the gallery's own
`ssgallery.formats.gallery.check_model`), a bad score normalisation, held-out scores
that are not finite 1-D arrays no longer than the store, oversized metadata. A
result that passes is plausible, not authentic: authenticity comes from the host's
signing key (parts) or a trusted cluster (Dask; docs/security.md).
"""

import json

import numpy as np

from ssgallery.errors import SsgalleryError, printable

MAX_META_BYTES = 1 << 16  # the JSON of a result's provenance and summary row


def worker_result(data, waiting, context, where):
    """A Dask worker's bytes (`ssgallery.app.parts.encode_result`) as a checked
    `ClientResult` of one of the clients still ``waiting`` (``context``: see
    `check_result`). Raises `SsgalleryError` (one line)."""
    from ssgallery.app.parts import decode_result

    result, _ = decode_result(data, where)
    if result.client not in waiting:
        raise SsgalleryError(f"a worker returned client '{printable(str(result.client)[:80])}'"
                             ", which this run did not ask for (or already has)", path=where)
    check_result(result, result.client, context, where)
    return result


def check_result(result, client, context, where):
    """Refuse a `ssgallery.app.parts.ClientResult` that this host's training could not
    have produced for ``client`` (see the module docstring).

    Parameters
    ----------
    result : ClientResult
    client : str
        The client it must be.
    context : tuple
        ``(matcher, similarity, n_images)``: the run's matcher (dimension, plausible
        prototypes), its similarity (parameters and bounds) and the number of images in
        the store (no held-out score array is longer).
    where : str
        Where the result came from, for the message.

    Raises
    ------
    SsgalleryError
        One line: ``<where>: <problem>``.
    """
    from ssgallery.formats.gallery import ClientModel, check_model
    from ssgallery.formats.gallery.checks import check_normalization

    matcher, similarity, n_images = context

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
    except (TypeError, ValueError, KeyError) as exc:
        refuse(f"bad values ({str(exc)[:120]})")
    if not isinstance(result.provenance, dict) or not isinstance(result.row, dict) \
            or len(meta) > MAX_META_BYTES:
        refuse("provenance and summary row must be small JSON objects")
    if not np.isfinite(times).all() or (times[2:] < 0).any():
        refuse("non-finite intercept, threshold or times")
    _check_heldout(result.heldout, n_images, refuse)
    model = ClientModel(client_id=client, prototypes=result.prototypes, beta=result.beta,
                        intercept=float(result.intercept), threshold=float(result.threshold),
                        similarity=similarity.params(), provenance={})
    check_model(model, matcher, where)


def _check_heldout(heldout, n_images, refuse):
    """Scores: finite 1-D float arrays, at most ``n_images`` long; ``impostor_row`` (the
    store row of each impostor score): integers in [0, n_images), one per score."""
    if heldout is None:
        return
    if not isinstance(heldout, dict) or \
            not set(heldout) <= {"impostor", "genuine", "impostor_row"}:
        refuse("held-out scores must be 'impostor', 'genuine' and 'impostor_row' arrays")
    for name, values in heldout.items():
        kind = "iu" if name == "impostor_row" else "f"
        if not isinstance(values, np.ndarray) or values.dtype.kind not in kind \
                or values.ndim != 1 or len(values) > n_images:
            refuse(f"held-out {name} must be a 1-D array of at most {n_images}")
        if kind == "f" and not np.isfinite(values).all():
            refuse(f"held-out {name} scores are not finite")
        if kind == "iu" and len(values) and (values.min() < 0 or values.max() >= n_images
                                              or len(values) != len(heldout["impostor"])):
            refuse("held-out impostor rows are not rows of the store")
