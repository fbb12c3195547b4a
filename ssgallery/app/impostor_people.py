"""The interval by impostor person of a gallery's calibration (``far_by_person``) with
its people, so that ``compress --update`` counts a person claimed against both its
blocks (the kept clients and the new ones) once, as one compress of every client does.

The record keeps each person's counts (``people``: ``[id, k, n]``, accepted scores
and scores over the clients) under an id that names no one: `person_ids`, a digest of
the digests of the person's enrolled image files (the store's ``sha256``), the same in
every compress of one store and after ``enroll --add`` (which appends new subjects and
leaves the others' images as they were). The gallery never holds the store's subject
names of its impostor people; only someone holding a person's very image files can tell
whose id it is. A block without ids (a record written before them) is added as
disjoint people, as before (`ssgallery.app.thresholds.merged_record`). The record is
checked on read (`ssgallery.formats.interval_sums.people_problem`).
"""

import hashlib

import numpy as np

__all__ = ["kept_block", "merged_by_person", "new_block", "person_ids"]

PERSON_ID = "ssgallery-impostor-person-1"  # the digest's domain: never another digest's


def person_ids(labels, sha256):
    """An id per subject of a store that names no one: the first 32 hex digits of the
    sha256 of `PERSON_ID` and the sorted sha256 digests of the subject's image files.

    Parameters
    ----------
    labels : array_like of str, shape (n,)
        The subject of each store image.
    sha256 : sequence of str, shape (n,)
        The sha256 of each image's file.

    Returns
    -------
    dict of str to str or None
        Subject -> id; None when two subjects share one (the same files enrolled under
        two names: their people could not be told apart).
    """
    files = {}
    for label, digest in zip(map(str, labels), map(str, sha256)):
        files.setdefault(label, []).append(digest)
    ids = {label: hashlib.sha256("\n".join([PERSON_ID, *sorted(d)]).encode()).hexdigest()[:32]
           for label, d in files.items()}
    return ids if len(set(ids.values())) == len(ids) else None


def new_block(info, ids):
    """The block of a compress run's own clients: ``{"sums", "people"}`` from
    `ssgallery.biometrics.calibration.calibrate_thresholds`' ``info`` (``people``:
    id -> [k, n], None without ``ids`` for every person); None without an interval."""
    record = info.get("far_by_person")
    if record is None:
        return None
    counts, people = info.get("person_counts"), None
    if counts is not None and ids is not None and all(str(p) in ids for p in counts[0]):
        people = {ids[str(p)]: [int(k), int(n)] for p, k, n in zip(*counts)}
    return {"sums": record["sums"], "people": people}


def kept_block(record, sums):
    """The block of the clients an update keeps: the gallery's ``far_by_person`` (checked
    on read: `ssgallery.formats.interval_sums.people_problem`) and its ``sums``
    (`ssgallery.app.thresholds.clustered_sums`); None without sums (unknown)."""
    if sums is None:
        return None
    people = record.get("people")
    return {"sums": sums,
            "people": None if people is None else {p: [k, n] for p, k, n in people}}


def merged_by_person(blocks):
    """One interval by impostor person from blocks that name their people (`new_block`,
    `kept_block`): each person's counts added over the blocks (one person once, as one
    compress of every client counts them), recorded with them (``people``, sorted by
    id); None when there is no trial. (Blocks that do not name them are added as
    disjoint people: `ssgallery.app.thresholds.merged_record`.)"""
    from ssgallery.biometrics.calibration import clustered_record
    from ssgallery.biometrics.intervals import cluster_sums

    people = {}
    for block in blocks:
        for p, (k, n) in block["people"].items():
            counts = people.setdefault(p, [0, 0])
            counts[0] += k
            counts[1] += n
    order = sorted(people)
    k, n = (np.array([people[p][i] for p in order], dtype=float) for i in (0, 1))
    record = clustered_record(cluster_sums(k, n))
    if record is not None:
        record["people"] = [[p, *people[p]] for p in order]
    return record
