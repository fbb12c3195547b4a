"""``compress``: enrollment store -> gallery, one client at a time.

The options come checked, as two objects (`ssgallery.app.options`): `CompressOptions`
(what changes the models: recorded, digested, shipped to the jobs) and `CompressRun`
(how and where the run happens). The steps, one function each: open the
store lazily and plan the clients (`_prepare`), compute the features once in
chunks (`_features`), build each client's bounded job
(`ssgallery.app.training_sets`, `_jobs`), train the jobs on a backend
(`ssgallery.app.parallel.run_jobs`: this process, ``jobs`` local processes or a Dask
cluster; `ssgallery.app.client_training.train_job`), commit each finished client
to ``<gallery>.parts/`` (`ssgallery.app.parts`), then assemble and write the gallery
once, atomically (`_write`). Only this process writes files.

Resumable: after Ctrl-C, SIGKILL or a lost worker, ``CompressRun(resume=True)`` reuses the committed
parts whose store fingerprint and options match and trains only the missing clients.
Incremental: ``update=True`` copies the clients of the existing gallery that were trained
with the same options on the same matcher basis and trains only the others (e.g. the
clients added by ``enroll --add``); when the basis has changed it names the stale clients.
"""

import os
from dataclasses import dataclass, replace

import numpy as np

from ssgallery.app.client_training import (  # noqa: F401  (threshold_*: public here)
    GUARD_GAP,
    ClientJob,
    SharedBlocks,
    threshold_at_far,
    threshold_folds,
    train_job,
)
from ssgallery.app.fold_spaces import FoldSpaces, learns_from_images, shared_folds, subject_order
from ssgallery.app.open_set import operating_point
from ssgallery.app.options import CompressOptions, CompressRun
from ssgallery.app.parallel import run_jobs
from ssgallery.app.parts import PartsFolder, options_digest, run_key
from ssgallery.app.thresholds import apply, calibrate
from ssgallery.app.training_sets import cohort_distances, subject_means, training_rows
from ssgallery.errors import InputError, NotRenderableError, SsgalleryError, option
from ssgallery.learn.supersparse import resolve_init
from ssgallery.learn.threads import single_threaded_blas
from ssgallery.progress import as_progress

FEATURE_BUDGET = 256 * 2**20  # bytes: features of every image kept in memory below this
CHUNK = 1024  # images per read/transform chunk


class CompressInterrupted(KeyboardInterrupt):
    """Ctrl-C/SIGTERM during compress; ``parts`` clients are committed in ``parts_dir``."""

    def __init__(self, parts_dir, parts):
        super().__init__(f"{parts} finished client(s) kept in {parts_dir}")
        self.parts_dir, self.parts = parts_dir, parts


@dataclass
class CompressSummary:
    """What `compress` did (also what ``ssgallery compress --json`` prints)."""

    gallery: str
    store: str
    matcher: str
    dimension: int
    target_far: float
    clients: list  # one dict per client: id, m, threshold, svm_n_support, ...
    basis_stale: bool = False
    trained: list = None  # clients trained by this run (the others were resumed or kept)
    kept: list = None  # clients copied from the existing gallery (update)
    resumed: list = None  # clients read from committed parts (resume)
    jobs: int = 1
    scheduler: str = None
    program_runs: dict = None  # external matcher in this process: {"starts", "calls"}
    threshold_mode: str = None
    calibration: dict = None  # recorded in the gallery: T, held-out FAR estimate + interval
    heldout: dict = None  # client -> its held-out {"impostor", "genuine"} scores (not JSON)
    never_accepting: list = None  # clients whose threshold is above their highest score
    open_set: dict = None  # the 1:N operating point recorded (`ssgallery.app.open_set`)
    worse_than_svm: list = None  # clients whose held-out teacher_gap exceeds GUARD_GAP

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "heldout"}


@dataclass
class _Plan:
    """What every step of one compress run shares."""

    store: object
    matcher: object
    similarity: object
    bounds: object
    todo: list
    options: CompressOptions  # init resolved for the matcher
    codes: np.ndarray = None  # subject code of every store row
    X: np.ndarray = None  # features of every row (None: read per block)
    gram: np.ndarray = None  # S(X, X) when no client is capped
    distance: object = None  # cohort distances
    subjects: np.ndarray = None  # subject of each code
    fold_spaces: object = None  # FoldSpaces: the matcher refitted per threshold-CV fold
    order: np.ndarray = None  # the subjects' shared order for the threshold folds


def _prepare(store_path, gallery_path, options, run, privacy_key=None):
    """Open the store (images stay on disk; ``privacy_key``: an encrypted one), check
    the clients, resolve the matcher, check that protected templates can be written."""
    from ssgallery.formats.atomic import check_writable
    from ssgallery.formats.gallery import FORMAT
    from ssgallery.formats.store import load_store

    store = load_store(store_path, images=False, privacy_key=privacy_key)
    check_writable(gallery_path, FORMAT, run.force)  # fail now, not after training anyone
    todo = list(store.clients) if run.clients is None else run.clients
    unknown = [c for c in todo if c not in store.clients]
    if unknown:
        shown = ", ".join(store.clients[:8]) + (", ..." if len(store.clients) > 8 else "")
        raise SsgalleryError(f"not an enrolled client: {', '.join(unknown[:5])} "
                             f"(enrolled: {shown})", path=store_path)
    if not todo:
        raise InputError("the store has no enrolled client to compress", path=store_path)
    if options.m != "auto" and options.m > len(store.labels):  # and O(m^2) memory
        raise InputError(f"{option('m')} = {options.m} is more prototypes than the store has "
                         f"images ({len(store.labels)}): a super-sparse model keeps fewer",
                         path=store_path)
    from ssgallery.matchers.host import host_matcher

    matcher = store.matcher(host=host_matcher(run.matcher_cmd))
    if options.protect_templates:  # before any training
        from ssgallery.formats.protect import new_protection

        new_protection(matcher, privacy_key, np.zeros((0, matcher.dimension() or 1)))
    similarity = matcher.similarity()
    options = replace(options, init=resolve_init(options.init, similarity))
    subjects, codes = np.unique(store.labels, return_inverse=True)
    return _Plan(store=store, matcher=matcher, similarity=similarity, bounds=matcher.bounds(),
                 todo=todo, options=options, codes=codes, subjects=subjects)


def _feature_chunks(plan):
    """Yield ``(start, features of rows start..start+k)`` over the store, chunk by chunk."""
    cached = getattr(plan.store, "features", None)
    for start, images in plan.store.images.chunks(CHUNK):
        yield start, (cached[start:start + len(images)] if cached is not None
                      else plan.matcher.transform(images))


def _features(plan, progress):
    """Features of every row when they fit `FEATURE_BUDGET` (computed once, in
    chunks, one progress step per image), else None (each job reads and transforms its
    own rows)."""
    cached = getattr(plan.store, "features", None)
    if cached is not None:
        return np.asarray(cached, dtype=float)
    n = len(plan.store.images)
    d = plan.matcher.transform(plan.store.images[:1]).shape[1]
    if n * d * 8 > FEATURE_BUDGET:
        return None
    X = np.empty((n, d))
    with progress.phase("computing features", n, "images"):
        for start, F in _feature_chunks(plan):
            X[start:start + len(F)] = F
            progress.advance(len(F))
    return X


def _block(plan, rows):
    if plan.X is not None:
        return plan.X[rows]
    return plan.matcher.transform(plan.store.images[rows])


def _setup_blocks(plan, clients, progress):
    """Features, cohort distances, and when no client is capped the one shared S(X, X)
    and the fold refits several ``clients`` share."""
    o = plan.options
    plan.X = _features(plan, progress)
    counts = np.bincount(plan.codes)[np.searchsorted(plan.subjects, plan.todo)]
    capped = bool(o.max_impostors) and len(plan.codes) - counts.min() > o.max_impostors
    if capped and o.impostors == "cohort":
        chunks = ((0, plan.X),) if plan.X is not None else _feature_chunks(plan)
        plan.distance = cohort_distances(subject_means(plan.codes, chunks))
    if not capped:  # every client trains on every row: one S(X, X) serves them all
        X = plan.X if plan.X is not None else _block(plan, np.arange(len(plan.codes)))
        with progress.phase("similarities of all images", 1, "matrices"):
            plan.X, plan.gram = X, plan.similarity(X, X)
            progress.advance()
        if o.refit_matcher and o.cv_folds > 1 and learns_from_images(plan.matcher):
            _share_folds(plan, clients, progress)


def _share_folds(plan, clients, progress):
    """The matcher refitted without each fold's held-out people (`FoldSpaces`), once for
    every fold that several of ``clients`` hold out (all train on every row)."""
    o = plan.options
    plan.fold_spaces = FoldSpaces(plan.store)
    plan.order = subject_order(plan.subjects, o.seed)
    shared = shared_folds(plan.store.labels, clients, o.cv_folds, o.seed, plan.order)
    with progress.phase("matcher refitted per shared fold", len(shared), "folds"):
        for key in shared:
            plan.fold_spaces.share([key])
            progress.advance()


def _jobs(plan, clients):
    """One bounded `ClientJob` per client, built lazily (blocks read on demand)."""
    o = plan.options
    index = {s: i for i, s in enumerate(plan.subjects)}
    for client in clients:
        rows, capped = training_rows(plan.codes, index[client], client_id=client,
                                     max_impostors=o.max_impostors,
                                     impostors=o.impostors, seed=o.seed,
                                     subject_distance=plan.distance)
        labels = plan.store.labels[rows]
        y = np.where(labels == client, 1, -1)
        if not np.any(y < 0):
            raise InputError(f"client '{client}' has no impostor images: enrol at least two "
                             "clients or add background subjects", path=plan.store.path)
        folds = None
        if plan.fold_spaces is not None:  # its spaces: SharedBlocks.fold_spaces
            folds = threshold_folds(y, labels, o.cv_folds, o.seed, plan.order)
        # every row (uncapped): X and S(X, X) are the run's SharedBlocks
        X = None if plan.gram is not None else _block(plan, rows)
        yield ClientJob(client=client, X=X, y=y, groups=labels, similarity=plan.similarity,
                        bounds=plan.bounds, options=o, capped=capped, folds=folds, rows=rows)


def _rendered(matcher, prototypes):
    """Prototypes drawn as uint8 images (m, H, W) for ``show``; None for a matcher whose
    space cannot be drawn (deep descriptors)."""
    try:
        return np.clip(np.round(matcher.render(prototypes)), 0, 255).astype(np.uint8)
    except NotRenderableError:
        return None


def _model(plan, result):
    """A `ClientModel` from a result (prototype images rendered here, if drawable)."""
    from ssgallery.formats.gallery import ClientModel

    images = _rendered(plan.matcher, result.prototypes)
    return ClientModel(client_id=result.client, prototypes=result.prototypes, beta=result.beta,
                       intercept=result.intercept, threshold=result.threshold,
                       similarity=plan.similarity.params(), provenance=result.provenance,
                       prototype_images=images, normalization=result.normalization)


def _kept_from_gallery(plan, gallery_path, key=None, privacy_key=None):
    """Clients of the existing gallery to copy (same options, same matcher basis) and
    the gallery's threshold calibration (`ssgallery.app.thresholds.previous_calibration`)
    and 1:N operating point (`ssgallery.app.open_set.read_record`)."""
    from ssgallery.app.open_set import read_record
    from ssgallery.app.parts import ClientResult
    from ssgallery.app.thresholds import previous_calibration
    from ssgallery.formats.gallery import read_gallery
    from ssgallery.formats.hdf5 import state_digest

    if not os.path.exists(gallery_path):
        return {}, None
    from ssgallery.formats.protect import protection_record

    old = read_gallery(gallery_path, arrays=True, key=key, privacy_key=privacy_key)
    if protection_record(old.header, gallery_path) is not None:
        raise InputError("the gallery's templates are protected; an update would mix two "
                         f"rotations: compress every client again (without "
                         f"{option('update')}), which also renews the rotation",
                         path=gallery_path)
    enrolled = set(plan.store.clients)
    ours = [c for c in old.clients if c in enrolled]
    if old.header.get("matcher_digest") != state_digest(plan.store.matcher_state) \
            or old.matcher_name != plan.store.matcher_name:
        shown = ", ".join(sorted(ours)[:10]) + (f", ... ({len(ours)} in all)"
                                                if len(ours) > 10 else "")
        raise InputError("the matcher basis changed since the gallery was written; stale "
                         f"clients: {shown or 'none'}: compress them all again",
                         path=gallery_path)
    digest = options_digest(plan.options)
    kept = {}
    for c in ours:
        model = old.clients[c]
        if model.provenance.get("options_digest") == digest or c not in plan.todo:
            from ssgallery.app.client_training import summary_row

            prov = {k: v for k, v in model.provenance.items()
                    if k not in ("bytes_model", "bytes_images")}
            kept[c] = ClientResult(client=c, prototypes=model.prototypes, beta=model.beta,
                                   intercept=model.intercept, threshold=model.threshold,
                                   provenance=prov, normalization=model.normalization,
                                   row=summary_row(c, prov, model.threshold, model.beta,
                                                   model.intercept, model.normalization))
    return kept, (previous_calibration(old.header, gallery_path),
                  read_record(old.header, gallery_path))


def _write(plan, gallery_path, store_path, results, recorded, force=False,
           keys=(None, None)):
    """Assemble the models (sorted by client id), protect their templates when asked
    (`ssgallery.formats.protect`), write the gallery atomically (signed and encrypted
    with ``keys`` = (signing key, privacy key)); returns the ids of the clients that can
    never accept a probe. ``recorded``: the threshold calibration and the 1:N operating
    point."""
    import json

    from ssgallery.formats.gallery import never_accepting, write_gallery
    from ssgallery.formats.hdf5 import state_digest

    store, (key, privacy_key) = plan.store, keys
    calibration, point = recorded
    models = [_model(plan, results[c]) for c in sorted(results)]
    protection = {}
    if plan.options.protect_templates:
        from ssgallery.formats.protect import ATTR, new_protection, protect_models

        record, rotated = new_protection(plan.matcher, privacy_key,
                                         np.concatenate([m.prototypes for m in models]))
        models = protect_models(models, rotated)
        protection = {ATTR: json.dumps(record, sort_keys=True)}
    write_gallery(gallery_path, matcher_name=store.matcher_name,
                  matcher_config=store.matcher_config, matcher_state=store.matcher_state,
                  image_shape=store.image_shape, clients=models, key=key,
                  privacy_key=privacy_key,
                  attrs={**protection, "target_far": plan.options.target_far,
                         "store": os.path.abspath(store_path),
                         "store_fingerprint": store.fingerprint,
                         "matcher_digest": state_digest(store.matcher_state),
                         "basis_stale": bool(store.basis_stale),
                         "threshold_mode": calibration["mode"],
                         "calibration": json.dumps(calibration, sort_keys=True),
                         "open_set": json.dumps(point, sort_keys=True)}, force=force)
    return never_accepting(models, plan.matcher)


@single_threaded_blas()
def compress(store_path="enrollment.h5", gallery_path="gallery.h5", options=None, run=None):
    """Compress the enrolled clients of a store into a gallery.

    Parameters
    ----------
    store_path, gallery_path : str or Path
    options : CompressOptions, optional
        What is trained (`ssgallery.app.options.CompressOptions`, checked when built;
        default: every default). Recorded in each client's provenance; its digest is
        what ``resume`` and ``update`` compare. With ``update``, the existing gallery's
        threshold mode, target FAR and global threshold are kept (a different mode is
        refused).
    run : CompressRun, optional
        How and where (`ssgallery.app.options.CompressRun`): which clients, local jobs or
        a Dask scheduler, resume, update, force, the host's key file and external
        matcher program (its contract must be the store's), progress.

    Returns
    -------
    CompressSummary
    """
    from ssgallery.formats.encryption import load_privacy_key
    from ssgallery.formats.integrity import load_key

    options = options if options is not None else CompressOptions()
    run = run if run is not None else CompressRun()
    key, privacy_key = load_key(run.key_file), load_privacy_key(run.privacy_key_file)
    plan = _prepare(store_path, gallery_path, options, run, privacy_key)
    results, (previous, previous_point) = \
        _kept_from_gallery(plan, gallery_path, key, privacy_key) if run.update \
        else ({}, (None, None))
    kept = sorted(results)
    parts = PartsFolder(gallery_path, privacy_key)
    keys = {c: run_key(c, plan.store.fingerprint, plan.options) for c in plan.todo}
    if not run.resume:
        parts.remove()
    resumed = [c for c in plan.todo if c not in results
               and _resume_one(parts, c, keys[c], results)]
    todo = [c for c in plan.todo if c not in results]
    _train(plan, run, todo, (parts, keys), results)
    mode = options.threshold_mode
    thresholds, calibration = calibrate(results, mode, options.target_far, kept, previous,
                                        gallery_path)
    apply(results, thresholds, mode)
    point = operating_point(results, plan.store.labels, options.target_fpir, kept,
                            previous_point, gallery_path)
    dead = _write(plan, gallery_path, store_path, results, (calibration, point), run.force,
                  (key, privacy_key))
    parts.remove()
    return _summary(plan, run, (store_path, gallery_path), results,
                    {"trained": todo, "kept": kept, "resumed": resumed,
                     "calibration": calibration, "open_set": point,
                     "never_accepting": dead})


def _train(plan, run, todo, committed, results):
    """Train the clients ``todo`` on the run's backend; commit each result to the parts
    folder (``committed``: the folder and every client's run key) and to ``results``."""
    parts, keys = committed
    progress = as_progress(run.progress)
    if todo:
        _setup_blocks(plan, todo, progress)
    shared = None if plan.gram is None else SharedBlocks(plan.X, plan.gram, plan.fold_spaces)
    fingerprint, digest = plan.store.fingerprint, options_digest(plan.options)
    try:
        progress.start("training clients", len(todo), "clients")
        for result in run_jobs(train_job, _jobs(plan, todo), n_jobs=run.jobs,
                               scheduler=run.scheduler, shared=shared,
                               n_tasks=len(todo)):
            result.provenance["options_digest"] = digest
            result.provenance["store_fingerprint"] = fingerprint
            parts.write(result, keys[result.client])
            results[result.client] = result
            progress.advance()
        progress.end()
    except KeyboardInterrupt:
        n = parts.count()
        if n:
            raise CompressInterrupted(parts.path, n) from None
        raise
    finally:
        if hasattr(plan.matcher, "close"):  # a served external program
            plan.matcher.close()


def _summary(plan, run, paths, results, done):
    """The `CompressSummary` of a finished run (``done``: trained, kept, resumed,
    calibration, never_accepting)."""
    store_path, gallery_path = paths
    order = list(plan.todo) + [c for c in sorted(results) if c not in plan.todo]
    return CompressSummary(gallery=os.fspath(gallery_path), store=os.fspath(store_path),
                           matcher=plan.store.matcher_name,
                           dimension=int(next(iter(results.values())).prototypes.shape[1]),
                           target_far=plan.options.target_far,
                           clients=[results[c].row | {"seconds": results[c].seconds,
                                                     "cpu_seconds": results[c].cpu_seconds}
                                    for c in order],
                           basis_stale=bool(plan.store.basis_stale), jobs=run.jobs,
                           scheduler=run.scheduler,
                           program_runs=_program_runs(plan.matcher, run.jobs, run.scheduler),
                           threshold_mode=plan.options.threshold_mode,
                           heldout={c: r.heldout for c, r in results.items() if r.heldout},
                           worse_than_svm=[c for c in order
                                           if (results[c].row.get("teacher_gap") or 0)
                                           > GUARD_GAP],
                           **done)


def _program_runs(matcher, jobs, scheduler):
    """Program starts and scoring calls of an external matcher run in this process."""
    if not hasattr(matcher, "n_starts_") or jobs != 1 or scheduler is not None:
        return None
    return {"starts": int(matcher.n_starts_), "calls": int(matcher.n_calls_)}


def _resume_one(parts, client, key, results):
    result = parts.read(client, key)
    if result is not None:
        results[client] = result
    return result is not None
