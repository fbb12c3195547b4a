"""The gallery file (HDF5, default ``gallery.h5``): what a verification host deploys.

Layout (format ``ssgallery-gallery``, `FORMAT_VERSION` = 2)::

    /                       attrs: format, format_version, tool_version, created,
                                   matcher (name), matcher_config (JSON, never a command),
                                   image_shape, target_far, store (path it was compressed
                                   from), threshold_mode, calibration (JSON: mode, target
                                   FAR, normalised global threshold, held-out FAR counts
                                   and interval; both absent in older galleries: per-client
                                   thresholds), section_digests (JSON: {"matcher": sha256, ...}),
                                   digest (root digest), hmac (optional signature)
    /matcher                matcher state: arrays as datasets, numbers/strings as attrs
                            (e.g. PCA mean and basis for eigenface)
    /client_index           (N,) rows (id: UTF-8 bytes, digest: SHA-256 hex of the
                            client's group), sorted by id
    /clients/<client_id>    prototypes (m, d) float64 in the matcher space,
                            prototype_images (m, H, W) uint8 (rendered, for `show`),
                            beta (m,); attrs intercept, threshold, similarity (JSON),
                            provenance (m, lambda, solver, init, omega, ...),
                            normalization (JSON, e.g. {"kind": "znorm", "mean", "std", "n"})
    /index                  every client's model stacked for 1:N search
                            (`ssgallery.formats.search_index`)

Integrity (`ssgallery.formats.integrity`): ``digest`` = SHA-256 over the root
attributes (but ``digest``/``hmac``; they include ``section_digests``, so the matcher
state's digest and any other section's, such as a future ``/index``) and the bytes of
``/client_index``; each client's group has its digest in the index. A writer adding a
section puts its `ssgallery.formats.integrity.node_digest` into
``section_digests`` before the root digest is computed; its readers check it.
`read_client` checks the signature (when the host has a key), the root digest, the
matcher's digest and the one client's digest, then the values (`check_model`):
finite, consistent shapes, m >= 1, gamma > 0, prototypes plausible in the matcher space,
and a threshold that some probes pass and some fail. It opens a constant number of
groups whatever the number of clients.

No face image of any client is stored, only virtual prototypes. Nothing is pickled:
`read_client` reads the header, the matcher state and one client group with h5py
and numpy only (this module is on the ``verify`` path: no scikit-learn here).
"""

import json
import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import FormatError, SsgalleryError, printable
from ssgallery.formats import integrity
from ssgallery.formats.hdf5 import (
    _attr_str,
    build_matcher,
    client_id_problem,
    decode_state,
    hdf5_image,
    now_utc,
    open_checked,
    read_state,
    write_state,
)
from ssgallery.formats.seal import SealMismatch
from ssgallery.formats.search_index import read_index, write_index

FORMAT = "ssgallery-gallery"
FORMAT_VERSION = 2
KIND = "ssgallery gallery"
_OPEN = {"hint": " (run 'ssgallery compress' first)",
         "rewrite": "re-run 'ssgallery compress' to write it"}
_LAZY = dict(_OPEN, lazy=True)  # readers of a few groups: constant work whatever N


# ----------------------------------------------------------------------------- client models

@dataclass
class ClientModel:
    """One client's compressed model: g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1 (g(x))).

    Attributes
    ----------
    client_id : str
    prototypes : ndarray, shape (m, d)
        Virtual prototypes z_j in the matcher space.
    beta : ndarray, shape (m,)
    intercept : float
        The bias b.
    threshold : float
        Accept a claim when g(x) >= threshold.
    similarity : dict
        Similarity parameters (``{"kind": "rbf", "gamma": ...}`` or the matcher's own).
    provenance : dict
        How the model was trained (m, lambda, solver, SVM #SVs, ...).
    prototype_images : ndarray, shape (m, H, W), uint8, or None
        The prototypes rendered as images (read only when asked for).
    normalization : dict or None
        Per-client score normalisation, e.g. ``{"kind": "znorm", "mean": mu, "std": sd,
        "n": n}`` from held-out impostor scores: `normalize` maps g(x) to
        (g(x) - mu) / sd, comparable across clients. None in galleries written before.
    """

    client_id: str
    prototypes: np.ndarray
    beta: np.ndarray
    intercept: float
    threshold: float
    similarity: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    prototype_images: np.ndarray = None
    normalization: dict = None

    @property
    def n_prototypes(self):
        return len(self.beta)

    def similarity_function(self, matcher):
        """The similarity the model was trained with, on ``matcher``'s space."""
        if self.similarity.get("kind") == "rbf":
            from ssgallery.learn.similarity import RBFSimilarity

            return RBFSimilarity(self.similarity["gamma"])
        return matcher.similarity()

    def decision_function(self, features, similarity):
        """g(x) for features (n, d) in the matcher space, shape (n,). m matches per probe."""
        S = similarity(np.asarray(features, dtype=float), self.prototypes)
        return S @ self.beta + self.intercept

    def normalize(self, scores):
        """Normalised scores (Z-norm: (g - mean) / std), shape of ``scores``.

        Raises
        ------
        ValueError
            The model has no normalisation or one of an unknown kind.
        """
        norm = self.normalization or {}
        if norm.get("kind") != "znorm":
            raise ValueError(f"client '{self.client_id}' has no known score normalisation "
                             f"({norm.get('kind')!r})")
        return (np.asarray(scores, dtype=float) - norm["mean"]) / norm["std"]


@dataclass
class Gallery:
    """What `read_gallery` returns: header, matcher description and every client's
    attributes (without reading the big arrays, except on request)."""

    path: str
    header: dict
    matcher_name: str
    matcher_config: dict
    clients: dict  # client_id -> ClientModel (prototype arrays only if requested)
    matcher_state_bytes: int = 0


# ----------------------------------------------------------------------------- writing

def write_gallery(path, *, matcher_name, matcher_config, matcher_state, image_shape,
                  clients, attrs=None, force=False, key=None):
    """Write a gallery atomically (a crash or Ctrl-C leaves ``path`` untouched).

    Parameters
    ----------
    path : str or Path
    matcher_name : str
    matcher_config : dict
        JSON-serialisable matcher constructor parameters (never a command).
    matcher_state : dict
        Arrays / numbers / strings (see `ssgallery.matchers.Matcher.get_state`).
    image_shape : tuple (H, W)
    clients : list of ClientModel
    attrs : dict, optional
        Extra root attributes (numbers / strings), e.g. target_far, store.
    force : bool
        Replace an existing file that is not an ssgallery file (never a store: see
        `ssgallery.formats.atomic.check_writable`).
    key : bytes, optional
        The host's signing key: the root digest gets an HMAC-SHA256 (root attr ``hmac``).
    """

    from ssgallery import __version__
    from ssgallery.formats.atomic import atomic_path
    from ssgallery.formats.seal import USERBLOCK

    for model in clients:
        problem = client_id_problem(model.client_id)
        if problem:
            raise SsgalleryError(f"cannot store client {model.client_id!r}: {problem}")
    with atomic_path(path, FORMAT, force, lock=True) as tmp, \
            hdf5_image(tmp, userblock_size=USERBLOCK) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["tool_version"] = __version__
        f.attrs["created"] = now_utc()
        f.attrs["matcher"] = matcher_name
        f.attrs["matcher_config"] = json.dumps(matcher_config, sort_keys=True)
        f.attrs["image_shape"] = np.asarray(image_shape, dtype=np.int64)
        for name, value in (attrs or {}).items():
            f.attrs[name] = value
        write_state(f.create_group("matcher"), matcher_state)
        group = f.create_group("clients")
        for model in clients:
            _write_client(group.create_group(model.client_id), model)
        write_index(f, clients)
        # digests of what a reader gets back: computed by reading the written file
        sections = {"matcher": read_state(f["matcher"])[1],
                    "index": integrity.node_digest(f["index"])}
        rows = sorted((cid.encode("utf-8"), integrity.node_digest(group[cid]))
                      for cid in group)
        width = max([len(r[0]) for r in rows] + [1])
        index = np.array(rows, dtype=[("id", f"S{width}"), ("digest", "S64")])
        f.create_dataset("client_index", data=index)
        f.attrs["section_digests"] = json.dumps(sections, sort_keys=True)
        digest = integrity.root_digest(dict(f.attrs.items()), f["client_index"][()])
        f.attrs["digest"] = digest
        if key is not None:
            f.attrs["hmac"] = integrity.sign(digest, key)


def _write_client(g, model):
    g.create_dataset("prototypes", data=np.asarray(model.prototypes, dtype=np.float64))
    g.create_dataset("beta", data=np.asarray(model.beta, dtype=np.float64))
    if model.prototype_images is not None:
        g.create_dataset("prototype_images", data=np.asarray(model.prototype_images, np.uint8),
                         compression="gzip")
    g.attrs["intercept"] = float(model.intercept)
    g.attrs["threshold"] = float(model.threshold)
    g.attrs["similarity"] = json.dumps(model.similarity, sort_keys=True)
    g.attrs["provenance"] = json.dumps(model.provenance, sort_keys=True)
    if model.normalization is not None:
        g.attrs["normalization"] = json.dumps(model.normalization, sort_keys=True)


def _check_normalization(norm):
    """A stored normalisation is a dict; a Z-norm has a finite mean and a std > 0."""
    if not isinstance(norm, dict):
        raise TypeError("normalization is not a JSON object")
    if norm.get("kind") == "znorm" and not (np.isfinite(float(norm["mean"]))
                                            and float(norm["std"]) > 0):
        raise ValueError("normalization has a non-finite mean or a std <= 0")
    return norm


# ----------------------------------------------------------------------------- reading

def _model_from(client_id, arrays, attrs, path):
    try:
        model = ClientModel(
            client_id=client_id, prototypes=arrays["prototypes"], beta=arrays["beta"],
            intercept=float(attrs["intercept"]), threshold=float(attrs["threshold"]),
            similarity=json.loads(_attr_str(attrs["similarity"])),
            provenance=json.loads(_attr_str(attrs.get("provenance", "{}"))),
            prototype_images=arrays.get("prototype_images"),
            normalization=(_check_normalization(json.loads(_attr_str(attrs["normalization"])))
                           if "normalization" in attrs else None))
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery: client '{client_id}': {exc}", path=path) from None
    if not isinstance(model.similarity, dict) or not isinstance(model.provenance, dict):
        raise FormatError(f"corrupt gallery: client '{client_id}': similarity and provenance "
                          "must be JSON objects", path=path)
    return model


def _header(attrs, path):
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


def _read_matcher(f, header, config, sections, path, host):
    arrays, attrs, digest = integrity.read_group(integrity.check_node(f, "matcher", path), path)
    integrity.check_digest(digest, sections.get("matcher"), "the matcher state", path)
    try:
        state = decode_state(arrays, attrs)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"corrupt matcher state: {exc}", path=path) from None
    matcher = build_matcher(header["matcher"], config, state, path, host=host)
    shape = getattr(matcher, "image_shape", None)
    if shape is not None and list(shape) != header["image_shape"]:
        raise FormatError(f"corrupt gallery: image_shape {header['image_shape']} differs from "
                          f"the matcher's {list(shape)}", path=path)
    return matcher, state


def _read_one(clients, client_id, expected, path):
    g = integrity.check_node(clients, client_id, path)
    arrays, attrs, digest = integrity.read_group(g, path)
    integrity.check_digest(digest, expected, f"client '{client_id}'", path)
    return _model_from(client_id, arrays, attrs, path)


def _unknown_client(path, client_id, known):
    shown = ", ".join(printable(k) for k in known[:8]) + (
        f", ... ({len(known)} in all)" if len(known) > 8 else "")
    return SsgalleryError(f"unknown client '{printable(client_id)}' (known: {shown or 'none'})",
                          path=path)


def _client_from(f, path, client_id, key, host, matcher):
    """(model, matcher or None, header) of `read_client`, from the open file."""
    try:
        header, config, sections, index = _open_verified(f, path, key)
        want = client_id.encode("utf-8", "surrogateescape") \
            if isinstance(client_id, str) else b""
        row = int(np.searchsorted(index["id"], want))
        if client_id_problem(client_id) or row >= len(index) or index["id"][row] != want:
            raise _unknown_client(path, client_id, _index_ids(index, path))
        expected = index["digest"][row].decode("ascii", "replace")
        clients = integrity.check_node(f, "clients", path)
        model = _read_one(clients, client_id, expected, path)
        built = _read_matcher(f, header, config, sections, path, host)[0] \
            if matcher else None
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
        raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return model, built, header


def read_client(path, client_id, *, images=False, matcher=True, key=None, host=None):
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

    Returns
    -------
    model : ClientModel
        With extra attributes ``matcher`` (or None) and ``header`` (dict).

    Raises
    ------
    FormatError
        Missing, foreign, corrupt, edited, unsigned (with a key), older or newer gallery,
        or insane values.
    SsgalleryError
        Unknown client id (the message lists a few known ids).
    """
    path = os.fspath(path)
    try:
        with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_LAZY) as f:
            model, built, header = _client_from(f, path, client_id, key, host, matcher)
    except SealMismatch as exc:  # bit rot in a part of the file this read needs
        raise exc.naming(f"while reading client '{printable(client_id)}'") from None
    check_model(model, built, path)
    if not images:
        model.prototype_images = None
    model.header = header
    model.matcher = built
    return model


def _read_stacked(f, path, key, host):
    """What the stacked readers (``identify``, ``info``) need from an open gallery, all
    checked: signature (with ``key``), root digest, ``/index`` digest and consistency
    (`ssgallery.formats.search_index.read_index`), the matcher's digest, and the
    index against the matcher (dimension, plausible prototypes) and the client index.
    Opens no client group.

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
    matcher, state = _read_matcher(f, header, config, sections, path, host)
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
    return header, config, rows, index, matcher, state


def read_search(path, *, key=None, host=None):
    """Read what a 1:N search needs: the header, the matcher and the stacked index
    (`ssgallery.formats.search_index`), in a few contiguous reads, all checked
    (signature with ``key``, root digest, matcher and index digests; see
    `read_client` for ``key`` and ``host``).

    Returns
    -------
    index : SearchIndex
    matcher : Matcher
    header : dict
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_LAZY) as f:
        try:
            header, _, _, index, matcher, _ = _read_stacked(f, path, key, host)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return index, matcher, header


def read_gallery(path, *, arrays=False, key=None, host=None, matcher=False):
    """Read the header and every client (for ``roc --gallery``, ``info --svm``), all
    checked: O(N) group opens.

    Parameters
    ----------
    arrays : bool
        Keep prototypes and beta of every client.
    key, host : see `read_client`.
    matcher : bool
        Also rebuild the matcher (attribute ``matcher`` of the result).

    Returns
    -------
    Gallery
        ``clients[id].provenance`` gains ``bytes_model`` (prototypes + beta + b + threshold,
        what verification needs per client) and ``bytes_images`` (rendered images).
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_OPEN) as f:
        try:
            header, config, sections, rows = _open_verified(f, path, key)
            built, state = _read_matcher(f, header, config, sections, path, host)
            out = _read_clients(f, path, rows, built, arrays)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    gallery = Gallery(path=path, header=header, matcher_name=header["matcher"],
                      matcher_config=config, clients=out, matcher_state_bytes=_nbytes(state))
    gallery.matcher = built if matcher else None
    return gallery


def _read_clients(f, path, rows, built, arrays):
    """Every client group of an open gallery, each checked against its row of the client
    index (``rows``) and by `check_model`: {id: ClientModel} (see `read_gallery`)."""
    clients, ids = _client_groups(f, path, rows)
    out = {}
    for cid, expected in zip(ids, rows["digest"]):
        model = _read_one(clients, cid, expected.decode("ascii", "replace"), path)
        check_model(model, built, path)
        _account(model, arrays)
        out[cid] = model
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


def model_bytes(n_vectors, d):
    """Bytes of a kernel expansion sum_j beta_j s(x, z_j) + b with its threshold, float64:
    ``n_vectors`` vectors of dimension d, their weights, b and the threshold (a client
    model: n_vectors = m, Eq. 1 (g(x)); its full SVM: n_vectors = #SVs)."""
    return int(n_vectors * (d + 1) * 8 + 16)


def _account(model, arrays):
    protos, beta = model.prototypes, model.beta
    model.provenance["bytes_model"] = model_bytes(*protos.shape)
    model.provenance["bytes_images"] = (int(model.prototype_images.size)
                                        if model.prototype_images is not None else 0)
    model.provenance.setdefault("m", int(beta.shape[0]))
    model.provenance.setdefault("d", int(protos.shape[1]))
    model.prototype_images = None
    if not arrays:
        model.prototypes = model.beta = None


# ----------------------------------------------------------------------------- sanity

def check_model(model, matcher, path=None):
    """Refuse a client model whose values cannot come from ``compress``.

    Checks: float arrays, prototypes (m, d) with m >= 1 and d the matcher's dimension,
    beta (m,), every value finite, an RBF gamma > 0, prototypes plausible in the
    matcher space (`ssgallery.matchers.Matcher.check_prototypes`), and a threshold
    strictly inside the range of g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1) that the
    similarity's bounds allow: at or below the lowest possible score every probe would
    be accepted, above the highest none.

    Raises
    ------
    FormatError
        One line naming the file and the client.
    """
    who = f"refused: client '{printable(model.client_id)}'"
    P, beta = np.asarray(model.prototypes), np.asarray(model.beta)
    if P.dtype.kind != "f" or beta.dtype.kind != "f" or P.ndim != 2 or P.shape[0] < 1 \
            or beta.shape != (P.shape[0],):
        raise FormatError(f"{who} has inconsistent prototypes {P.shape} / beta {beta.shape}",
                          path=path)
    d = matcher.dimension() if matcher is not None else None
    if d is not None and P.shape[1] != d:
        raise FormatError(f"{who} has prototypes of dimension {P.shape[1]}, the matcher's is "
                          f"{d}", path=path)
    b, t = model.intercept, model.threshold
    if not (np.isfinite(P).all() and np.isfinite(beta).all() and np.isfinite([b, t]).all()):
        raise FormatError(f"{who} has NaN or infinite values", path=path)
    bounds = _similarity_bounds(model, matcher, who, path)
    if matcher is not None:
        try:
            matcher.check_prototypes(P)
        except SsgalleryError as exc:
            raise FormatError(f"{who}: {exc}", path=path) from None
    g_min, _ = score_range(model, bounds)
    if t <= g_min:
        raise FormatError(f"{who} would accept every probe (threshold {t:.6g} <= lowest "
                          f"possible score {g_min:.6g})", path=path)
    # A threshold above the highest possible score rejects everyone: fail-safe, so it is
    # read (verify says REJECT) and compress warns about it (never_accepting).


def score_range(model, bounds):
    """Lowest and highest g(x) (Eq. 1) a client model can give, from the similarity's
    bounds ``(s_min, s_max)``; (-inf, inf) when the similarity is unbounded."""
    if bounds is None or not np.isfinite(bounds).all():
        return -np.inf, np.inf
    beta = np.asarray(model.beta)
    lo, hi = beta * bounds[0], beta * bounds[1]
    return (model.intercept + np.minimum(lo, hi).sum(),
            model.intercept + np.maximum(lo, hi).sum())


def never_accepting(models, matcher):
    """Ids of the models whose threshold is above the highest score they can give."""
    out = []
    for model in models:
        bounds = _similarity_bounds(model, matcher, model.client_id, None)
        if model.threshold > score_range(model, bounds)[1]:
            out.append(model.client_id)
    return out


def _similarity_bounds(model, matcher, who, path):
    kind = model.similarity.get("kind")
    if kind == "rbf":
        gamma = model.similarity.get("gamma")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) \
                or not (np.isfinite(gamma) and gamma > 0):
            raise FormatError(f"{who} has an RBF gamma that is not a positive number",
                              path=path)
        return (0.0, 1.0)
    if not isinstance(kind, str):
        raise FormatError(f"{who} has no similarity kind", path=path)
    return None if matcher is None else matcher.similarity_range()


def header_calibration(header, path=None):
    """The ``calibration`` header attribute (JSON; absent in galleries written before
    threshold modes: None)."""
    raw = header.get("calibration")
    if raw is None:
        return None
    try:
        cal = json.loads(_attr_str(raw))
        if not isinstance(cal, dict) or not isinstance(cal.get("mode"), str):
            raise TypeError("not a calibration record")
    except (ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery header: calibration: {exc}", path=path) from None
    return cal


def gallery_summary(path, *, svm=False):
    """What ``ssgallery info`` shows about a gallery, as a JSON-able dict.

    Per client: m, the bytes of the model verification reads (prototypes + beta + b +
    threshold, float64: `model_bytes`) and the threshold, from the header, the client
    index and the stacked ``/index`` (a few contiguous reads whatever the number of
    clients), after checking the seal of the whole file, the root digest, the index's and
    the matcher's digests, the index's values (`_read_stacked`) and that the client
    groups are the ones the client index lists (no client group is opened).

    Parameters
    ----------
    path : str or Path
    svm : bool
        Also compare each client with its full SVM (support vectors + dual coefficients
        + b + threshold, from the client's provenance): #SVs, bytes, ratio, the SVM's
        threshold, and the bytes of the rendered images. Reads and checks every client
        group (`read_gallery`'s checks: O(N) group opens). Without it those fields are
        None.

    Returns
    -------
    dict
        Header fields, ``clients`` (one dict per client, in id order), totals, and
        ``svm_compared`` (``svm``).
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_OPEN) as f:
        try:
            header, config, rows, index, built, state = _read_stacked(f, path, None, None)
            provenance = {}
            if svm:  # reads every client group (and checks them against the client index)
                provenance = {cid: model.provenance for cid, model in
                              _read_clients(f, path, rows, built, False).items()}
            else:
                _client_groups(f, path, rows)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    d = int(index.prototypes.shape[1]) if index.n_clients else None
    rows = [_summary_row(cid, int(m), d, float(t), provenance.get(cid))
            for cid, m, t in zip(index.client_ids, np.diff(index.offsets), index.threshold)]
    total = sum(r["bytes"] for r in rows)
    total_svm = sum(r["svm_bytes"] or 0 for r in rows) if svm else None
    h = header
    return {"path": path, "format": h.get("format"), "format_version": h.get("format_version"),
            "tool_version": h.get("tool_version"), "created": h.get("created"),
            "matcher": h["matcher"], "matcher_config": config, "dimension": d,
            "image_shape": h.get("image_shape"), "target_far": h.get("target_far"),
            "threshold_mode": h.get("threshold_mode", "client"),
            "calibration": header_calibration(h, path),
            "basis_stale": bool(h.get("basis_stale", False)),
            "file_bytes": os.path.getsize(path), "matcher_state_bytes": _nbytes(state),
            "n_clients": len(rows), "clients": rows, "bytes_total": total,
            "svm_compared": bool(svm), "svm_bytes_total": total_svm,
            "ratio": total_svm / total if total and total_svm else None}


def client_summary(path, client_id):
    """One client's row of `gallery_summary` with the full-SVM comparison, and the
    client's similarity, intercept, normalisation and provenance (how it was trained).
    Reads and checks what `read_client` does: the header, the client index and that
    client's group only, whatever the number of clients.

    Returns
    -------
    dict
        The row, plus ``gallery`` (the path), ``similarity``, ``intercept``,
        ``normalization`` and ``provenance``.

    Raises
    ------
    SsgalleryError
        Unknown client (see `read_client`).
    """
    path = os.fspath(path)
    model = read_client(path, client_id, images=True, matcher=False)
    m, d = model.prototypes.shape
    images = 0 if model.prototype_images is None else int(model.prototype_images.size)
    row = _summary_row(model.client_id, int(m), int(d), model.threshold,
                       dict(model.provenance, bytes_images=images))
    row.update(gallery=path, similarity=model.similarity, intercept=model.intercept,
               normalization=model.normalization, provenance=model.provenance)
    return row


def _summary_row(cid, m, d, threshold, provenance):
    """One client's row of `gallery_summary` (``provenance``: None when not read)."""
    p = provenance or {}
    n_sv = p.get("svm_n_support")
    svm_bytes = None if n_sv is None else model_bytes(n_sv, d)
    size = model_bytes(m, d)
    return {"client": cid, "m": m, "bytes": size, "bytes_images": p.get("bytes_images"),
            "svm_n_support": n_sv, "svm_bytes": svm_bytes,
            "ratio": None if svm_bytes is None else svm_bytes / size,
            "threshold": threshold, "svm_threshold": p.get("svm_threshold")}
