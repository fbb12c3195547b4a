"""``identify``: 1:N search, "who is this, if anyone?", over a compressed gallery.

Every probe is scored against every client in one similarity block over the gallery's
stacked search index (`ssgallery.formats.search_index`): N x m matches per probe.
In the closed set, candidates are ranked on Z-normalised scores when every client has
its normalisation (so that scores of different clients are comparable), else on raw
scores. In the open set, the top candidate is reported only when it passes the
operating point (`ssgallery.app.open_set.resolve`): by default the gallery's 1:N
threshold on the best *centred* score (each client's score minus its impostor mean, on
one scale for every client; candidates are then ranked on it), set by ``compress`` at a
target FPIR for its N clients; or that threshold at another FPIR, an explicit
threshold, or each client's own verification threshold on its raw score. Otherwise the
probe is "unknown"; the output says which ranking and which operating point. A
probe that is not a usable face (`ssgallery.app.verify.failures_to_acquire`) is
never searched: it is a failure to acquire.

On a light path like ``verify``: numpy, h5py, PIL and the matcher only.
"""

import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import InputError


@dataclass
class Candidate:
    """One client in a probe's ranked list."""

    client: str
    rank: int
    score: float
    normalized: float
    threshold: float
    passes: bool

    def to_dict(self):
        return dict(self.__dict__)


@dataclass
class IdentifyResult:
    """One probe's search result: ``identified`` is a client id or None (unknown, or a
    failure to acquire: then ``reason`` says why and there are no candidates)."""

    probe: str
    identified: object
    candidates: list = field(default_factory=list)
    failed_to_acquire: bool = False
    reason: str = None

    def to_dict(self):
        return {"probe": self.probe, "identified": self.identified,
                "failed_to_acquire": self.failed_to_acquire, "reason": self.reason,
                "candidates": [c.to_dict() for c in self.candidates]}


def exit_status(results):
    """The batch rule of ``identify``, as ``verify``'s: 1 if any probe is unknown, else 3
    if any failed to acquire, else 0 (every probe identified)."""
    if any(r.identified is None and not r.failed_to_acquire for r in results):
        return 1
    return 3 if any(r.failed_to_acquire for r in results) else 0


def rank_clients(index, scores, top, point=None):
    """Candidates of each probe: the ``top`` best clients on normalised scores.

    Parameters
    ----------
    index : SearchIndex
    scores : ndarray, shape (n, N)
        Raw scores g_k(x).
    top : int
    point : dict, optional
        The operating point (`ssgallery.app.open_set.resolve`) that decides each
        candidate's ``threshold`` and ``passes``, and with ``score`` "centred" the
        ranking (on ``(g - mean) / scale``); default (or ``kind`` "verification") each
        client's own threshold on its raw score, Z-normalised ranking.

    Returns
    -------
    list (n) of list of Candidate
    """
    centred = point is not None and point.get("score") == "centred"
    normalized = ((np.asarray(scores, dtype=float) - index.norm_mean) / point["scale"]
                  if centred else index.normalize(scores))
    top = min(int(top), index.n_clients)
    # ties broken by client order (stable sort on the negated scores)
    order = np.argsort(-normalized, axis=1, kind="stable")[:, :top]
    one = point is not None and point["kind"] != "verification"
    value, limit = (normalized, np.full(index.n_clients, point["threshold"])) if one \
        else (scores, index.threshold)
    out = []
    for i, row in enumerate(order):
        out.append([Candidate(client=str(index.client_ids[k]), rank=r + 1,
                              score=float(scores[i, k]), normalized=float(normalized[i, k]),
                              threshold=float(limit[k]), passes=bool(value[i, k] >= limit[k]))
                    for r, k in enumerate(row)])
    return out


def operating_point(header, index, open_set, fpir=None, threshold=None,
                    verification=False, path=None):
    """The operating point of a search (`ssgallery.app.open_set.resolve`); in the closed
    set the verification thresholds (they only mark the candidates that pass; the
    ranking is the Z-normalised one, as it always was)."""
    from ssgallery.app.open_set import read_record, resolve

    record = read_record(header, path)
    if not open_set:
        verification, fpir, threshold = True, None, None
    return resolve(record, index.n_clients, fpir=fpir, threshold=threshold,
                   verification=verification, path=path)


def identify(gallery_path, probes, *, top=5, open_set=False, fpir=None, threshold=None,
             verification_thresholds=False, strict=False, warn=None, key_file=None,
             matcher_cmd=None, progress=None, privacy_key_file=None):
    """Search probe images among every client of a gallery.

    Parameters
    ----------
    gallery_path : str or Path
    probes : list of str or Path
        Probe image files; read and searched `ssgallery.app.verify.BATCH` at a time.
    top : int
        Candidates to return per probe.
    open_set : bool
        Report "unknown" (``identified = None``) when the best candidate does not pass
        the operating point; in the closed set the best candidate is always returned.
    fpir : float, optional
        The gallery's 1:N threshold at this FPIR instead of its compress target.
    threshold : float, optional
        An explicit threshold on the normalised best score.
    verification_thresholds : bool
        Each client's own verification threshold on its raw score instead (a stranger
        gets one chance per client: false alarms grow with N).
    strict, warn, key_file, matcher_cmd, progress, privacy_key_file
        As for `ssgallery.app.verify.verify`.

    Returns
    -------
    results : list of IdentifyResult
        In the order of ``probes``.
    ranking : str
        ``"centred"`` in the open set of a gallery with a 1:N operating point (the score
        its threshold is on: each client's raw score minus its impostor mean, on one
        scale), else ``"znorm"`` when candidates are ranked on Z-normalised scores, else
        ``"raw"``.
    point : dict
        The operating point used (`ssgallery.app.open_set.resolve`).
    """
    from ssgallery.app.verify import host_settings, probe_batches
    from ssgallery.formats.gallery import read_search

    probes = [os.fspath(p) for p in probes]
    if not probes:
        raise InputError("no probe images given")
    if int(top) < 1:
        raise InputError(f"the number of candidates must be at least 1, got {top}")
    index, matcher, header = read_search(
        gallery_path, **host_settings(key_file, matcher_cmd, privacy_key_file))
    if index.n_clients == 0:
        raise InputError("the gallery has no clients", path=gallery_path)
    point = operating_point(header, index, open_set, fpir, threshold, verification_thresholds,
                            os.fspath(gallery_path))
    results = []
    for start, images, sizes in probe_batches(probes, header["image_shape"], strict, warn,
                                              progress):
        results += _search(index, matcher, probes[start:start + len(images)], images, sizes,
                           top, point, open_set, progress)
    ranking = "centred" if point.get("score") == "centred" else \
        ("znorm" if index.normalized else "raw")
    return results, ranking, point


def _search(index, matcher, probes, images, sizes, top, point, open_set, progress):
    """IdentifyResults of one batch of probes (images (k, H, W))."""
    from ssgallery.app.verify import failures_to_acquire
    from ssgallery.matchers.base import transform_in_chunks

    fta, _, reasons = failures_to_acquire(matcher, images, sizes)  # never searched
    results = [IdentifyResult(probe=p, identified=None, failed_to_acquire=True, reason=why)
               for p, why in zip(probes, reasons)]
    if not fta.all():
        features = transform_in_chunks(matcher, np.asarray(images[~fta], dtype=np.float32),
                                       progress=progress)
        scores = index.decision_function(features, matcher.similarity())
        for i, candidates in zip(np.flatnonzero(~fta), rank_clients(index, scores, top, point)):
            best = candidates[0]
            found = best.client if (best.passes or not open_set) else None
            results[i] = IdentifyResult(probe=probes[i], identified=found,
                                        candidates=candidates)
    return results


__all__ = ["Candidate", "IdentifyResult", "exit_status", "identify", "operating_point",
           "rank_clients"]
