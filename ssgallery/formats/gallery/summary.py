"""What ``ssgallery info`` shows about a gallery: `gallery_summary` (every client's row
from the stacked index), `client_summary` (one client in full) and the threshold
calibration and the 1:N operating point recorded in the header (`header_calibration`,
`header_open_set`: `ssgallery.formats.gallery.header_records`)."""

import os

import numpy as np

from ssgallery.errors import FormatError
from ssgallery.formats.encryption import distinct_keys
from ssgallery.formats.gallery.checked_reads import (
    OPEN_ARGS,
    client_groups,
    read_clients,
    read_stacked,
    state_bytes,
)
from ssgallery.formats.gallery.checks import check_open_set_threshold
from ssgallery.formats.gallery.header_records import (  # noqa: F401  (public here too)
    CALIBRATION_ATTR,
    OPEN_SET_ATTR,
    OPEN_SET_KIND,
    header_calibration,
    header_open_set,
)
from ssgallery.formats.gallery.model import FORMAT, FORMAT_VERSION, KIND, model_bytes
from ssgallery.formats.gallery.read import read_client
from ssgallery.formats.hdf5 import open_checked


def gallery_summary(path, *, svm=False, privacy_key=None, key=None):
    """What ``ssgallery info`` shows about a gallery, as a JSON-able dict.

    Per client: m, the bytes of the model verification reads (prototypes as the file
    stores them, uint8 or float64 (``prototype_dtype``), + float64 beta + b + threshold:
    `model_bytes`) and the threshold, from the header, the client
    index and the stacked ``/index`` (a few contiguous reads whatever the number of
    clients), after checking the seal of the whole file, the root digest, the index's and
    the matcher's digests, the index's values (`read_stacked`) and that the client
    groups are the ones the client index lists (no client group is opened).

    Parameters
    ----------
    path : str or Path
    svm : bool
        Also compare each client with its full SVM (support vectors stored as the
        prototypes are + dual coefficients + b + threshold, from the client's
        provenance): #SVs, bytes, ratio, the SVM's
        threshold, and the bytes of the rendered images. Reads and checks every client
        group (`read_gallery`'s checks: O(N) group opens). Without it those fields are
        None.
    privacy_key : bytes, optional
        The host's privacy key, needed for an encrypted gallery. Protected templates are
        summarised as stored, with or without it (their prototypes are not checked
        against the matcher: they are plausible only through the key).
    key : bytes, optional
        The host's signing key: an unsigned gallery, or one signed with another key or
        edited since, is refused as ``verify`` refuses it (`read_client`'s ``key``); every
        client group is then read and checked against its digest in the signed client
        index, as ``svm`` does (O(N) group opens): the check before deploying a gallery.

    Returns
    -------
    dict
        Header fields, ``clients`` (one dict per client, in id order), totals,
        ``svm_compared`` (``svm``), and `signature_fields`.
    """
    path = os.fspath(path)
    distinct_keys(key, privacy_key)
    header, config, index, built, state, provenance, size = _read_summary(path, svm,
                                                                          privacy_key, key)
    return {"path": path, **_described(header, config, index, built, path),
            "file_bytes": size, "matcher_state_bytes": state_bytes(state),
            **_sizes(index, provenance, svm), **signature_fields(header, key)}


def _dimension(index):
    """The prototypes' dimension (None in a gallery without clients)."""
    return int(index.prototypes.shape[1]) if index.n_clients else None


def _described(h, config, index, built, path):
    """`gallery_summary`'s fields of the header (``h``), the matcher (``built``) and the
    operating points the header records, the 1:N threshold checked as ``identify``
    checks it (the deploy check)."""
    open_set = header_open_set(h, index.client_ids, path)
    if open_set is not None and index.n_clients:  # identify's refusal: the deploy check
        check_open_set_threshold(index, open_set["threshold"], open_set["scale"], built, path)
    return {"format": h.get("format"), "format_version": h.get("format_version"),
            "tool_version": h.get("tool_version"), "created": h.get("created"),
            "matcher": h["matcher"], "matcher_config": config,
            "matcher_settings": built.settings(), "dimension": _dimension(index),
            "matcher_contract": built.recorded_contract(),
            "prototype_dtype": index.prototype_dtype,
            "image_shape": h.get("image_shape"), "target_far": h.get("target_far"),
            "threshold_mode": h.get("threshold_mode", "client"),
            "calibration": header_calibration(h, index.client_ids, path),
            "open_set": open_set,
            "basis_stale": h.get("basis_stale", False),  # a bool: checked by open_verified
            "fta_folds": built.fta_folds_,  # `ssgallery.matchers.Matcher.fta_folds_`
            "store": h.get("store"),  # the path compressed from
            "store_fingerprint": h.get("store_fingerprint")}  # the store compressed


def _sizes(index, provenance, svm):
    """`gallery_summary`'s client rows (`_summary_row`, from the stacked index and, with
    ``svm``, each client's ``provenance``) and their totals."""
    itemsize = np.dtype(index.prototype_dtype).itemsize
    rows = [_summary_row(cid, int(m), _dimension(index), float(t), provenance.get(cid),
                         itemsize)
            for cid, m, t in zip(index.client_ids, np.diff(index.offsets), index.threshold)]
    total = sum(r["bytes"] for r in rows)
    total_svm = sum(r["svm_bytes"] or 0 for r in rows) if svm else None
    return {"n_clients": len(rows), "clients": rows, "bytes_total": total,
            "svm_compared": bool(svm), "svm_bytes_total": total_svm,
            "ratio": total_svm / total if total and total_svm else None}


def _read_summary(path, svm, privacy_key, key):
    """`gallery_summary`'s checked reads: ``(header, config, index, built matcher, matcher
    state, provenance per client id, the file's size)`` (provenance read only with
    ``svm``; every client group read and checked with ``svm`` or a ``key``; the size from
    the open that was checked and read)."""
    opened = {}
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **OPEN_ARGS,
                      privacy_key=privacy_key, facts=opened) as f:
        try:
            # the templates as stored (protected ones unchecked): nothing is scored
            header, config, rows, index, built, state = read_stacked(
                f, path, key, None, None, required=False)
            provenance = {}
            if svm or key is not None:
                # every client group read and checked against the client index: the
                # signature covers them only through their digests there
                models = read_clients(f, path, rows, built, False)
                provenance = {cid: m.provenance for cid, m in models.items()} if svm else {}
            else:
                client_groups(f, path, rows)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return header, config, index, built, state, provenance, opened["bytes"]


def signature_fields(header, key):
    """``signed`` (the gallery carries a signature) and ``signature_checked`` (it was
    checked with the host's ``key`` and matches it: a reader given a key refuses any
    other gallery) of a gallery read with ``key``."""
    return {"signed": "hmac" in header, "signature_checked": key is not None}


def client_summary(path, client_id, privacy_key=None, key=None):
    """One client's row of `gallery_summary` with the full-SVM comparison, and the
    client's similarity, intercept, normalisation and provenance (how it was trained).
    Reads and checks what `read_client` does: the header, the client index, the
    matcher's state and that client's group only, whatever the number of clients (``privacy_key``: an encrypted
    gallery's; ``key``: the host's signing key, checked as `gallery_summary` does).

    Returns
    -------
    dict
        The row, plus ``gallery`` (the path), ``similarity``, ``intercept``,
        ``normalization``, ``provenance``, ``matcher_contract`` (as `gallery_summary`'s)
        and `signature_fields`.

    Raises
    ------
    SsgalleryError
        Unknown client (see `read_client`).
    """
    path = os.fspath(path)
    model = read_client(path, client_id, images=True, privacy_key=privacy_key, key=key,
                        required=False)  # the matcher: its recorded program contract
    m, d = model.prototypes.shape
    images = 0 if model.prototype_images is None else int(model.prototype_images.size)
    row = _summary_row(model.client_id, int(m), int(d), model.threshold,
                       dict(model.provenance, bytes_images=images),
                       np.dtype(model.prototype_dtype).itemsize)
    row["prototype_dtype"] = model.prototype_dtype
    row.update(gallery=path, similarity=model.similarity, intercept=model.intercept,
               normalization=model.normalization, provenance=model.provenance,
               matcher_contract=model.matcher.recorded_contract(),
               **signature_fields(model.header, key))
    return row


def _summary_row(cid, m, d, threshold, provenance, itemsize):
    """One client's row of `gallery_summary` (``provenance``: None when not read); the
    prototypes, and the full SVM's support vectors with them, of ``itemsize`` bytes a
    value (the stored dtype's: a black box's support vectors are training images, whole
    numbers like its prototypes)."""
    p = provenance or {}
    n_sv = p.get("svm_n_support")
    svm_bytes = None if n_sv is None else model_bytes(n_sv, d, itemsize)
    size = model_bytes(m, d, itemsize)
    return {"client": cid, "m": m, "bytes": size, "bytes_images": p.get("bytes_images"),
            "svm_n_support": n_sv, "svm_bytes": svm_bytes,
            "ratio": None if svm_bytes is None else svm_bytes / size,
            "threshold": threshold, "svm_threshold": p.get("svm_threshold")}
