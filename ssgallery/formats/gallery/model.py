"""The gallery's identity and its in-memory model: the format constants, one client's
compressed model (`ClientModel`, Eq. 1 (g(x))), what `read_gallery` returns
(`Gallery`) and the bytes a model costs (`model_bytes`). The file's layout:
`ssgallery.formats.gallery`."""

from dataclasses import dataclass, field

import numpy as np

from ssgallery.formats.kinds import NEWEST_VERSIONS

FORMAT = "ssgallery-gallery"
FORMAT_VERSION = NEWEST_VERSIONS[FORMAT]  # the newest this code reads and writes (3: uint8)
OLDEST_VERSION = 2  # the oldest it reads (1 had no digest); see ssgallery.formats.prototypes
KIND = "ssgallery gallery"


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
    prototype_dtype : str
        The dtype the file stores the prototypes in (``uint8`` or ``float64``,
        `ssgallery.formats.prototypes`; set by the readers); ``prototypes`` holds
        their float64 values whatever it is.
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
    prototype_dtype: str = "float64"

    @property
    def n_prototypes(self):
        return len(self.beta)

    def similarity_function(self, matcher):
        """The similarity the model was trained with, on ``matcher``'s space (an RBF's
        rows computed one probe at a time: `decision_function`)."""
        if self.similarity.get("kind") == "rbf":
            from ssgallery.learn.similarity import RBFSimilarity

            return RBFSimilarity(self.similarity["gamma"], rowwise=True)
        return matcher.similarity()

    def decision_function(self, features, similarity):
        """g(x) for features (n, d) in the matcher space, shape (n,). m matches per probe.
        Each probe's g(x) is summed as it would be alone
        (`ssgallery.learn.similarity.rowwise_matmul`): its digits do not depend on the
        other probes of the batch."""
        from ssgallery.learn.similarity import rowwise_matmul

        S = similarity(np.asarray(features, dtype=float), self.prototypes)
        return rowwise_matmul(S, self.beta) + self.intercept

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


def model_bytes(n_vectors, d, itemsize=8):
    """Bytes of a kernel expansion sum_j beta_j s(x, z_j) + b with its threshold:
    ``n_vectors`` vectors of dimension d of ``itemsize`` bytes a value (8: float64, 1:
    uint8, as the gallery stores them: `ssgallery.formats.prototypes`), their float64
    weights, b and the threshold (a client model: n_vectors = m, Eq. 1 (g(x)); its full
    SVM: n_vectors = #SVs)."""
    return int(n_vectors * (d * itemsize + 8) + 16)
