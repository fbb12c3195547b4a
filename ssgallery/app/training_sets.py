"""Bounded training sets for ``compress``: each client's images and at most K impostors.

A one-vs-all SVM on every enrolled image costs more per client as the gallery grows
(and the threshold CV refits it 5 more times), so the whole run grows faster than
quadratically. Each client therefore trains on its own images and at most
``max_impostors`` impostor images, chosen by one of:

- ``"sample"`` (default): a seeded sample stratified over subjects. Every impostor
  subject gives the same number of images (+-1) and as many subjects as possible are
  covered, so the held-out-by-subject threshold CV still sees many people.
- ``"cohort"``: the impostor subjects nearest to the client in the matcher space
  (Euclidean distance between subject means of the features), whole subjects first,
  nearest first: the hardest impostors. The threshold is then set against them (a
  conservative threshold on the general population).

The sample depends only on the seed, the client id and the store's labels, never on
the order in which clients are processed or on the number of workers. When a client
has at most K impostor images the cap does not bite: every row is used, in store
order, which is exactly the uncapped training set (AT&T galleries are unchanged).
"""

import zlib

import numpy as np

DEFAULT_MAX_IMPOSTORS = 600  # images; AT&T (40 x 10 = 400 images) is never capped
IMPOSTOR_MODES = ("sample", "cohort")


def client_rng(seed, client):
    """Generator seeded by (seed, client id): the same for a client whatever the run."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(str(client).encode())])


def training_rows(codes, client, *, max_impostors=DEFAULT_MAX_IMPOSTORS, impostors="sample",
                  seed=0, client_id=None, subject_distance=None):
    """Store rows a client trains on: its own images and at most K impostors, sorted.

    Parameters
    ----------
    codes : ndarray of shape (n,), int
        Subject code (0..s-1) of every store image.
    client : int
        The client's code.
    max_impostors : int or None
        K; None or 0 = every impostor image.
    impostors : {"sample", "cohort"}
    seed : int
    client_id : str
        Seeds the sample with `client_rng` (default: the code).
    subject_distance : callable(client code) -> ndarray of shape (s,), optional
        Distance from the client to every subject, for ``"cohort"``
        (`cohort_distances`).

    Returns
    -------
    rows : ndarray of shape (n_client + min(K, n_impostor),), int64, increasing
    capped : bool
        True when impostor images were left out.
    """
    codes = np.asarray(codes)
    own = codes == client
    neg = np.flatnonzero(~own)
    if not max_impostors or len(neg) <= max_impostors:
        return np.arange(len(codes), dtype=np.int64), False
    subj = codes[neg]
    if impostors == "cohort":
        # nearest subject first, store order inside it
        chosen = neg[np.lexsort((neg, subject_distance(client)[subj]))[:max_impostors]]
    else:
        rng = client_rng(seed, client if client_id is None else client_id)
        subject_key = rng.permutation(int(codes.max()) + 1)[subj]
        within = rng.random(len(neg))
        # rank of each image inside its subject (random order), then round-robin over
        # subjects in a random order: 1 image of every subject before a 2nd of any
        by_subject = np.lexsort((within, subj))
        sorted_subj = subj[by_subject]
        starts = np.flatnonzero(np.r_[True, sorted_subj[1:] != sorted_subj[:-1]])
        first = np.repeat(starts, np.diff(np.r_[starts, len(neg)]))
        rank = np.empty(len(neg), dtype=np.int64)
        rank[by_subject] = np.arange(len(neg)) - first
        chosen = neg[np.lexsort((subject_key, rank))[:max_impostors]]
    return np.sort(np.concatenate([np.flatnonzero(own), chosen])).astype(np.int64), True


def subject_means(codes, feature_chunks):
    """Mean feature vector of every subject code, read chunk by chunk.

    Parameters
    ----------
    codes : ndarray of shape (n,), int in 0..s-1
    feature_chunks : iterable of (start, ndarray of shape (k, d))

    Returns
    -------
    means : ndarray of shape (s, d)
    """
    codes = np.asarray(codes)
    counts = np.bincount(codes).astype(float)
    sums = None
    for start, F in feature_chunks:
        if sums is None:
            sums = np.zeros((len(counts), F.shape[1]))
        np.add.at(sums, codes[start:start + len(F)], F)
    return sums / np.maximum(counts, 1)[:, None]


def cohort_distances(means):
    """``client code -> distances (s,)`` between subject means, one row at a time."""
    sq = np.einsum("ij,ij->i", means, means)

    def distances(client):
        return np.sqrt(np.maximum(sq + sq[client] - 2.0 * means @ means[client], 0.0))

    return distances


def trained_rows(store, models, matcher=None):
    """The store rows a gallery's models trained on, as `training_rows` chose them for
    each client (its own images and its impostors: every row, or the cap's sample).

    A client's rows are known when its provenance names this very store
    (``store_fingerprint``: not an earlier one an ``--update`` kept it from) and, capped
    (``impostors_capped``), the ``seed`` of the sample (recorded since 2026-11-28) and,
    for ``"cohort"``, the subjects' distances in the matcher space (from ``matcher``'s
    features of the store); and when they are as many as it trained on (``n_genuine`` +
    ``n_impostor``).

    Parameters
    ----------
    store : EnrollmentStore
        The store the gallery was compressed from.
    models : dict
        Client id -> its model (with ``provenance``), the gallery's clients.
    matcher : Matcher, optional
        The gallery's matcher (a ``"cohort"`` client's distances; None: such a client's
        rows are not known).

    Returns
    -------
    rows : ndarray of int64, increasing
        Every row some known client trained on.
    unknown : list of str
        The clients whose rows are not known.
    """
    subjects, codes = np.unique(np.asarray(store.labels).astype(str), return_inverse=True)
    index = {s: i for i, s in enumerate(subjects)}
    trained, unknown, distance = np.zeros(len(codes), bool), [], None
    for client, model in models.items():
        p = model.provenance or {}
        capped, cohort = p.get("impostors_capped"), p.get("impostors") == "cohort"
        if p.get("store_fingerprint") != store.fingerprint or client not in index or \
                not _recorded_rows(p) or (capped and cohort and matcher is None):
            unknown.append(client)
            continue
        if capped and cohort and distance is None:
            features = np.asarray(store.matcher_features(matcher), dtype=float)
            distance = cohort_distances(subject_means(codes, [(0, features)]))
        rows, _ = training_rows(codes, index[client], client_id=client,
                                max_impostors=p.get("max_impostors") if capped else None,
                                impostors=p.get("impostors", "sample"), seed=p.get("seed", 0),
                                subject_distance=distance)
        if len(rows) != p.get("n_genuine", -1) + p.get("n_impostor", -1):
            unknown.append(client)
            continue
        trained[rows] = True
    return np.flatnonzero(trained).astype(np.int64), unknown


def _recorded_rows(p):
    """Whether a provenance (data from a gallery file) holds what `trained_rows` redraws
    a client's rows from, of the types compress writes: ``impostors_capped`` a bool
    (absent: not capped, as before it was recorded), ``n_genuine`` and ``n_impostor``
    whole numbers >= 0 and, capped, ``impostors`` one of `IMPOSTOR_MODES`,
    ``max_impostors`` a whole number >= 1 and the sample's ``seed``."""
    from ssgallery.checks import is_bool, is_int

    counts = all(is_int(p.get(k)) and p[k] >= 0 for k in ("n_genuine", "n_impostor"))
    if not (counts and is_bool(p.get("impostors_capped", False))):
        return False
    return not p.get("impostors_capped", False) or (
        p.get("impostors", "sample") in IMPOSTOR_MODES and is_int(p.get("max_impostors"))
        and p["max_impostors"] >= 1 and is_int(p.get("seed")))
