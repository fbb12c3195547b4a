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
probe is "unknown", and so is a search whose best ranking score two or more clients share
(a tie, `ssgallery.app.identify_ranking.tie_at_top`: in the open set at or above the
operating point; in the closed set anywhere: ``roc`` counts it by the same rule); the
output says which ranking and which operating point (the ranking:
`ssgallery.app.identify_ranking`). A probe that is not a usable face (`ssgallery.app.verify.failures_to_acquire`) is
never searched: it is a failure to acquire.

On a light path like ``verify``: numpy, h5py, PIL and the matcher only.
"""

import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery.app.identify_ranking import (
    Candidate,
    Decisions,
    decision_values,
    rank_clients,
    tie_at_top,
    tie_text,
)
from ssgallery.errors import InputError
from ssgallery.formats.integrity import reads_key_files


@dataclass
class IdentifyResult:
    """One probe's search result: ``identified`` is a client id or None (unknown, or a
    failure to acquire: then ``reason`` says why and there are no candidates). ``tie``
    names the clients that share the best ranking score (in the open set, at or above
    the operating point): such a search identifies nobody
    (`ssgallery.app.identify_ranking.tie_at_top`)."""

    probe: str
    identified: object
    candidates: list = field(default_factory=list)
    failed_to_acquire: bool = False
    reason: str = None
    tie: list = None

    def to_dict(self):
        return {"probe": self.probe, "identified": self.identified,
                "failed_to_acquire": self.failed_to_acquire, "reason": self.reason,
                "tie": self.tie, "candidates": [c.to_dict() for c in self.candidates]}


def exit_status(results):
    """The batch rule of ``identify``, as ``verify``'s: 1 if any probe is unknown, else 3
    if any failed to acquire, else 0 (every probe identified)."""
    if any(r.identified is None and not r.failed_to_acquire for r in results):
        return 1
    return 3 if any(r.failed_to_acquire for r in results) else 0


def operating_point(header, index, open_set, fpir=None, threshold=None,
                    verification=False, path=None, matcher=None):
    """The operating point of a search (`ssgallery.app.open_set.resolve`); in the closed
    set the verification thresholds (they only mark the candidates that pass; the
    ranking is the Z-normalised one, as it always was). A gallery's 1:N threshold at
    or below some client's lowest possible centred score would accept every probe
    that client ranks first: refused, as `ssgallery.formats.gallery.check_model`
    refuses such a verification threshold."""
    from ssgallery.app.open_set import read_record, resolve
    from ssgallery.formats.gallery.checks import check_open_set_threshold

    record = read_record(header, [str(c) for c in index.client_ids], path)
    if not open_set:
        verification, fpir, threshold = True, None, None
    if record is not None:  # the record is data: checked whatever the mode
        check_open_set_threshold(index, record["threshold"], record["scale"], matcher, path)
    point = resolve(record, index.n_clients, fpir=fpir, threshold=threshold,
                    verification=verification, path=path)
    if point["kind"] == "fpir":  # also T read from the record's curve (--fpir)
        check_open_set_threshold(index, point["threshold"], point["scale"], matcher, path)
    return point


@reads_key_files()
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
        the operating point, or when two or more clients tie at the best ranking score
        and one passes (``tie`` names them); in the closed set the best candidate is
        returned unless two or more clients tie at the best ranking score (unknown,
        ``tie`` names them: `tie_at_top`).
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
    from ssgallery.formats.gallery import open_search

    probes = [os.fspath(p) for p in probes]
    if not probes:
        raise InputError("no probe images given")
    if int(top) < 1:
        raise InputError(f"the number of candidates must be at least 1, got {top}")
    settings = host_settings(key_file, matcher_cmd, privacy_key_file, warn)
    with open_search(gallery_path, **settings) as (index, matcher, header, read):
        if index.n_clients == 0:
            raise InputError("the gallery has no clients", path=gallery_path)
        point = operating_point(header, index, open_set, fpir, threshold,
                                verification_thresholds, os.fspath(gallery_path), matcher)
        records = Records(index, matcher, read, os.fspath(gallery_path))
        results = []
        for start, images, sizes, shown in probe_batches(probes, header["image_shape"],
                                                         strict, warn, progress):
            results += _search(records, probes[start:start + len(images)], images, sizes,
                               top, point, open_set, shown)
    ranking = "centred" if point.get("score") == "centred" else \
        ("znorm" if index.normalized else "raw")
    return results, ranking, point


class Records:
    """The client records ``verify`` reads, for the candidates a search reports: each
    read once from the gallery the search opened (``read``, from
    `ssgallery.formats.gallery.open_search`), and its rows of the search index compared
    with it (`ssgallery.formats.search_index.row_difference`): a difference is an
    error, never a silent misidentification."""

    def __init__(self, index, matcher, read, path=None):
        self.index, self.matcher, self.read, self.path = index, matcher, read, path
        self.row = {str(c): k for k, c in enumerate(index.client_ids)}
        self.models = {}

    def get(self, client_ids):
        """{id: ClientModel} of ``client_ids``, checked against the index."""
        from ssgallery.errors import FormatError, printable
        from ssgallery.formats.search_index import row_difference

        new = sorted(set(client_ids) - set(self.models))
        if new:
            read = self.read(new)
            for cid, model in read.items():
                field = row_difference(self.index, self.row[cid], model)
                if field is not None:
                    raise FormatError(f"integrity check failed: the search index's "
                                      f"{field} of client '{printable(cid)}' differs from "
                                      f"the client's record (re-run 'ssgallery compress')",
                                      path=self.path)
            self.models.update(read)
        return {c: self.models[c] for c in client_ids}

    def scores(self, client_id, features, rows):
        """``verify``'s scores of a claim of ``client_id`` by the probes ``rows`` of a
        batch (features (n, d) in the matcher space): g(x) of the client's record, shape
        (len(rows),), computed as ``verify`` computes them
        (`ssgallery.app.verify.score_features`), so both print the same digits (the
        stacked index's block, `SearchIndex.decision_function`, sums in another order).
        An RBF record scores the whole batch, as ``verify`` does (BLAS sums a block of
        probes in an order of its own); a matcher's own similarity (a program) only the
        probes asked for."""
        from ssgallery.app.verify import score_features

        model = self.get([client_id])[client_id]
        if model.similarity.get("kind") == "rbf":
            return score_features(model, self.matcher, features)[rows]
        return score_features(model, self.matcher, features[rows])


def _search(records, probes, images, sizes, top, point, open_set, progress):
    """IdentifyResults of one batch of probes (images (k, H, W)). A candidate passes only
    when its record would also accept the probe in ``verify`` (`_verify_candidates`)."""
    from ssgallery.app.verify import failures_to_acquire
    from ssgallery.matchers.base import transform_in_chunks

    index, matcher = records.index, records.matcher
    fta, _, reasons = failures_to_acquire(matcher, images, sizes)  # never searched
    results = [IdentifyResult(probe=p, identified=None, failed_to_acquire=True, reason=why)
               for p, why in zip(probes, reasons)]
    if not fta.all():
        features = transform_in_chunks(matcher, np.asarray(images[~fta], dtype=np.float32),
                                       progress=progress, each=True)
        scores = index.decision_function(features, matcher.similarity())
        decisions = decision_values(index, scores, point)  # once: ranking and ties
        ranked = rank_clients(index, decisions, top)
        ties = tie_at_top(index, decisions, open_set)
        _verify_candidates(records, features, ranked, point)
        for i, candidates, tie in zip(np.flatnonzero(~fta), ranked, ties):
            best = candidates[0]
            found = best.client if tie is None and (not open_set or best.passes) else None
            results[i] = IdentifyResult(probe=probes[i], identified=found,
                                        candidates=candidates, tie=tie)
    return results


def _verify_candidates(records, features, ranked, point):
    """Give every reported candidate its record's figures, as ``verify`` gives them:
    ``score`` its record's g(x) (`Records.scores`, the record checked against the index),
    ``ranking_score`` and ``passes`` from that score, and ``passes`` only where
    ``verify`` would accept the probe for that client too (``verified``). The index's
    block only ranked them."""
    wanted = {}
    for i, candidates in enumerate(ranked):
        for c in candidates:
            wanted.setdefault(c.client, []).append(i)
    records.get(list(wanted))
    for client, rows in wanted.items():
        g = records.scores(client, features, rows)
        threshold = records.get([client])[client].threshold
        _, mine, value, limit = decision_values(records.index, g[:, None], point,
                                                [records.row[client]])
        for j, i in enumerate(rows):
            for c in ranked[i]:
                if c.client == client:
                    c.score, c.ranking_score = float(g[j]), float(mine[j, 0])
                    c.verified = bool(g[j] >= threshold)
                    c.passes = bool(value[j, 0] >= limit[0] and c.verified)


__all__ = ["Candidate", "Decisions", "IdentifyResult", "Records", "decision_values",
           "exit_status", "identify", "operating_point", "rank_clients", "tie_at_top",
           "tie_text"]
