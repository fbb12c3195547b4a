"""The checked reads every gallery reader is made of (`ssgallery.formats.gallery.read`,
`ssgallery.formats.gallery.summary`): the root (signature, root digest, header, client
index: `open_verified`), the matcher (`read_matcher`), one client group
(`read_client_group`) or every one (`read_clients`), and the stacked search index
(`read_stacked`), each checked before it is used (layout and checks:
`ssgallery.formats.gallery`)."""

import json

import numpy as np

from ssgallery.errors import (
    FormatError,
    SsgalleryError,
    UnknownClientError,
    clipped,
    printable,
)
from ssgallery.formats import integrity
from ssgallery.formats.attr_reads import attr_limit, bounded_attrs
from ssgallery.formats.gallery.checks import (
    check_images,
    check_index,
    check_model,
    check_normalization,
    objective_bound,
)
from ssgallery.formats.gallery.header_records import gallery_header
from ssgallery.formats.gallery.model import OLDEST_VERSION, ClientModel, model_bytes
from ssgallery.formats.hdf5 import attr_str, build_matcher, decode_state
from ssgallery.formats.protect import keyed_templates, unprotect_models
from ssgallery.formats.prototypes import stored_values
from ssgallery.formats.search_index import read_index

# `ssgallery.formats.hdf5.open_checked`'s keywords for a gallery: what to tell a user
# whose file is missing or too old; LAZY_OPEN_ARGS for readers of a few groups (constant
# work whatever N), OPEN_ARGS for readers of every client group.
OPEN_ARGS = {"hint": " (run 'ssgallery compress' first)",
             "rewrite": "re-run 'ssgallery compress' to write it", "oldest": OLDEST_VERSION}
LAZY_OPEN_ARGS = dict(OPEN_ARGS, lazy=True)


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
            similarity=json.loads(attr_str(attrs["similarity"])),
            provenance=json.loads(attr_str(attrs.get("provenance", "{}"))),
            prototype_images=arrays.get("prototype_images"),
            normalization=(check_normalization(json.loads(attr_str(attrs["normalization"])))
                           if "normalization" in attrs else None),
            prototype_dtype=dtype)
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery: client '{client_id}': {exc}", path=path) from None
    if not isinstance(model.similarity, dict) or not isinstance(model.provenance, dict):
        raise FormatError(f"corrupt gallery: client '{client_id}': similarity and provenance "
                          "must be JSON objects", path=path)
    if (model.normalization or {}).get("kind") != "znorm"             and objective_bound(model.provenance) is None:
        raise FormatError(f"refused: client '{printable(client_id)}' has nothing that bounds "
                          "its weights: neither a Z-norm nor its training objective (omega, "
                          "lambda_abs in its provenance), one of which every compress since "
                          "2026-11-26 writes", path=path)
    return model


def open_verified(f, path, key):
    """Header, matcher config, section digests and client index of an open gallery,
    after checking the signature (with a key) and the root digest.

    Parameters
    ----------
    f : h5py.File
        The gallery, opened by `ssgallery.formats.hdf5.open_checked` (``path`` names it
        in messages).
    key : bytes or None
        The host's signing key: an unsigned or wrongly signed gallery is refused.

    Returns
    -------
    header : dict
        The root attributes as Python values (image shape, matcher and its config
        checked).
    config : dict
        The matcher configuration.
    sections : dict
        Each section's recorded digest (`ssgallery.formats.integrity.section_digests`).
    index : ndarray, shape (N,)
        ``/client_index`` (id, digest).

    Raises
    ------
    FormatError
        A bad signature, client index or header, or a root digest that does not match.
    """
    attrs = bounded_attrs(f, path)  # each held to what a gallery of its clients can hold
    digest = attr_str(attrs.get("digest"))
    integrity.check_signature(attrs, digest or "", key, "gallery", path)
    index = integrity.check_node(f, "client_index", path)[()]
    if index.dtype.names != ("id", "digest") or index.ndim != 1 \
            or index.dtype["id"].kind != "S" or index.dtype["digest"] != np.dtype("S64"):
        raise FormatError("corrupt gallery: bad client index", path=path)
    integrity.check_digest(integrity.root_digest(attrs, index), digest,
                           "the header or the client index", path)
    header, config = gallery_header(attrs, path)
    sections = integrity.section_digests(attrs, path)
    return header, config, sections, index


def index_ids(index, path):
    """The client ids of a client index.

    Parameters
    ----------
    index : ndarray, shape (N,)
        ``/client_index`` rows (id: UTF-8 bytes, digest); ``path`` names the gallery.

    Returns
    -------
    list of str
        In index order; an id that is not UTF-8 raises `FormatError`.
    """
    try:
        return [i.decode("utf-8") for i in index["id"]]
    except UnicodeDecodeError:
        raise FormatError("corrupt gallery: a client id in the index is not UTF-8",
                          path=path) from None


def read_matcher(f, header, config, sections, path, host, privacy_key=None, required=True):
    """The matcher of an open gallery, its state checked against its section digest.

    Parameters
    ----------
    f : h5py.File
        The open gallery.
    header, config, sections : dict
        As `open_verified` returns them.
    path : str
        The gallery's path (for messages).
    host : HostMatcher or None
        The host's matcher program (`ssgallery.formats.hdf5.build_matcher`).
    privacy_key : bytes, optional
        The host's privacy key, for protected templates.
    required : bool
        False: a protected gallery read without ``privacy_key`` gives an unkeyed
        matcher, not a refusal.

    Returns
    -------
    matcher : Matcher
    tmap : object or None
        Puts protected prototypes back (None for plain templates, or without the key
        when not ``required``: `ssgallery.formats.protect.keyed_templates`).
    state : dict
        The matcher state as stored.

    Raises
    ------
    FormatError
        An edited or corrupt state, missing failure-to-acquire limits, or an image shape
        other than the header's.
    """
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


def read_client_group(clients, client_id, expected, path, limit=None):
    """One client's model from its group, after checking the group's digest.

    Parameters
    ----------
    clients : h5py.Group
        ``/clients`` of an open gallery.
    client_id : str
        A client the client index lists.
    expected : str
        The group's digest recorded in the client index (SHA-256 hex).
    path : str
        The gallery's path (for messages).
    limit : tuple, optional
        Its attributes' `ssgallery.formats.attr_reads.attr_limit` (found when None; a
        reader of every client finds it once).

    Returns
    -------
    ClientModel
        Its values not yet checked (`check_model`).

    Raises
    ------
    FormatError
        A missing, edited or corrupt group.
    """
    g = integrity.check_node(clients, client_id, path)
    arrays, attrs, digest = integrity.read_group(g, path, limit)
    integrity.check_digest(digest, expected, f"client '{client_id}'", path)
    return _model_from(client_id, arrays, attrs, path, int(clients.file.attrs["format_version"]))


def unknown_client(path, client_id, known, digest=None):
    """The error for a client id the gallery does not hold.

    Parameters
    ----------
    path : str
        The gallery's path.
    client_id : str
        The id asked for.
    known : list of str
        The gallery's ids; the message names a few.
    digest : str, optional
        The gallery's recorded digest.

    Returns
    -------
    UnknownClientError
        With attributes ``hint`` (did you mean) and ``digest`` (for a caller that
        compares its reads: `ssgallery.formats.integrity.unchanged`).
    """
    from ssgallery.tables import did_you_mean

    shown = ", ".join(printable(k) for k in known[:8]) + (
        f", ... ({len(known)} in all)" if len(known) > 8 else "")
    hint = did_you_mean([client_id], known)
    error = UnknownClientError(f"unknown client '{printable(clipped(client_id))}'"
                               + (f": {hint}" if hint else "")
                               + f" (known: {shown or 'none'})", path=path)
    error.hint, error.digest = hint, digest
    return error


def read_stacked(f, path, key, host, privacy_key=None, required=True):
    """What the stacked readers (``identify``, ``info``) need from an open gallery, all
    checked: signature (with ``key``), root digest, ``/index`` digest and consistency
    (`ssgallery.formats.search_index.read_index`), the matcher's digest, and the
    index against the matcher (dimension, plausible prototypes) and the client index.
    Opens no client group.

    Parameters
    ----------
    f : h5py.File
        The open gallery (``path`` names it in messages).
    key, host, privacy_key, required
        See `open_verified` and `read_matcher`.

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
    header, config, sections, rows = open_verified(f, path, key)
    integrity.check_digest(integrity.node_digest(integrity.check_node(f, "index", path), path),
                           sections.get("index"), "the search index", path)
    index = read_index(f, path)
    matcher, tmap, state = read_matcher(f, header, config, sections, path, host,
                                        privacy_key, required)
    if tmap is not None:
        index.prototypes = tmap.unprotect(list(index.client_ids), index.prototypes,
                                          index.offsets)
    if list(index.client_ids) != index_ids(rows, path):
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


def read_clients(f, path, rows, built, arrays, tmap=None, images=False):
    """Every client group of an open gallery, each checked against its row of the client
    index and by `check_model` (protected prototypes put back first).

    Parameters
    ----------
    f : h5py.File
        The open gallery (``path`` names it in messages).
    rows : ndarray, shape (N,)
        ``/client_index`` (id, digest), as `open_verified` returns it.
    built : Matcher or None
        The matcher `check_model` checks the prototypes with.
    arrays : bool
        Keep prototypes and beta (see `ssgallery.formats.gallery.read.read_gallery`).
    images : False or list of int
        Keep the rendered images: the gallery's ``image_shape`` (H, W), which they
        must have (`ssgallery.formats.gallery.checks.check_images`).
    tmap : object, optional
        `read_matcher`'s template map.

    Returns
    -------
    dict of str to ClientModel
        Each provenance with ``bytes_model`` and ``bytes_images``.
    """
    clients, ids = client_groups(f, path, rows)
    limit = attr_limit(f)
    out = {cid: read_client_group(clients, cid, expected.decode("ascii", "replace"), path,
                                  limit)
           for cid, expected in zip(ids, rows["digest"])}
    if tmap is not None:
        unprotect_models(list(out.values()), tmap)
    for model in out.values():
        check_model(model, built, path)
        if images:
            check_images(model, images, path)
        _account(model, arrays, images)
    return out


def client_groups(f, path, rows):
    """``/clients`` and the ids of the client index, after checking that they name the
    same clients (lists the group's links; opens no client group).

    Parameters
    ----------
    f : h5py.File
        The open gallery (``path`` names it in messages).
    rows : ndarray, shape (N,)
        ``/client_index`` (id, digest).

    Returns
    -------
    clients : h5py.Group
    ids : list of str

    Raises
    ------
    FormatError
        Groups and index that name different clients.
    """
    clients = integrity.check_node(f, "clients", path)
    ids = index_ids(rows, path)
    if sorted(clients) != sorted(ids):
        extra = sorted(set(clients) ^ set(ids))[:3]
        raise FormatError(f"integrity check failed: the client groups and the client "
                          f"index differ ({', '.join(map(repr, extra))})", path=path)
    return clients, ids


def state_bytes(state):
    """The bytes of a matcher state's arrays.

    Parameters
    ----------
    state : dict
        A matcher state as stored (arrays, numbers, strings).

    Returns
    -------
    int
    """
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
