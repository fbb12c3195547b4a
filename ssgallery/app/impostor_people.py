"""The interval by impostor person of a gallery's calibration (``far_by_person``) with
its people, so that ``compress --update`` counts a person claimed against both its
blocks (the kept clients and the new ones) once, as one compress of every client does.

The record keeps each person's counts (``people``: ``[id, k, n]``, accepted scores
and scores over the clients) under an id that names no one: `person_ids`, a digest of
the gallery's ``salt`` (`new_salt`, from the store's content, recorded beside the
people, kept by every ``--update`` of the gallery so that its ids still match), the subject and the digests of
the subject's enrolled image files (the store's ``sha256``; ``enroll --add`` appends
subjects and leaves the others' as they were). Galleries of two stores never share an
id, even when trained against the same background files; the gallery never holds its impostor
people's names, but whoever holds the gallery and a person's very image files and
folder name (a public set's, say) can compute that person's id in it. A block without
ids (a record written before them, or one whose ids were not salted, c7a8e11) is added
as disjoint people, as before (`ssgallery.app.thresholds.merged_record`). The record is
checked on read (`ssgallery.formats.interval_sums.people_problem`).
"""

import hashlib

import numpy as np

__all__ = ["check_kept_people", "foreign_people", "impostor_people", "kept_block", "kept_salt", "merged_by_person",
           "new_block", "new_salt", "person_ids"]

PERSON_ID = "ssgallery-impostor-person-2"  # the digest's domain: never another digest's


def new_salt(fingerprint):
    """A new gallery's salt of its impostor people's ids: 32 hex digits of the sha256 of
    `PERSON_ID` and the store's ``fingerprint`` (its content,
    `ssgallery.formats.store.EnrollmentStore.fingerprint`), so that one store compressed
    twice gives the same gallery and two stores (other clients, the same background
    files) share no id. The fingerprint is in the gallery in clear (``store_fingerprint``):
    a random salt would link no less between galleries of one store."""
    return hashlib.sha256(f"{PERSON_ID}\nsalt\n{fingerprint}".encode()).hexdigest()[:32]


def person_ids(labels, sha256, salt):
    """An id per subject of a store that names no one: the first 32 hex digits of the
    sha256 of `PERSON_ID`, the gallery's ``salt``, the subject and the sorted sha256
    digests of its image files.

    Parameters
    ----------
    labels : array_like of str, shape (n,)
        The subject of each store image.
    sha256 : sequence of str, shape (n,)
        The sha256 of each image's file.
    salt : str
        The gallery's (`new_salt`; an update's: the kept record's).

    Returns
    -------
    dict of str to str or None
        Subject -> id; None when two share one (never seen: 128 bits).
    """
    files = {}
    for label, digest in zip(map(str, labels), map(str, sha256)):
        files.setdefault(label, []).append(digest)
    ids = {label: hashlib.sha256("\n".join([PERSON_ID, salt, label, *sorted(d)]).encode())
           .hexdigest()[:32] for label, d in files.items()}
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
    (`ssgallery.app.thresholds.clustered_sums`); None without sums (unknown). Its
    ``people`` are None (counted apart) when they have no ``salt`` (c7a8e11's)."""
    if sums is None:
        return None
    people = record.get("people") if record.get("salt") is not None else None
    return {"sums": sums, "salt": record.get("salt"),
            "people": None if people is None else {p: [k, n] for p, k, n in people}}


def kept_salt(blocks):
    """The salt of an update's kept block that names its people (its ids are salted
    with it: the new clients' must be too), else None (a new one: `new_salt`)."""
    return next((b["salt"] for b in blocks
                 if b is not None and b["people"] is not None), None)


def foreign_people(blocks, ids):
    """How many of the people an update's kept blocks name (`kept_block`, data from the
    gallery) are no subject of the store under their salt: ``ids`` (`person_ids` of the
    store's subjects with that salt, `kept_salt`). A store only grows (``enroll --add``
    appends subjects and leaves the others' files as they were), so each kept id is one
    of them; one that is not is an edited salt or id (a salt edited to any 32 hex digits
    made every kept person new, each counted twice beside the new clients' own), or a
    gallery of another store.

    Returns
    -------
    (int, int)
        The kept people that are no subject's, and the kept people.
    """
    known = set(ids.values())
    named = [p for b in blocks if b is not None and b["people"] is not None
             for p in b["people"]]
    return sum(p not in known for p in named), len(named)


def check_kept_people(blocks, ids, path):
    """Refuse (`ssgallery.errors.InputError` naming the gallery ``path``) an update whose
    kept record names people that are no subject of the store (`foreign_people`; ``ids``
    None: not known, nothing checked): they would be counted twice."""
    from ssgallery.errors import InputError, option

    foreign, named = foreign_people(blocks, ids) if ids is not None else (0, 0)
    if foreign:
        raise InputError(f"calibration: far_by_person: {foreign} of the {named} impostor "
                         "people it counts are no subject of the store under its salt (an "
                         "edited salt or id, or a gallery of another store): an update would "
                         "count them twice; compress every client again without "
                         f"{option('update')}",
                         path=path)


def merged_by_person(blocks, salt):
    """One interval by impostor person from blocks that name their people (`new_block`,
    `kept_block`, their ids salted with ``salt``): each person's counts added over the
    blocks (one person once, as one compress of every client counts them), recorded
    with them (``people``, sorted by id) and the ``salt``; None when there is no trial.
    (Blocks that do not name them are added as disjoint people:
    `ssgallery.app.thresholds.merged_record`.)"""
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
        record["salt"] = salt
    return record


def impostor_people(far_by_person, labels=None):
    """How many people the thresholds' impostor scores are of: the clusters of the
    interval by person (``far_by_person``,
    `ssgallery.app.impostor_people.merged_by_person`), at most the store's subjects
    (``labels``: the subject of each of its images). An update whose blocks name their
    people counts each once; one that adds to a record written before the ids adds its
    clients' people to the kept record's as other people (sums, not people), so one
    person counted in both blocks is counted twice there; no person is outside the
    store, which only grows (enroll --add).

    Parameters
    ----------
    far_by_person : dict
        The record's ``far_by_person`` (with ``sums``).
    labels : array_like, optional
        The store's subject of each image.

    Returns
    -------
    int
    """
    people = int(far_by_person["sums"]["clusters"])
    if labels is not None and len(labels):
        people = min(people, int(np.unique(np.asarray(labels).astype(str)).size))
    return people
