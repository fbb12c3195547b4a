"""``ssgallery roc``: protocol run, score files or gallery + probe folder in, report
folder out (figures of merit from :mod:`ssgallery.biometrics.evaluation`)."""

import os
from pathlib import Path

import numpy as np

from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.scores import Scores, read_score_files
from ssgallery.errors import InputError
from ssgallery.learn.threads import single_threaded_blas

# --------------------------------------------------------------------------- entry point

def _method_order(table):
    """Known methods in registry order (svm first), then others by name; m ascending."""
    from ssgallery.biometrics.methods import METHOD_NAMES

    known = table.method in METHOD_NAMES
    rank = METHOD_NAMES.index(table.method) if known else len(METHOD_NAMES)
    return (rank, table.method, -1 if table.m is None else table.m, table.repetition)


def _load_faces_source(faces_dir, store_path, warn, matcher_cmd=None):
    """(images, labels, probe labels, source, matcher factory or None, enrollable) from
    a faces folder or the enrollment store (its matcher configuration is reused, and
    its background subjects are never enrolled)."""
    if faces_dir is not None:
        from ssgallery.images.ingest import load_faces

        faces = load_faces(faces_dir, size=None, warn=warn)  # like enroll: first image's size
        return (faces.images, faces.labels, np.asarray(faces.paths), os.fspath(faces_dir),
                None, None)
    if not Path(store_path).exists():
        raise InputError(f"{store_path}: no enrollment store here; give a faces folder "
                         f"(ssgallery roc FACES_DIR) or run 'ssgallery enroll FACES_DIR' first")
    from ssgallery.formats.store import load_store
    from ssgallery.matchers import get_matcher_class
    from ssgallery.matchers.host import host_matcher

    store = load_store(store_path)
    cls, config = get_matcher_class(store.matcher_name), dict(store.matcher_config)
    host = host_matcher(matcher_cmd) if store.matcher_name == "external" else None
    # a fresh matcher like the store's (the host's program), refitted on each split
    return (store.images, store.labels, np.asarray(store.paths), os.fspath(store_path),
            lambda: cls(**config).attach_host(host), list(store.clients))


@single_threaded_blas()
def roc(faces_dir=None, *, out_dir="report", store_path="enrollment.h5", scores=None,
        gallery=None, probes=None, methods=("svm", "ssvm", "svm-red", "svm-sel"), m=2,
        n_enrolled=None, n_train=5, repetitions=5, seed=0, n_jobs=1, progress=None,
        progress_total=None, warn=None, plot=True, identification=True, force=False,
        key_file=None, matcher_cmd=None):
    """What ``ssgallery roc`` does: score claims, evaluate, write the report folder.

    Exactly one source is used: ``scores`` (4-column score files), ``gallery`` +
    ``probes`` (an existing gallery on a labelled probe folder), or the protocol on
    ``faces_dir`` (default: the enrollment store ``store_path``).

    Parameters
    ----------
    progress_total : callable(int), optional
        Called once with the number of client fits before they start (protocol mode).
    identification : bool
        In protocol mode, also search every probe against every client (CMC, DIR).
    force : bool
        Replace report files that were not written by ``ssgallery roc``.
    key_file, matcher_cmd : str, optional
        The host's signing key and external matcher program (see
        :func:`ssgallery.app.verify.load_client`).
    Other parameters: see :func:`ssgallery.biometrics.protocol.run_protocol`.

    Returns
    -------
    dict
        ``{"summaries": [...], "identification": [...] or None, "files": {...},
        "source": str, "mode": str, "config": {}}``.
    """
    from ssgallery.biometrics import report
    from ssgallery.images.ingest import default_warn

    warn = warn or default_warn
    config = {}
    if scores:
        if gallery or probes or faces_dir:
            raise InputError("--scores cannot be combined with FACES_DIR or --gallery/--probes")
        tables = sorted(read_score_files(scores), key=_method_order)
        mode, source = "scores", ", ".join(os.fspath(s) for s in scores)
    elif gallery or probes:
        if not (gallery and probes):
            raise InputError("--gallery and --probes go together")
        if faces_dir:
            raise InputError("give either FACES_DIR or --gallery/--probes, not both")

        tables = [score_gallery(gallery, probes, warn=warn, key_file=key_file,
                                matcher_cmd=matcher_cmd)]
        mode, source = "gallery", f"{gallery} on {probes}"
    else:
        from ssgallery.biometrics.protocol import make_splits, run_protocol

        images, labels, paths, source, factory, enrollable = _load_faces_source(
            faces_dir, store_path, warn, matcher_cmd)
        splits = make_splits(labels, n_enrolled, n_train, repetitions, seed, enrollable)
        if progress_total:
            progress_total(len(splits) * len(splits[0].enrolled))
        tables = run_protocol(images, labels, methods, m, n_enrolled, n_train, repetitions,
                              seed, matcher_factory=factory, probe_labels=paths,
                              progress=progress, n_jobs=n_jobs, enrollable=enrollable,
                              identification=identification)
        mode = "protocol"
        config = {"enrolled": len(splits[0].enrolled), "train_images": int(n_train),
                  "repetitions": int(repetitions), "seed": int(seed),
                  "m": [int(v) for v in np.atleast_1d(m)], "methods": list(methods)}
    summaries = evaluate(tables)
    searches = [t.search for t in tables if t.search is not None]
    found = None
    if searches:
        from ssgallery.biometrics.identification import evaluate_identification

        found = evaluate_identification(searches)
    files = report.write_report(out_dir, tables, summaries, mode=mode, source=source,
                                config=config, plot=plot, warn=warn, identification=found,
                                force=force)
    return {"summaries": summaries, "identification": found, "files": files,
            "source": source, "mode": mode, "config": config}




def score_gallery(gallery_path, probes_dir, warn=None, key_file=None, matcher_cmd=None):
    """Score every probe of a labelled folder against every client of a gallery.

    ``probes_dir/<subject>/*.png``: a probe is a genuine claim for the client with its
    subject's name and an impostor claim against every other client (so probes of
    subjects not in the gallery are impostors against every client). A probe that is
    not a face for the gallery's matcher is a failure to acquire (score NaN).

    Returns
    -------
    Scores
        Method ``"gallery"``, repetition 0; ``clients[c]`` holds ``matches`` (m) and
        the gallery's ``threshold``.
    """
    from ssgallery.app.verify import failures_to_acquire
    from ssgallery.formats.gallery import read_gallery
    from ssgallery.formats.integrity import load_key
    from ssgallery.images.ingest import load_faces, natural_key
    from ssgallery.matchers.host import host_matcher

    host = host_matcher(matcher_cmd) if matcher_cmd is not None else None
    info = read_gallery(gallery_path, arrays=True, key=load_key(key_file), host=host,
                        matcher=True)
    ids = sorted(info.clients, key=natural_key)
    if not ids:
        raise InputError("gallery has no clients", path=gallery_path)
    h, w = (int(v) for v in info.header["image_shape"])
    kwargs = {} if warn is None else {"warn": warn}
    faces = load_faces(probes_dir, size=(w, h), **kwargs)
    matcher = info.matcher
    feats = matcher.transform(faces.images)
    fta = failures_to_acquire(matcher, faces.images)[0]  # scored NaN: rejected
    subjects = faces.labels.astype(str)
    if not set(subjects) & set(ids):
        raise InputError(f"no probe subject folder matches a gallery client (gallery: "
                         f"{', '.join(ids[:5])}...)", path=probes_dir)
    claimed, real, probe, score, clients = [], [], [], [], {}
    for c in ids:
        model = info.clients[c]
        g = model.decision_function(feats, model.similarity_function(matcher))
        claimed.append(np.full(len(g), c))
        real.append(subjects)
        probe.append(np.asarray(faces.paths).astype(str))
        score.append(np.where(fta, np.nan, g))
        clients[c] = {"matches": float(model.n_prototypes), "threshold": model.threshold}
    m_values = {int(info.clients[c].n_prototypes) for c in ids}
    return Scores("gallery", m_values.pop() if len(m_values) == 1 else None, 0,
                  np.concatenate(claimed), np.concatenate(real), np.concatenate(probe),
                  np.concatenate(score).astype(float), clients)


__all__ = ["roc", "score_gallery"]
