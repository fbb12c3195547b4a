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
                            provenance (m, lambda, solver, init, omega, ...),
                            normalization (JSON, e.g. {"kind": "znorm", "mean", "std", "n"})
    /index                  every client's model stacked for 1:N search
                            (:mod:`ssgallery.formats.search_index`)

No face image of any client is stored, only virtual prototypes. Nothing is pickled:
:func:`read_client` reads the header, the matcher state and one client group with h5py
and numpy only (this module is on the ``verify`` path: no scikit-learn here).
"""

import json
import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.hdf5 import (
    _attr_str,
    build_matcher,
    now_utc,
    open_checked,
    read_state,
    write_state,
)
from ssgallery.formats.search_index import read_index, write_index

FORMAT = "ssgallery-gallery"
FORMAT_VERSION = 1


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
        "n": n}`` from held-out impostor scores: :meth:`normalize` maps g(x) to
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
    """What :func:`read_gallery` returns: header, matcher description and every client's
    attributes (without reading the big arrays, except on request)."""

    path: str
    header: dict
    matcher_name: str
    matcher_config: dict
    clients: dict  # client_id -> ClientModel (prototype arrays only if requested)
    matcher_state_bytes: int = 0


def write_gallery(path, *, matcher_name, matcher_config, matcher_state, image_shape,
                  clients, attrs=None, force=False):
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
    force : bool
        Replace an existing file that is not an ssgallery file (never a store: see
        :func:`ssgallery.formats.atomic.check_writable`).
    """
    import h5py

    from ssgallery import __version__
    from ssgallery.formats.atomic import atomic_path

    with atomic_path(path, FORMAT, force, lock=True) as tmp, h5py.File(tmp, "w") as f:
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
        write_index(f, clients)


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


def _read_client_attrs(g, client_id, path):
    try:
        return ClientModel(
            client_id=client_id, prototypes=None, beta=None,
            intercept=float(g.attrs["intercept"]), threshold=float(g.attrs["threshold"]),
            similarity=json.loads(_attr_str(g.attrs["similarity"])),
            provenance=json.loads(_attr_str(g.attrs.get("provenance", "{}"))),
            normalization=(_check_normalization(json.loads(_attr_str(g.attrs["normalization"])))
                           if "normalization" in g.attrs else None))
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


def read_search(path):
    """Read what a 1:N search needs: the header, the matcher and the stacked index
    (:mod:`ssgallery.formats.search_index`), in a few contiguous reads.

    Returns
    -------
    index : SearchIndex
    matcher : Matcher
    header : dict
    """
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, "ssgallery gallery",
                      hint=" (run 'ssgallery compress' first)") as f:
        try:
            header = _header(f)
            index = read_index(f, path)
            state = read_state(f["matcher"])
        except (KeyError, ValueError, TypeError, OSError) as exc:
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    matcher = build_matcher(header["matcher"], json.loads(header["matcher_config"]), state, path)
    return index, matcher, header


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
