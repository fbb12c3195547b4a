"""Reading a gallery file, every part checked before use (layout and checks:
`ssgallery.formats.gallery`): one client (`read_client`, the verify path), the stacked
search index (`read_search`, 1:N) or every client (`read_gallery`)."""

import contextlib
import json
import os

import numpy as np

from ssgallery.checks import stored_flag
from ssgallery.errors import FormatError, SsgalleryError, UnknownClientError, printable
from ssgallery.formats import integrity
from ssgallery.formats.gallery.checks import check_index, check_model, check_normalization
from ssgallery.formats.gallery.model import (
    FORMAT,
    FORMAT_VERSION,
    KIND,
    OLDEST_VERSION,
    ClientModel,
    Gallery,
    model_bytes,
)
from ssgallery.formats.hdf5 import (
    _attr_str,
    build_matcher,
    client_id_problem,
    decode_state,
    open_checked,
)
from ssgallery.formats.protect import keyed_templates, unprotect_models
from ssgallery.formats.prototypes import stored_values
from ssgallery.formats.seal import SealMismatch
from ssgallery.formats.search_index import read_index

_OPEN = {"hint": " (run 'ssgallery compress' first)",
         "rewrite": "re-run 'ssgallery compress' to write it", "oldest": OLDEST_VERSION}
_LAZY = dict(_OPEN, lazy=True)  # readers of a few groups: constant work whatever N


def _model_from(client_id, arrays, attrs, path, version):
    """The `ClientModel` of a client group's arrays and attributes, read from a gallery
    of format ``version`` (the prototypes' stored dtype checked against it and read back
    as float64: `ssgallery.formats.prototypes.stored_values`)."""
    try:
        prototypes, dtype = stored_values(arrays["prototypes"], version,
                                          f"client '{printable(client_id)}'", path)
        model = ClientModel(
            client_id=client_id, prototypes=prototypes, beta=arrays["beta"],
            intercept=float(attrs["intercept"]), threshold=float(attrs["threshold"]),
            similarity=json.loads(_attr_str(attrs["similarity"])),
            provenance=json.loads(_attr_str(attrs.get("provenance", "{}"))),
            prototype_images=arrays.get("prototype_images"),
            normalization=(check_normalization(json.loads(_attr_str(attrs["normalization"])))
                           if "normalization" in attrs else None),
            prototype_dtype=dtype)
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery: client '{client_id}': {exc}", path=path) from None
    if not isinstance(model.similarity, dict) or not isinstance(model.provenance, dict):
        raise FormatError(f"corrupt gallery: client '{client_id}': similarity and provenance "
                          "must be JSON objects", path=path)
    return model


def _header(attrs, path):
    """(header, matcher config) from the root attributes: numpy values as Python ones,
    the image shape, matcher and config checked, ``basis_stale`` a flag
    (`ssgallery.checks.stored_flag`); `FormatError` otherwise."""
    header = {}
    for name, value in attrs.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        header[name] = _attr_str(value) if isinstance(value, bytes) else value
    try:
        shape = tuple(int(v) for v in header["image_shape"])
        config = json.loads(header["matcher_config"])
        if len(shape) != 2 or min(shape) < 1 or not isinstance(config, dict) \
                or not isinstance(header["matcher"], str):
            raise ValueError("bad image_shape, matcher or matcher_config")
        if "basis_stale" in header:  # absent in galleries written before it: False
            header["basis_stale"] = stored_flag("basis_stale", header["basis_stale"])
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery header: {exc}", path=path) from None
    header["image_shape"] = list(shape)
    return header, config


def _open_verified(f, path, key):
    """Root attributes, header, matcher config, section digests and client index of an
    open gallery, after checking the signature (with a key) and the root digest."""
    attrs = dict(f.attrs.items())
    digest = _attr_str(attrs.get("digest"))
    integrity.check_signature(attrs, digest or "", key, "gallery", path)
    index = integrity.check_node(f, "client_index", path)[()]
    if index.dtype.names != ("id", "digest") or index.ndim != 1 \
            or index.dtype["id"].kind != "S" or index.dtype["digest"] != np.dtype("S64"):
        raise FormatError("corrupt gallery: bad client index", path=path)
    integrity.check_digest(integrity.root_digest(attrs, index), digest,
                           "the header or the client index", path)
    header, config = _header(attrs, path)
    sections = integrity.section_digests(attrs, path)
    return header, config, sections, index


def _index_ids(index, path):
    try:
        return [i.decode("utf-8") for i in index["id"]]
    except UnicodeDecodeError:
        raise FormatError("corrupt gallery: a client id in the index is not UTF-8",
                          path=path) from None


def _read_matcher(f, header, config, sections, path, host, privacy_key=None, required=True):
    """(matcher, state, template map) of an open gallery: the map puts protected
    prototypes back (None for plain templates, or without the key when not
    ``required``: `ssgallery.formats.protect.keyed_templates`)."""
    arrays, attrs, digest = integrity.read_group(integrity.check_node(f, "matcher", path), path)
    integrity.check_digest(digest, sections.get("matcher"), "the matcher state", path)
    try:
        state = decode_state(arrays, attrs)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"corrupt matcher state: {exc}", path=path) from None
    matcher = build_matcher(header["matcher"], config, state, path, host=host)
    missing = [k for k in getattr(type(matcher), "FTA_STATE", ()) if k not in state]
    if missing:
        raise FormatError(f"refused: the matcher state has no failure-to-acquire limits "
                          f"('{missing[0]}' missing): every probe would be acquired; re-run "
                          "'ssgallery compress'", path=path)
    shape = getattr(matcher, "image_shape", None)
    if shape is not None and list(shape) != header["image_shape"]:
        raise FormatError(f"corrupt gallery: image_shape {header['image_shape']} differs from "
                          f"the matcher's {list(shape)}", path=path)
    return (*keyed_templates(matcher, header, privacy_key, path, required), state)


def _read_one(clients, client_id, expected, path):
    g = integrity.check_node(clients, client_id, path)
    arrays, attrs, digest = integrity.read_group(g, path)
    integrity.check_digest(digest, expected, f"client '{client_id}'", path)
    return _model_from(client_id, arrays, attrs, path, int(clients.file.attrs["format_version"]))


def _unknown_client(path, client_id, known, digest=None):
    """`UnknownClientError` naming a few ``known`` ids; attributes ``hint`` (did you mean)
    and ``digest`` (the gallery's recorded digest, for a caller that compares its reads:
    `ssgallery.formats.integrity.unchanged`)."""
    from ssgallery.tables import did_you_mean

    shown = ", ".join(printable(k) for k in known[:8]) + (
        f", ... ({len(known)} in all)" if len(known) > 8 else "")
    hint = did_you_mean([client_id], known)
    error = UnknownClientError(f"unknown client '{printable(client_id)}'"
                               + (f": {hint}" if hint else "")
                               + f" (known: {shown or 'none'})", path=path)
    error.hint, error.digest = hint, digest
    return error


def _client_from(f, path, client_id, key, host, matcher, privacy_key, required=True):
    """(model, matcher or None, header) of `read_client`, from the open file."""
    try:
        header, config, sections, index = _open_verified(f, path, key)
        want = client_id.encode("utf-8", "surrogateescape") \
            if isinstance(client_id, str) else b""
        row = int(np.searchsorted(index["id"], want))
        if client_id_problem(client_id) or row >= len(index) or index["id"][row] != want:
            raise _unknown_client(path, client_id, _index_ids(index, path),
                                  header.get("digest"))
        expected = index["digest"][row].decode("ascii", "replace")
        clients = integrity.check_node(f, "clients", path)
        model = _read_one(clients, client_id, expected, path)
        built = None
        if matcher:
            built, tmap, _ = _read_matcher(f, header, config, sections, path, host,
                                           privacy_key, required)
            if tmap is not None:
                unprotect_models([model], tmap)
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
        raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return model, built, header


def read_client(path, client_id, *, images=False, matcher=True, key=None, host=None,
                privacy_key=None, required=True):
    """Read one client's model and the gallery's matcher, and nothing else.

    Parameters
    ----------
    path : str or Path
        The gallery file.
    client_id : str
        A name looked up in the client index, never an HDF5 path.
    images : bool
        Keep the rendered prototype images (for ``show``).
    matcher : bool
        Rebuild the matcher from the stored state (attribute ``matcher`` of the result).
    key : bytes, optional
        The host's signing key: an unsigned or wrongly signed gallery is refused.
    host : HostMatcher, optional
        The host's matcher program (default: from the environment / configuration).
    privacy_key : bytes, optional
        The host's privacy key: reads an encrypted gallery
        (`ssgallery.formats.encryption`), and gives the keyed matcher of protected
        templates (`ssgallery.formats.protect`; refused without it when ``matcher``).
    required : bool
        False: a protected gallery's matcher read without ``privacy_key`` is an
        `ssgallery.formats.protect.UnkeyedMatcher`, its templates left as stored
        (``info``), not a refusal.

    Returns
    -------
    model : ClientModel
        With extra attributes ``matcher`` (or None) and ``header`` (dict).

    Raises
    ------
    FormatError
        Missing, foreign, corrupt, edited, unsigned (with a key), older or newer gallery,
        or insane values.
    UnknownClientError
        Unknown client id (the message lists a few known ids).
    """
    path = os.fspath(path)
    try:
        with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_LAZY,
                          privacy_key=privacy_key) as f:
            model, built, header = _client_from(f, path, client_id, key, host, matcher,
                                                privacy_key, required)
    except SealMismatch as exc:  # bit rot in a part of the file this read needs
        raise exc.naming(f"while reading client '{printable(client_id)}'") from None
    check_model(model, built, path)
    if not images:
        model.prototype_images = None
    model.header = header
    model.matcher = built
    return model


def _read_stacked(f, path, key, host, privacy_key=None, required=True):
    """What the stacked readers (``identify``, ``info``) need from an open gallery, all
    checked: signature (with ``key``), root digest, ``/index`` digest and consistency
    (`ssgallery.formats.search_index.read_index`), the matcher's digest, and the
    index against the matcher (dimension, plausible prototypes) and the client index.
    Opens no client group. ``privacy_key``, ``required``: see `_read_matcher`.

    Returns
    -------
    header : dict
    config : dict
    rows : ndarray, shape (N,)
        ``/client_index`` (id, digest).
    index : SearchIndex
    matcher : Matcher
    state : dict
        The matcher state as stored.
    """
    header, config, sections, rows = _open_verified(f, path, key)
    integrity.check_digest(integrity.node_digest(integrity.check_node(f, "index", path), path),
                           sections.get("index"), "the search index", path)
    index = read_index(f, path)
    matcher, tmap, state = _read_matcher(f, header, config, sections, path, host,
                                         privacy_key, required)
    if tmap is not None:
        index.prototypes = tmap.unprotect(list(index.client_ids), index.prototypes,
                                          index.offsets)
    if list(index.client_ids) != _index_ids(rows, path):
        raise FormatError("integrity check failed: the search index and the client index "
                          "list different clients", path=path)
    d = matcher.dimension()
    if index.n_clients and d is not None and index.prototypes.shape[1] != d:
        raise FormatError(f"refused: the search index has prototypes of dimension "
                          f"{index.prototypes.shape[1]}, the matcher's is {d}", path=path)
    try:
        matcher.check_prototypes(index.prototypes)
    except SsgalleryError as exc:
        raise FormatError(f"refused: the search index: {exc}", path=path) from None
    check_index(index, matcher, path)
    return header, config, rows, index, matcher, state


def read_search(path, *, key=None, host=None, privacy_key=None):
    """Read what a 1:N search needs: the header, the matcher and the stacked index
    (`ssgallery.formats.search_index`), in a few contiguous reads, all checked
    (signature with ``key``, root digest, matcher and index digests; see
    `read_client` for ``key``, ``host`` and ``privacy_key``).

    Returns
    -------
    index : SearchIndex
    matcher : Matcher
    header : dict
    """
    with open_search(path, key=key, host=host, privacy_key=privacy_key) as found:
        return found[:3]


@contextlib.contextmanager
def open_search(path, *, key=None, host=None, privacy_key=None):
    """`read_search`'s reads, the file kept open while the search runs.

    Yields
    ------
    index, matcher, header
        As `read_search` returns them.
    records : callable (list of str) -> dict of str to ClientModel
        The records ``verify`` reads for a few clients, from the same open file (not
        from whatever the path names later): each client group checked against the
        client index and by `check_model` with ``matcher``.
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_LAZY,
                      privacy_key=privacy_key) as f:
        try:
            header, _, rows, index, matcher, _ = _read_stacked(f, path, key, host,
                                                               privacy_key)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None

        def records(client_ids):
            return _records(f, path, rows, client_ids, matcher, (header, privacy_key))

        yield index, matcher, header, records


def _records(f, path, rows, client_ids, matcher, keyed):
    """{id: ClientModel} of ``client_ids`` from an open gallery (see `open_search`);
    ``keyed`` = (header, privacy key): protected templates are put back as
    `_read_stacked` put the index's."""
    out, cid = {}, "?"
    try:
        clients = integrity.check_node(f, "clients", path)
        for cid in client_ids:
            want = cid.encode("utf-8", "surrogateescape")
            row = int(np.searchsorted(rows["id"], want))
            if row >= len(rows) or rows["id"][row] != want:
                raise _unknown_client(path, cid, _index_ids(rows, path))
            out[cid] = _read_one(clients, cid, rows["digest"][row].decode("ascii", "replace"),
                                 path)
    except SealMismatch as exc:
        raise exc.naming(f"while reading client '{printable(cid)}'") from None
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py
        raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    _, tmap = keyed_templates(matcher, *keyed, path)
    if tmap is not None:
        unprotect_models(list(out.values()), tmap)
    for model in out.values():
        check_model(model, matcher, path)
    return out


def read_gallery(path, *, arrays=False, key=None, host=None, matcher=False,
                 privacy_key=None, images=False):
    """Read the header and every client (for ``roc --gallery``, ``info --svm``), all
    checked: O(N) group opens.

    Parameters
    ----------
    arrays : bool
        Keep prototypes and beta of every client.
    key, host, privacy_key : see `read_client`.
    matcher : bool
        Also rebuild the matcher (attribute ``matcher`` of the result; for protected
        templates, the keyed one: refused without ``privacy_key``).
    images : bool
        Also keep every client's rendered prototype images (``prototype_images``, None
        when the gallery has none), read from the same checked open as the rest: what
        `ssgallery.formats.gallery.protected.rewrite_gallery` copies.

    Returns
    -------
    Gallery
        ``clients[id].provenance`` gains ``bytes_model`` (prototypes + beta + b + threshold,
        what verification needs per client) and ``bytes_images`` (rendered images); extra
        attribute ``matcher_state``: the stored matcher state (checked against its digest,
        from the same open file as the rest).
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_OPEN,
                      privacy_key=privacy_key) as f:
        try:
            header, config, sections, rows = _open_verified(f, path, key)
            built, tmap, state = _read_matcher(f, header, config, sections, path, host,
                                               privacy_key, required=matcher)
            out = _read_clients(f, path, rows, built, arrays, tmap, images)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    gallery = Gallery(path=path, header=header, matcher_name=header["matcher"],
                      matcher_config=config, clients=out, matcher_state_bytes=_nbytes(state))
    gallery.matcher = built if matcher else None
    gallery.matcher_state = state
    return gallery


def _read_clients(f, path, rows, built, arrays, tmap=None, images=False):
    """Every client group of an open gallery, each checked against its row of the client
    index (``rows``) and by `check_model` (protected prototypes put back by ``tmap``
    first): {id: ClientModel} (see `read_gallery` for ``arrays`` and ``images``)."""
    clients, ids = _client_groups(f, path, rows)
    out = {cid: _read_one(clients, cid, expected.decode("ascii", "replace"), path)
           for cid, expected in zip(ids, rows["digest"])}
    if tmap is not None:
        unprotect_models(list(out.values()), tmap)
    for model in out.values():
        check_model(model, built, path)
        _account(model, arrays, images)
    return out


def _client_groups(f, path, rows):
    """``/clients`` and the ids of the client index, after checking that they name the
    same clients (lists the group's links; opens no client group)."""
    clients = integrity.check_node(f, "clients", path)
    ids = _index_ids(rows, path)
    if sorted(clients) != sorted(ids):
        extra = sorted(set(clients) ^ set(ids))[:3]
        raise FormatError(f"integrity check failed: the client groups and the client "
                          f"index differ ({', '.join(map(repr, extra))})", path=path)
    return clients, ids


def _nbytes(state):
    return sum(int(v.nbytes) for v in state.values() if isinstance(v, np.ndarray))


def _account(model, arrays, images=False):
    protos, beta = model.prototypes, model.beta
    model.provenance["bytes_model"] = model_bytes(*protos.shape,
                                                  np.dtype(model.prototype_dtype).itemsize)
    model.provenance["bytes_images"] = (int(model.prototype_images.size)
                                        if model.prototype_images is not None else 0)
    model.provenance.setdefault("m", int(beta.shape[0]))
    model.provenance.setdefault("d", int(protos.shape[1]))
    if not images:
        model.prototype_images = None
    if not arrays:
        model.prototypes = model.beta = None
