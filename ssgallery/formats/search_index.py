"""The gallery's search index: every client's model stacked for 1:N identification.

Layout (group ``/index`` of a gallery, written by
`ssgallery.formats.gallery.write_gallery` from the client models)::

    /index/client_ids      (N,) fixed-length UTF-8 bytes, the order of every per-client array
    /index/prototypes      (P, d) all clients' prototypes, client after client, uint8 or
                           float64 as the client groups store them
                           (`ssgallery.formats.prototypes`), read back as float64
    /index/beta            (P,) float64
    /index/offsets         (N + 1,) int64: client k owns rows offsets[k]:offsets[k+1]
    /index/intercept       (N,) float64
    /index/threshold       (N,) float64
    /index/gamma           (N,) float64: the client's RBF gamma, NaN for the matcher's own
    /index/norm_mean, norm_std   (N,) float64: Z-norm parameters, NaN when absent

Reading it for a search is a handful of contiguous reads whatever N (no group per
client is opened), and scoring a batch of probes is one similarity block (n, P) and
one segment sum: g_k(x) = sum_{j in k} beta_j s(x, z_j) + b_k (Eq. 1 (g(x))).
Numpy and h5py only (on the ``identify`` path).
"""

from dataclasses import dataclass

import numpy as np

from ssgallery.errors import FormatError
from ssgallery.formats.prototypes import FLOAT64, stored_values

GROUP = "index"
_ARRAYS = ("prototypes", "beta", "offsets", "intercept", "threshold", "gamma", "norm_mean",
           "norm_std")


@dataclass
class SearchIndex:
    """All clients' models, stacked (see the module docstring for the arrays)."""

    client_ids: np.ndarray
    prototypes: np.ndarray
    beta: np.ndarray
    offsets: np.ndarray
    intercept: np.ndarray
    threshold: np.ndarray
    gamma: np.ndarray
    norm_mean: np.ndarray
    norm_std: np.ndarray
    prototype_dtype: str = "float64"  # as the file stores them (``prototypes``: float64)

    @property
    def n_clients(self):
        return len(self.client_ids)

    @property
    def normalized(self):
        """True when every client has Z-norm parameters (scores comparable across clients)."""
        return bool(np.all(np.isfinite(self.norm_mean)) and np.all(self.norm_std > 0))

    def decision_function(self, features, similarity=None):
        """g_k(x) of every probe for every client, shape (n, N).

        Parameters
        ----------
        features : ndarray, shape (n, d)
            Probes in the matcher space.
        similarity : callable (X, Z) -> (n, P), optional
            Used for clients without an RBF gamma (the matcher's own similarity).
        """
        X = np.asarray(features, dtype=float)
        gamma, sq_norms, rbf = self._columns()
        if rbf.all():  # the usual case: one (n, P) block, no copies of the prototypes
            d2 = (X * X).sum(1)[:, None] - 2.0 * X @ self.prototypes.T + sq_norms
            S = np.exp(-gamma * np.maximum(d2, 0.0))
        else:
            S = np.empty((len(X), len(self.beta)))
            if rbf.any():
                d2 = ((X * X).sum(1)[:, None] - 2.0 * X @ self.prototypes[rbf].T
                      + sq_norms[rbf])
                S[:, rbf] = np.exp(-gamma[rbf] * np.maximum(d2, 0.0))
            if similarity is None:
                raise FormatError("the search index needs the matcher's similarity")
            S[:, ~rbf] = similarity(X, self.prototypes[~rbf])
        return np.add.reduceat(S * self.beta, self.offsets[:-1], axis=1) + self.intercept

    def _columns(self):
        """Per prototype: gamma, squared norm, RBF mask (computed once per index)."""
        if getattr(self, "_cached_columns", None) is None:
            owner = np.repeat(np.arange(self.n_clients), np.diff(self.offsets))
            gamma = self.gamma[owner]
            self._cached_columns = (gamma, (self.prototypes ** 2).sum(1), np.isfinite(gamma))
        return self._cached_columns

    def normalize(self, scores, columns=None):
        """Z-normalised scores (n, N); raw scores when some client has no normalisation.
        ``columns``: the clients (index rows) ``scores`` are of, default every client."""
        if not self.normalized:
            return np.asarray(scores, dtype=float)
        k = slice(None) if columns is None else np.asarray(columns)
        return (np.asarray(scores, dtype=float) - self.norm_mean[k]) / self.norm_std[k]


def build_index(models):
    """Stack client models (`ssgallery.formats.gallery.ClientModel`) in id order."""
    models = sorted(models, key=lambda model: model.client_id)
    sizes = [len(model.beta) for model in models]

    def norm(model, key):
        info = model.normalization or {}
        return float(info[key]) if info.get("kind") == "znorm" else np.nan

    def gamma(model):
        kind = (model.similarity or {}).get("kind")
        return float(model.similarity["gamma"]) if kind == "rbf" else np.nan

    dim = models[0].prototypes.shape[1] if models else 0
    return SearchIndex(
        client_ids=np.array([model.client_id for model in models], dtype=object),
        prototypes=(np.concatenate([model.prototypes for model in models]).astype(np.float64)
                    if models else np.zeros((0, dim))),
        beta=np.concatenate([model.beta for model in models]).astype(np.float64)
        if models else np.zeros(0),
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        intercept=np.array([model.intercept for model in models], dtype=np.float64),
        threshold=np.array([model.threshold for model in models], dtype=np.float64),
        gamma=np.array([gamma(model) for model in models], dtype=np.float64),
        norm_mean=np.array([norm(model, "mean") for model in models], dtype=np.float64),
        norm_std=np.array([norm(model, "std") for model in models], dtype=np.float64))


def row_difference(index, k, model):
    """The first array in which client ``k``'s stacked rows differ from ``model`` (the
    `ssgallery.formats.gallery.ClientModel` they were stacked from; exact comparison,
    NaN equal to NaN), or None when they are the same."""
    one = build_index([model])
    lo, hi = int(index.offsets[k]), int(index.offsets[k + 1])
    if str(index.client_ids[k]) != str(model.client_id):
        return "client_ids"
    for name in _ARRAYS:
        if name == "offsets":
            continue
        mine = getattr(index, name)
        mine = mine[lo:hi] if name in ("prototypes", "beta") else mine[k:k + 1]
        theirs = getattr(one, name)
        if mine.shape != theirs.shape or not np.array_equal(mine, theirs, equal_nan=True):
            return name
    return None


def write_index(h5file, models, dtype=FLOAT64):
    """Write ``/index`` into an open, writable gallery file, the prototypes as ``dtype``
    (`ssgallery.formats.prototypes.storage_dtype`: one that holds them exactly)."""
    index = build_index(models)
    index.prototypes = index.prototypes.astype(dtype)
    group = h5file.create_group(GROUP)
    # fixed-length UTF-8 bytes: one contiguous read, nothing but numbers and bytes
    encoded = [str(c).encode("utf-8") for c in index.client_ids]
    width = max((len(e) for e in encoded), default=1)
    group.create_dataset("client_ids", data=np.array(encoded, dtype=f"S{width}"))
    for name in _ARRAYS:
        group.create_dataset(name, data=getattr(index, name))
    return group


def read_index(h5file, path=None):
    """Read ``/index`` from an open gallery file and check its consistency.

    Raises
    ------
    FormatError
        No index (a gallery written before identification existed) or inconsistent
        arrays.
    """
    if GROUP not in h5file:
        raise FormatError("gallery has no search index; re-run 'ssgallery compress'",
                          path=path)
    group = h5file[GROUP]
    try:
        ids = np.array([v.decode("utf-8") if isinstance(v, bytes) else str(v)
                        for v in group["client_ids"][()]], dtype=object)
        arrays = {name: group[name][()] for name in _ARRAYS}
        version = int(h5file.attrs["format_version"])
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
        raise FormatError(f"corrupt search index: {exc}", path=path) from None
    arrays["prototypes"], dtype = stored_values(arrays["prototypes"], version,
                                                "the search index", path)
    index = SearchIndex(client_ids=ids, prototype_dtype=dtype, **arrays)
    _check(index, path)
    return index


def _check(index, path):
    n, p = index.n_clients, len(index.beta)
    off = index.offsets
    ok = (index.prototypes.ndim == 2 and len(index.prototypes) == p and off.shape == (n + 1,)
          and off[0] == 0 and off[-1] == p and np.all(np.diff(off) >= 1)
          and all(getattr(index, a).shape == (n,) for a in
                  ("intercept", "threshold", "gamma", "norm_mean", "norm_std")))
    finite = ok and all(np.all(np.isfinite(getattr(index, a))) for a in
                        ("prototypes", "beta", "intercept", "threshold"))
    if not finite or np.any(index.gamma <= 0):
        raise FormatError("corrupt search index: inconsistent or non-finite arrays", path=path)
