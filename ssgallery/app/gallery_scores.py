"""``roc --gallery G --probes DIR``'s scores: every probe of a labelled folder against
every client of an existing gallery (`score_gallery`), as the verification host would
score them; `ssgallery.app.roc.roc_gallery` turns them into the report."""

import numpy as np

from ssgallery.biometrics.scores import Scores
from ssgallery.errors import InputError
from ssgallery.formats.integrity import reads_key_files
from ssgallery.matchers.base import transform_in_chunks
from ssgallery.progress import as_progress


@reads_key_files()
def score_gallery(gallery_path, probes_dir, warn=None, key_file=None, matcher_cmd=None,
                  progress=None, privacy_key_file=None):
    """Score every probe of a labelled folder against every client of a gallery
    (``progress``: reading the probes, their features, one step per client scored;
    ``key_file``, ``matcher_cmd``, ``privacy_key_file``: as `ssgallery.app.roc.roc_gallery`).

    ``probes_dir/<subject>/*.png``: a probe is a genuine claim for the client with its
    subject's name and an impostor claim against every other client (so probes of
    subjects not in the gallery are impostors against every client). A probe that is
    not a face for the gallery's matcher is a failure to acquire (score NaN).

    Returns
    -------
    Scores
        Method ``"gallery"``, repetition 0; ``clients[c]`` holds ``matches`` (m), the
        gallery's ``threshold`` and its Z-norm ``norm_mean``, ``norm_std``; ``search``:
        the full search of the probes that are faces, with the gallery's 1:N operating
        point (`ssgallery.app.open_set`; None for a gallery written before it).
    """
    from ssgallery.formats.encryption import load_keys
    from ssgallery.formats.gallery import read_gallery
    from ssgallery.images.ingest import natural_key
    from ssgallery.matchers.host import host_matcher

    host = host_matcher(matcher_cmd, warn) if matcher_cmd is not None else None
    key, privacy_key = load_keys(key_file, privacy_key_file)
    info = read_gallery(gallery_path, arrays=True, key=key, host=host, matcher=True,
                        privacy_key=privacy_key)
    ids = sorted(info.clients, key=natural_key)
    if not ids:
        raise InputError("gallery has no clients", path=gallery_path)
    from ssgallery.app.open_set import read_record

    point = read_record(info.header, ids, gallery_path)  # checked before any probe is read
    progress = as_progress(progress)
    faces, feats, fta = probe_features(info, probes_dir, ids, warn, progress)
    _warn_training_probes(info, faces, (gallery_path, probes_dir), privacy_key, warn)
    table = _score_every_client(info, ids, faces, feats, fta, progress)
    searched = np.tile(~fta, len(ids))  # identify never searches a failure to acquire
    if searched.any():
        table.search = Scores("gallery", table.m, 0, table.claimed[searched],
                              table.real[searched], table.probe[searched],
                              table.score[searched], table.clients,
                              operating_point=point)
    return table


def training_probes(info, faces, privacy_key=None):
    """How many of the probes ``faces`` are images the gallery ``info``'s models trained
    on: the same bytes (sha256) as a training image of some client's model
    (`ssgallery.app.training_sets.trained_rows`: its own images and its impostors, every
    stored image or the cap's sample) in the store its header names (``store``), when
    that file is there and still the store it was compressed from
    (``store_fingerprint``); and, for a matcher that learns from images (eigenface's
    PCA), how many more are images of that store its basis was fitted on (every stored
    image but those of the subjects enroll --add brought in since, ``stale_clients``):
    people left out by ``--max-impostors``, a client's images when no model took them as
    impostors.

    Returns
    -------
    dict or None
        ``count`` (training images), ``basis`` (the others the basis was fitted on),
        ``store`` (its path), ``unknown`` (the clients whose training images cannot be
        told); None when none can be told (no such store, another enrollment, an
        encrypted one without its key, unreadable, no client's rows known).
    """
    import os

    from ssgallery.app.fold_spaces import learns_from_images
    from ssgallery.app.training_sets import trained_rows
    from ssgallery.errors import SsgalleryError
    from ssgallery.formats.store import load_store

    path = info.header.get("store")
    if not isinstance(path, str) or not path or not os.path.isfile(path):
        return None
    try:
        store = load_store(path, images=False, privacy_key=privacy_key)
        if store.fingerprint != info.header.get("store_fingerprint"):
            return None
        rows, unknown = trained_rows(store, info.clients, info.matcher)
    except SsgalleryError:
        return None
    if len(unknown) == len(info.clients):
        return None
    sha = np.asarray(store.sha256)
    trained = set(sha[rows].tolist())
    fitted = set()
    if learns_from_images(info.matcher):
        stale = np.isin(np.asarray(store.labels).astype(str), list(store.stale_clients))
        fitted = set(sha[~stale].tolist()) - trained
    return {"count": sum(h in trained for h in faces.sha256),
            "basis": sum(h in fitted for h in faces.sha256), "store": path,
            "unknown": unknown}


def _warn_training_probes(info, faces, paths, privacy_key, warn):
    """One warning line when some probes are the gallery's own training images, or
    images its matcher's basis was fitted on (`training_probes`): the figures on them
    are not those of new images (optimistic on the training images)."""
    from ssgallery.errors import printable
    from ssgallery.images.ingest import default_warn
    from ssgallery.tables import counted

    found = training_probes(info, faces, privacy_key)
    if found is None or not (found["count"] or found["basis"]):
        return
    gallery, probes = (printable(str(p)) for p in paths)
    store, untold = printable(found["store"]), found["unknown"]
    basis = f"the {printable(str(info.header.get('matcher')))} basis of {gallery}"
    scored = ("which score unlike new images (on AT&T such genuine images were rejected "
              "more often: docs/benchmarks/frr_heldout.md)")
    if not found["count"]:
        line = (f"{found['basis']} of {len(faces)} probes in {probes} are images {basis} was "
                f"fitted on (the same bytes as images of {store}, the store it was "
                f"compressed from; no model of it trained on them), {scored}")
    else:
        line = (f"{found['count']} of {len(faces)} probes in {probes} are images {gallery}'s "
                f"models were trained on (the same bytes as their training images in {store},"
                " the store it was compressed from"
                + (f"; not counted: the training images of {counted(len(untold), 'client')},"
                   " which cannot be told (trained on an earlier version of the store, "
                   "impostors sampled by a gallery written before 2026-11-28, or a provenance"
                   " that does not record them)" if untold else "")
                + "): its models were fitted to these very images, so the figures are "
                "optimistic" + (f"; {found['basis']} more are images {basis} was fitted on, "
                                f"{scored}" if found["basis"] else ""))
    (warn or default_warn)(line + "; evaluate on images that were not enrolled")


def probe_features(info, probes_dir, ids, warn, progress):
    """The labelled probes of a folder, in the gallery's matcher space.

    Parameters
    ----------
    info : Gallery
        A gallery read with its matcher (``header`` and ``matcher`` are used).
    probes_dir : str or Path
        ``PROBES/<subject>/<images>``, read at the gallery's image size.
    ids : list of str
        The gallery's client ids: at least one probe subject must be one of them.
    warn : callable(str) or None
        Receives each input warning (None: `ssgallery.images.ingest.default_warn`).
    progress : ssgallery.progress.Progress
        Steps of reading and of mapping the probes.

    Returns
    -------
    faces : FaceSet
        The probes (`ssgallery.images.ingest.FaceSet`).
    feats : ndarray, shape (n, d)
        Their features.
    fta : ndarray of bool, shape (n,)
        Failures to acquire (scored NaN: rejected).

    Raises
    ------
    InputError
        No probe subject folder is a gallery client.
    """
    from ssgallery.app.verify import failures_to_acquire
    from ssgallery.images.ingest import load_faces

    h, w = (int(v) for v in info.header["image_shape"])
    kwargs = {} if warn is None else {"warn": warn}
    faces = load_faces(probes_dir, size=(w, h), progress=progress, input_options=False,
                       **kwargs)
    feats = transform_in_chunks(info.matcher, faces.images, progress=progress, each=True)
    fta = failures_to_acquire(info.matcher, faces.images)[0]  # scored NaN: rejected
    if not set(faces.labels.astype(str)) & set(ids):
        raise InputError(f"no probe subject folder matches a gallery client (gallery: "
                         f"{', '.join(ids[:5])}...)", path=probes_dir)
    return faces, feats, fta


def _score_every_client(info, ids, faces, feats, fta, progress):
    """Every probe against every client ``ids`` of the gallery ``info``: the `Scores`
    table (failures to acquire score NaN), one progress step per client."""
    subjects = faces.labels.astype(str)
    claimed, real, probe, score, clients = [], [], [], [], {}
    progress.start("scoring clients", len(ids), "clients")
    for c in ids:
        progress.advance()
        model = info.clients[c]
        g = model.decision_function(feats, model.similarity_function(info.matcher))
        claimed.append(np.full(len(g), c))
        real.append(subjects)
        probe.append(np.asarray(faces.paths).astype(str))
        score.append(np.where(fta, np.nan, g))
        clients[c] = {"matches": float(model.n_prototypes), "threshold": model.threshold}
        norm = model.normalization or {}
        if norm.get("kind") == "znorm":
            clients[c].update(norm_mean=float(norm["mean"]), norm_std=float(norm["std"]))
    progress.end()
    m_values = {int(info.clients[c].n_prototypes) for c in ids}
    return Scores("gallery", m_values.pop() if len(m_values) == 1 else None, 0,
                  np.concatenate(claimed), np.concatenate(real), np.concatenate(probe),
                  np.concatenate(score).astype(float), clients)


__all__ = ["score_gallery", "training_probes"]
