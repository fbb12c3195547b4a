"""The gallery file (HDF5, default ``gallery.h5``): what a verification host deploys.

Layout (format ``ssgallery-gallery``, :data:`FORMAT_VERSION`)::

    /                       attrs: format, format_version, tool_version, created,
                                   matcher (name), matcher_config (JSON), image_shape,
                                   target_far, store (path it was compressed from)
    /matcher                matcher state: arrays as datasets, numbers/strings as attrs
                            (e.g. PCA mean and basis for eigenface)
    /clients/<client_id>    prototypes (m, d) float64 in the matcher space,
                            prototype_images (m, H, W) uint8 (rendered, for `show`),
                            beta (m,); attrs intercept, threshold, similarity (JSON),
                            provenance (m, lambda, solver, init, omega, ...)

No face image of any client is stored, only virtual prototypes. Nothing is pickled:
:func:`read_client` reads the header, the matcher state and one client group with h5py
and numpy only (this module is on the ``verify`` path: no scikit-learn here).
"""

import json
import os
from dataclasses import dataclass, field

import numpy as np

from .errors import FormatError, SsgalleryError

FORMAT = "ssgallery-gallery"
FORMAT_VERSION = 1
_JSON_KEYS = "_json_keys"


# ----------------------------------------------------------------------------- HDF5 helpers
# (shared with store.py)

def now_utc():
    """Creation time stamp, ISO 8601 UTC, seconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0).isoformat()


def open_checked(path, fmt, version, kind, hint=""):
    """Open ``path`` read-only after checking it is an ssgallery file of format ``fmt``.

    Raises :class:`FormatError` (one line naming the file) when it is missing, not
    HDF5, of another format, or of a newer format version.
    """
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FormatError(f"no such {kind}{hint}", path=path)
    if os.path.isdir(path):
        raise FormatError(f"is a folder, expected an {kind} file", path=path)
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise FormatError(f"not an {kind} (not a readable HDF5 file; corrupt or foreign)",
                          path=path) from None
    found = _attr_str(handle.attrs.get("format"))
    if found != fmt:
        handle.close()
        what = f"format '{found}'" if found else "no ssgallery format tag"
        raise FormatError(f"not an {kind} ({what}, expected '{fmt}')", path=path)
    try:
        found_version = int(handle.attrs.get("format_version"))
    except (TypeError, ValueError):
        handle.close()
        raise FormatError(f"corrupt {kind}: bad format_version", path=path) from None
    if found_version > version:
        handle.close()
        raise FormatError(f"{kind} format version {found_version} is newer than this ssgallery "
                          f"supports ({version}); upgrade ssgallery", path=path)
    return handle


def _attr_str(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def write_state(group, state):
    """Write a dict of arrays / numbers / strings / JSON-able values into ``group``."""
    json_keys = []
    for key, value in state.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            group.create_dataset(key, data=value)
        elif isinstance(value, (str, bool, int, float, np.integer, np.floating, np.bool_)):
            group.attrs[key] = value
        else:  # lists (e.g. a command line), dicts, string arrays: JSON, never pickle
            if isinstance(value, np.ndarray):
                value = value.tolist()
            group.attrs[key] = json.dumps(value)
            json_keys.append(key)
    group.attrs[_JSON_KEYS] = json.dumps(json_keys)


def read_state(group):
    """Inverse of :func:`write_state`."""
    json_keys = set(json.loads(_attr_str(group.attrs.get(_JSON_KEYS, "[]"))))
    state = {key: group[key][()] for key in group}
    for key, value in group.attrs.items():
        if key == _JSON_KEYS:
            continue
        if key in json_keys:
            state[key] = json.loads(_attr_str(value))
        elif isinstance(value, (bytes, str)):
            state[key] = _attr_str(value)
        elif isinstance(value, np.generic):
            state[key] = value.item()
        else:
            state[key] = value
    return state


def build_matcher(name, config, state, path=None):
    """Rebuild a fitted matcher from what a store or gallery holds."""
    from .matchers import get_matcher_class

    try:
        cls = get_matcher_class(name)
    except SsgalleryError as exc:
        raise FormatError(f"needs {exc}", path=path) from None
    try:
        return cls.from_state(config, state)
    except SsgalleryError:
        raise
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt matcher state for '{name}': {exc}", path=path) from None


# ----------------------------------------------------------------------------- client models

@dataclass
class ClientModel:
    """One client's compressed model: g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1).

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
    """

    client_id: str
    prototypes: np.ndarray
    beta: np.ndarray
    intercept: float
    threshold: float
    similarity: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    prototype_images: np.ndarray = None

    @property
    def n_prototypes(self):
        return len(self.beta)

    def similarity_function(self, matcher):
        """The similarity the model was trained with, on ``matcher``'s space."""
        if self.similarity.get("kind") == "rbf":
            from .similarity import RBFSimilarity

            return RBFSimilarity(self.similarity["gamma"])
        return matcher.similarity()

    def decision_function(self, features, similarity):
        """g(x) for features (n, d) in the matcher space, shape (n,). m matches per probe."""
        S = similarity(np.asarray(features, dtype=float), self.prototypes)
        return S @ self.beta + self.intercept


@dataclass
class Gallery:
    """What :func:`read_gallery` returns: header, matcher description and every client's
    attributes (without reading the big arrays, except on request)."""

    path: str
    header: dict
    matcher_name: str
    matcher_config: dict
    clients: dict  # client_id -> ClientModel (prototype arrays only if requested)
    matcher_state_bytes: int = 0


def write_gallery(path, *, matcher_name, matcher_config, matcher_state, image_shape,
                  clients, attrs=None):
    """Write a gallery atomically (a crash or Ctrl-C leaves ``path`` untouched).

    Parameters
    ----------
    path : str or Path
    matcher_name : str
    matcher_config : dict
        JSON-serialisable matcher constructor parameters.
    matcher_state : dict
        Arrays / numbers / strings (see :meth:`ssgallery.matchers.Matcher.get_state`).
    image_shape : tuple (H, W)
    clients : list of ClientModel
    attrs : dict, optional
        Extra root attributes (numbers / strings), e.g. target_far, store.
    """
    import h5py

    from . import __version__
    from .atomic import atomic_path

    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["tool_version"] = __version__
        f.attrs["created"] = now_utc()
        f.attrs["matcher"] = matcher_name
        f.attrs["matcher_config"] = json.dumps(matcher_config, sort_keys=True)
        f.attrs["image_shape"] = np.asarray(image_shape, dtype=np.int64)
        for key, value in (attrs or {}).items():
            f.attrs[key] = value
        write_state(f.create_group("matcher"), matcher_state)
        group = f.create_group("clients")
        for model in clients:
            _write_client(group.create_group(model.client_id), model)


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


def _read_client_attrs(g, client_id, path):
    try:
        return ClientModel(
            client_id=client_id, prototypes=None, beta=None,
            intercept=float(g.attrs["intercept"]), threshold=float(g.attrs["threshold"]),
            similarity=json.loads(_attr_str(g.attrs["similarity"])),
            provenance=json.loads(_attr_str(g.attrs.get("provenance", "{}"))))
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatError(f"corrupt gallery: client '{client_id}': {exc}", path=path) from None


def _header(f):
    header = {}
    for key, value in f.attrs.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        header[key] = _attr_str(value) if isinstance(value, bytes) else value
    return header


def _unknown_client(path, client_id, known):
    known = sorted(known)
    shown = ", ".join(known[:8]) + (f", ... ({len(known)} in all)" if len(known) > 8 else "")
    return SsgalleryError(f"unknown client '{client_id}' (known: {shown or 'none'})",
                          path=path)


def read_client(path, client_id, *, images=False, matcher=True):
    """Read one client's model and the gallery's matcher, and nothing else.

    Parameters
    ----------
    path : str or Path
        The gallery file.
    client_id : str
    images : bool
        Also read the rendered prototype images (for ``show``).
    matcher : bool
        Rebuild the matcher from the stored state (attribute ``matcher`` of the result).

    Returns
    -------
    model : ClientModel
        With extra attributes ``matcher`` (or None) and ``header`` (dict).

    Raises
    ------
    FormatError
        Missing, foreign, corrupt or newer gallery.
    SsgalleryError
        Unknown client id (the message lists a few known ids).
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, "ssgallery gallery",
                      hint=" (run 'ssgallery compress' first)") as f:
        try:
            clients = f["clients"]
            header = _header(f)
            matcher_name = header["matcher"]
            matcher_config = json.loads(header["matcher_config"])
            if client_id not in clients:
                raise _unknown_client(path, client_id, clients.keys())
            g = clients[client_id]
            model = _read_client_attrs(g, client_id, path)
            model.prototypes = g["prototypes"][()]
            model.beta = g["beta"][()]
            if images and "prototype_images" in g:
                model.prototype_images = g["prototype_images"][()]
            state = read_state(f["matcher"]) if matcher else None
        except (KeyError, ValueError, TypeError, OSError) as exc:
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    if model.prototypes.ndim != 2 or model.beta.shape != (model.prototypes.shape[0],):
        raise FormatError(f"corrupt gallery: client '{client_id}' has inconsistent shapes",
                          path=path)
    model.header = header
    model.matcher = build_matcher(matcher_name, matcher_config, state, path) if matcher else None
    return model


def read_gallery(path, *, arrays=False):
    """Read the header and every client's attributes (for ``info``).

    Parameters
    ----------
    arrays : bool
        Also read prototypes and beta of every client.

    Returns
    -------
    Gallery
        ``clients[id].provenance`` gains ``bytes_model`` (prototypes + beta + b + threshold,
        what verification needs per client) and ``bytes_images`` (rendered images).
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, "ssgallery gallery",
                      hint=" (run 'ssgallery compress' first)") as f:
        try:
            header = _header(f)
            out = {}
            for client_id, g in f["clients"].items():
                model = _read_client_attrs(g, client_id, path)
                protos, beta = g["prototypes"], g["beta"]
                model.provenance["bytes_model"] = int(protos.size * protos.dtype.itemsize
                                                      + beta.size * beta.dtype.itemsize + 16)
                model.provenance["bytes_images"] = (int(g["prototype_images"].size)
                                                    if "prototype_images" in g else 0)
                model.provenance.setdefault("m", int(beta.shape[0]))
                model.provenance.setdefault("d", int(protos.shape[1]))
                if arrays:
                    model.prototypes, model.beta = protos[()], beta[()]
                out[client_id] = model
            state_bytes = sum(int(d.size * d.dtype.itemsize) for d in f["matcher"].values())
            gallery = Gallery(path=path, header=header, matcher_name=header["matcher"],
                              matcher_config=json.loads(header["matcher_config"]),
                              clients=out, matcher_state_bytes=state_bytes)
        except (KeyError, ValueError, TypeError, OSError) as exc:
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return gallery


def gallery_summary(path):
    """What ``ssgallery info`` shows about a gallery, as a JSON-able dict.

    Per client: m, bytes of the model verification reads (prototypes + beta + b +
    threshold, float64) against the bytes the full SVM would need (its support vectors
    + dual coefficients + b + threshold), their ratio, and matches per claim (m vs #SVs).
    """
    g = read_gallery(path)
    rows = []
    for cid, model in g.clients.items():
        p = model.provenance
        m, d, n_sv = p["m"], p["d"], p.get("svm_n_support")
        svm_bytes = None if n_sv is None else int(n_sv * (d + 1) * 8 + 16)
        rows.append({"client": cid, "m": m, "bytes": p["bytes_model"],
                     "bytes_images": p["bytes_images"], "svm_n_support": n_sv,
                     "svm_bytes": svm_bytes,
                     "ratio": None if svm_bytes is None else svm_bytes / p["bytes_model"],
                     "threshold": model.threshold, "svm_threshold": p.get("svm_threshold")})
    total = sum(r["bytes"] for r in rows)
    total_svm = sum(r["svm_bytes"] or 0 for r in rows)
    h = g.header
    return {"path": g.path, "format": h.get("format"), "format_version": h.get("format_version"),
            "tool_version": h.get("tool_version"), "created": h.get("created"),
            "matcher": g.matcher_name, "matcher_config": g.matcher_config,
            "dimension": next((c.provenance["d"] for c in g.clients.values()), None),
            "image_shape": h.get("image_shape"), "target_far": h.get("target_far"),
            "basis_stale": bool(h.get("basis_stale", False)),
            "file_bytes": os.path.getsize(path), "matcher_state_bytes": g.matcher_state_bytes,
            "n_clients": len(rows), "clients": rows, "bytes_total": total,
            "svm_bytes_total": total_svm,
            "ratio": total_svm / total if total else None}


def show_prototypes(gallery_path, claim, out_path, *, scale=2):
    """Montage of one client's rendered prototypes with their beta (paper's Fig. 5),
    written atomically to ``out_path``. Returns a JSON-able summary."""
    from .montage import save_montage

    model = read_client(gallery_path, claim, images=True, matcher=False)
    if model.prototype_images is None:
        raise FormatError(f"client '{claim}' has no rendered prototype images",
                          path=gallery_path)
    title = (f"client {claim}: b = {model.intercept:+.3g}, threshold = "
             f"{model.threshold:+.3g}, m = {model.n_prototypes}")
    save_montage(out_path, model.prototype_images, model.beta, title=title, scale=scale)
    return {"claim": claim, "output": os.fspath(out_path), "m": model.n_prototypes,
            "beta": [float(b) for b in model.beta], "intercept": model.intercept,
            "threshold": model.threshold}
