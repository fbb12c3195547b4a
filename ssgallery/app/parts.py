"""Per-client results of a ``compress`` run, committed as they finish (resumable runs).

The gallery is one HDF5 file, which cannot be modified in place safely under SIGKILL, so
each finished client goes to a sidecar folder ``<gallery>.parts/<client digest>.npz``,
written atomically (`ssgallery.formats.atomic`). The gallery itself is written
atomically at the end from the parts, and the folder is then removed. At every moment
the gallery file is either the previous one or the new complete one.

A part records the key of what produced it (store fingerprint, training options,
client id: `run_key`); a resumed run reuses only the parts whose key matches and redoes the rest.
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import SsgalleryError


@dataclass
class ClientResult:
    """One client's trained model as plain arrays and JSON-able values (what a worker
    returns, what a part holds).

    Attributes
    ----------
    client : str
    prototypes : ndarray of shape (m, d)
    beta : ndarray of shape (m,)
    intercept, threshold : float
    provenance : dict
    normalization : dict or None
        Score normalisation parameters (`ssgallery.app.client_training.znorm_parameters`).
    heldout : dict or None
        The threshold CV's held-out scores of the model, ``impostor`` (n_imp,) and
        ``genuine`` (n_gen,): what the thresholds across clients are calibrated on
        (`ssgallery.biometrics.calibration`) once every client is trained.
    row : dict
        The client's line of the summary (m, threshold, CV FAR/FRR, ...).
    seconds, cpu_seconds : float
        Wall and CPU time of the training (CPU: of the process that trained it; not
        stored in the gallery).
    """

    client: str
    prototypes: np.ndarray
    beta: np.ndarray
    intercept: float
    threshold: float
    provenance: dict = field(default_factory=dict)
    normalization: dict = None
    heldout: dict = None
    row: dict = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def run_key(client, store_fingerprint, options):
    """SHA-256 hex naming what trains a client: store content, options
    (`ssgallery.app.options.CompressOptions`, its ``digest_dict``), client id."""
    payload = json.dumps({"client": client, "store": store_fingerprint,
                          "options": options.digest_dict()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def options_digest(options):
    """SHA-256 hex of the training options (`ssgallery.app.options.CompressOptions`,
    its ``digest_dict``), stored in each client's provenance."""
    return hashlib.sha256(json.dumps(options.digest_dict(), sort_keys=True).encode()).hexdigest()


class PartsFolder:
    """``<gallery>.parts/``: one ``.npz`` per finished client, written atomically; with
    the host's ``privacy_key`` each part is encrypted in memory before it is written
    (`ssgallery.formats.encryption`: a part holds a client's plain template)."""

    FORMAT = "ssgallery-part"

    def __init__(self, gallery_path, privacy_key=None):
        self.path = os.fspath(gallery_path) + ".parts"
        self.privacy_key = privacy_key

    def _file(self, client):
        return os.path.join(self.path, hashlib.sha256(client.encode()).hexdigest()[:32] + ".npz")

    def write(self, result, key):
        """Commit one client's result (atomic: the part is whole or absent)."""
        from ssgallery.formats.atomic import atomic_path

        os.makedirs(self.path, exist_ok=True)
        meta = {"client": result.client, "key": key, "intercept": float(result.intercept),
                "threshold": float(result.threshold), "provenance": result.provenance,
                "normalization": result.normalization, "row": result.row, "seconds": float(result.seconds),
                "cpu_seconds": float(result.cpu_seconds)}
        heldout = {f"heldout_{k}": np.asarray(v, dtype=np.float64)
                   for k, v in (result.heldout or {}).items()}
        buffer = io.BytesIO()
        np.savez(buffer, prototypes=np.asarray(result.prototypes, dtype=np.float64),
                 beta=np.asarray(result.beta, dtype=np.float64),
                 meta=np.array(json.dumps(meta, sort_keys=True)), **heldout)
        data = buffer.getbuffer()
        if self.privacy_key is not None:
            from ssgallery.formats.encryption import encrypt

            data = encrypt(data, self.FORMAT, self.privacy_key)
        with atomic_path(self._file(result.client)) as tmp, open(tmp, "wb") as handle:
            handle.write(data)

    def _open(self, client):
        """The part's npz (a path, or the decrypted bytes of an encrypted part). With a
        privacy key a plain part is not read (`read` redoes its client): it was not
        written by a run under this key, and nothing authenticates it."""
        from ssgallery.formats.encryption import decrypt, file_format

        path = self._file(client)
        if file_format(path) is None:
            if self.privacy_key is not None:
                raise SsgalleryError("a plain part in a run with a privacy key", path=path)
            return path
        return decrypt(path, "compress part", self.FORMAT, self.privacy_key)

    def read(self, client, key):
        """The committed result of ``client`` if its key matches, else None."""
        try:
            with np.load(self._open(client), allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("key") != key or meta.get("client") != client:
                    return None
                return ClientResult(client=client, prototypes=data["prototypes"],
                                    beta=data["beta"], intercept=meta["intercept"],
                                    threshold=meta["threshold"],
                                    provenance=meta["provenance"],
                                    normalization=meta.get("normalization"),
                                    heldout={k[len("heldout_"):]: data[k] for k in data.files
                                             if k.startswith("heldout_")} or None,
                                    row=meta["row"],
                                    seconds=meta["seconds"],
                                    cpu_seconds=meta.get("cpu_seconds", 0.0))
        except (OSError, ValueError, KeyError, TypeError, SsgalleryError):
            return None  # absent, unreadable, or encrypted with another key: redo it

    def count(self):
        """Number of committed parts."""
        with contextlib.suppress(OSError):
            return sum(1 for n in os.listdir(self.path) if n.endswith(".npz"))
        return 0

    def remove(self):
        """Remove the folder (after the gallery was written)."""
        shutil.rmtree(self.path, ignore_errors=True)
