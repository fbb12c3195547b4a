"""One client's trained result (`ClientResult`) and its bytes (`encode_result`,
`decode_result`): what a worker sends back (`ssgallery.app.result_checks`) and what a
committed part holds (`ssgallery.app.parts`). The bytes are an uncompressed ``.npz``
(arrays and one JSON string, nothing pickled); `decode_result` reads them as untrusted
input (zip end record and directory bounded before anything else, known members only,
no pickle) and raises `BadPart`."""

import io
import json
import struct
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import SsgalleryError

MAX_PART_BYTES = 256 << 20  # a part's file, and each array in it


class BadPart(SsgalleryError):
    """A part that cannot be used: its client is trained again."""


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
        Score normalisation parameters (`ssgallery.biometrics.heldout.znorm_parameters`).
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


def encode_result(result, key=""):
    """A `ClientResult` and its run ``key`` as the bytes of an uncompressed ``.npz``
    (arrays and one JSON string; nothing pickled): what a part holds, and what a worker
    sends back."""
    meta = {"client": result.client, "key": key, "intercept": float(result.intercept),
            "threshold": float(result.threshold), "provenance": result.provenance,
            "normalization": result.normalization, "row": result.row,
            "seconds": float(result.seconds), "cpu_seconds": float(result.cpu_seconds)}
    heldout = {f"heldout_{k}": np.asarray(v, dtype=np.int64 if k.endswith("_row")
                                          else np.float64)
               for k, v in (result.heldout or {}).items()}
    buffer = io.BytesIO()
    np.savez(buffer, prototypes=np.asarray(result.prototypes, dtype=np.float64),
             beta=np.asarray(result.beta, dtype=np.float64),
             meta=np.array(json.dumps(meta, sort_keys=True)), **heldout)
    return buffer.getvalue()


_ARRAYS = {"prototypes", "beta", "meta", "heldout_impostor", "heldout_genuine",
           "heldout_impostor_row"}


_END = struct.Struct("<4s4H2LH")  # the zip's end record (no zip64: a part is < 4 GiB)


MAX_DIRECTORY_BYTES = len(_ARRAYS) * 512  # each entry: 46 bytes, its name and extras


def _check_zip_end(payload, shown):
    """The zip's end record, read before anything else: no comment, no zip64 record, at
    most one directory entry per known array in a directory of at most
    `MAX_DIRECTORY_BYTES` (``zipfile`` parses the whole directory before a member can
    be looked at: a million entries are a million objects)."""
    if len(payload) < _END.size:
        raise BadPart("truncated (no zip end record)", path=shown)
    magic, _, _, _, entries, size, _, comment = _END.unpack(payload[-_END.size:])
    zip64 = payload[-_END.size - 20:-_END.size - 16] == b"PK\x06\x07"
    if magic != b"PK\x05\x06" or comment or zip64 or entries > len(_ARRAYS) \
            or size > MAX_DIRECTORY_BYTES:
        raise BadPart(f"not an npz as ssgallery writes it (zip directory of {entries} "
                      f"entries, {size} bytes{', zip64' if zip64 else ''})", path=shown)


def decode_result(payload, shown):
    """(`ClientResult`, run key) of `encode_result`'s bytes. The zip's end record is
    checked first (`_check_zip_end`), then every member in the zip directory: a known
    name, stored uncompressed, at most `MAX_PART_BYTES` (no decompression bomb); arrays
    are read without pickle. Raises `BadPart`."""
    _check_zip_end(payload, shown)
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            for info in archive.infolist():
                if info.filename[:-4] not in _ARRAYS or not info.filename.endswith(".npy") \
                        or info.compress_type != zipfile.ZIP_STORED \
                        or info.file_size > MAX_PART_BYTES:
                    raise BadPart(f"unexpected member {info.filename[:40]!r} "
                                  f"({info.file_size} bytes)", path=shown)
        with np.load(io.BytesIO(payload), allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if not isinstance(meta, dict) or not isinstance(meta["provenance"], dict):
                # a part of another run is still read for its provenance (warn_retrained)
                raise TypeError("meta or its provenance is not a JSON object")
            result = ClientResult(
                client=str(meta["client"]), prototypes=data["prototypes"], beta=data["beta"],
                intercept=float(meta["intercept"]), threshold=float(meta["threshold"]),
                provenance=meta["provenance"], normalization=meta.get("normalization"),
                heldout={k[len("heldout_"):]: data[k] for k in data.files
                         if k.startswith("heldout_")} or None,
                row=meta["row"], seconds=float(meta["seconds"]),
                cpu_seconds=float(meta.get("cpu_seconds", 0.0)))
            return result, meta.get("key")
    except BadPart:
        raise
    except Exception as exc:  # noqa: BLE001 - zip, npy and JSON errors alike: a bad part
        raise BadPart(f"unreadable ({type(exc).__name__}: {str(exc)[:120]})",
                      path=shown) from None
