"""The plan of one compress run (`ssgallery.app.compress`): the store opened lazily and
its clients checked (`prepare`), the features computed once in chunks, the blocks every
client shares when none is capped (S(X, X), the matcher refitted per shared threshold-CV
fold: `setup_blocks`) and each client's bounded job (`client_jobs`,
`ssgallery.app.training_sets`)."""

from dataclasses import dataclass, replace

import numpy as np

from ssgallery.app.client_training import ClientJob, threshold_folds
from ssgallery.app.compress_write import client_model
from ssgallery.app.fold_spaces import FoldSpaces, learns_from_images, shared_folds, subject_order
from ssgallery.app.options import CompressOptions, resolve_between, resolve_training
from ssgallery.app.training_sets import (
    client_rng,
    cohort_distances,
    subject_means,
    training_rows,
)
from ssgallery.app.verify import score_features
from ssgallery.errors import InputError, SsgalleryError, clipped, option
from ssgallery.learn.supersparse import resolve_init
from ssgallery.tables import did_you_mean

UNSEEN_SAMPLE = 600  # store images of unseen people scored per client (`unseen_accepts`)
FEATURE_BUDGET = 256 * 2**20  # bytes: features of every image kept in memory below this
CHUNK = 1024  # images per read/transform chunk


@dataclass
class Plan:
    """What every step of one compress run shares."""

    store: object
    matcher: object
    similarity: object
    bounds: object
    todo: list
    options: CompressOptions  # m, init, between, max_iter, swap_rounds resolved for the matcher
    codes: np.ndarray = None  # subject code of every store row
    X: np.ndarray = None  # features of every row (None: read per block)
    gram: np.ndarray = None  # S(X, X) when no client is capped
    distance: object = None  # cohort distances
    subjects: np.ndarray = None  # subject of each code
    fold_spaces: object = None  # FoldSpaces: the matcher refitted per threshold-CV fold
    order: np.ndarray = None  # the subjects' shared order for the threshold folds


def prepare(store_path, gallery_path, options, run, privacy_key=None):
    """Open the store (images stay on disk; ``privacy_key``: an encrypted one), check
    the clients, resolve the matcher, check that protected templates can be written."""
    from ssgallery.formats.atomic import check_writable
    from ssgallery.formats.gallery import FORMAT
    from ssgallery.formats.hdf5 import comma_hint
    from ssgallery.formats.store import load_store

    store = load_store(store_path, images=False, privacy_key=privacy_key)
    # fail now, not after training anyone; never a plain gallery over an encrypted one
    check_writable(gallery_path, FORMAT, run.force, encrypted=privacy_key is not None)
    todo = list(store.clients) if run.clients is None else run.clients
    unknown = [c for c in todo if c not in store.clients]
    if unknown:
        shown = ", ".join(store.clients[:8]) + (", ..." if len(store.clients) > 8 else "")
        hint = did_you_mean(unknown[:5], store.clients)
        raise SsgalleryError(f"not an enrolled client: "
                             f"{', '.join(clipped(c) for c in unknown[:5])}"
                             + (f"; {hint}" if hint else "")
                             + f" (enrolled: {shown})" + comma_hint(store.clients),
                             path=store_path)
    if not todo:
        raise InputError("the store has no enrolled client to compress", path=store_path)
    _check_m(options.m, len(store.labels), store_path)
    from ssgallery.images.ingest import default_warn

    host = None  # the host's settings: read for a matcher that runs a program only
    if run.matcher_cmd is not None:  # (build_matcher), as verify and roc read them
        from ssgallery.matchers.host import host_matcher

        host = host_matcher(run.matcher_cmd, run.warn or default_warn)
    matcher = store.matcher(host=host)
    if options.protect_templates:  # before any training
        from ssgallery.formats.protect import new_protection

        new_protection(matcher, privacy_key, np.zeros((0, matcher.dimension() or 1)))
    similarity = matcher.similarity()

    black_box = plan_black_box(matcher, similarity, store_path)
    between = resolve_between(options.between, black_box, store.matcher_name,
                              run.warn or default_warn)
    options = resolve_training(replace(options, init=resolve_init(options.init, similarity),
                                       between=between), black_box, len(store.labels))
    subjects, codes = np.unique(store.labels, return_inverse=True)
    return Plan(store=store, matcher=matcher, similarity=similarity, bounds=matcher.bounds(),
                 todo=todo, options=options, codes=codes, subjects=subjects)


def plan_black_box(matcher, similarity, store_path):
    """The matcher's `ssgallery.matchers.base.Matcher.black_box` (what ``roc`` reads
    from its class), checked against its similarity: a plugin whose declaration and
    gradient disagree would be trained one way by ``compress`` and evaluated another
    way by ``roc``."""
    analytic = bool(getattr(similarity, "has_gradient", False))
    if matcher.black_box == analytic:
        said = "no analytic gradient" if not analytic else "an analytic gradient"
        raise SsgalleryError(f"the {matcher.name} matcher declares black_box = "
                             f"{matcher.black_box} but its similarity has {said}: fix the "
                             "matcher plugin", path=store_path)
    return bool(matcher.black_box)


def _check_m(m, n_images, store_path):
    """An explicit m must leave the model sparser than the store (and O(m^2) memory)."""
    if m not in (None, "auto") and m > n_images:
        raise InputError(f"{option('m')} = {m} is more prototypes than the store has "
                         f"images ({n_images}): a super-sparse model keeps fewer",
                         path=store_path)


def _cached_features(plan):
    """The store's cached features (checked to be of the matcher's dimension:
    `ssgallery.formats.store.EnrollmentStore.matcher_features`), or None."""
    if getattr(plan.store, "features", None) is None:
        return None
    return plan.store.matcher_features(plan.matcher)


def _feature_chunks(plan):
    """Yield ``(start, features of rows start..start+k)`` over the store, chunk by chunk."""
    cached = _cached_features(plan)
    for start, images in plan.store.images.chunks(CHUNK):
        yield start, (cached[start:start + len(images)] if cached is not None
                      else plan.matcher.transform(images))


def _features(plan, progress):
    """Features of every row when they fit `FEATURE_BUDGET` (computed once, in
    chunks, one progress step per image), else None (each job reads and transforms its
    own rows)."""
    cached = _cached_features(plan)
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


def setup_blocks(plan, clients, progress):
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


def unseen_accepts(plan, results, clients):
    """What the thresholds of ``clients`` (trained by this run, thresholded on their
    training scores: nothing held out) do to the store's people their models never
    trained on: each final model scored on the store's images of the subjects outside
    its training rows (at most `UNSEEN_SAMPLE` per client, a seeded sample) and counted
    at its threshold. The matcher's basis (eigenface) has seen those images, so new
    people fare no better. Each score is the gallery record's, as ``verify`` computes
    it (`ssgallery.app.verify.score_features`). ``{"accepted", "images", "people",
    "clients"}`` (people: the distinct subjects scored; clients: how many had any), or
    None when none had any."""
    o = plan.options
    index = {s: i for i, s in enumerate(plan.subjects)}
    accepted = images = measured = 0
    people = set()
    for client in clients:
        rows, _ = training_rows(plan.codes, index[client], client_id=client,
                                max_impostors=o.max_impostors, impostors=o.impostors,
                                seed=o.seed, subject_distance=plan.distance)
        unseen = np.flatnonzero(~np.isin(plan.codes, plan.codes[rows]))
        if unseen.size == 0:
            continue
        if unseen.size > UNSEEN_SAMPLE:
            unseen = np.sort(client_rng(o.seed, client).choice(unseen, UNSEEN_SAMPLE,
                                                               replace=False))
        model = client_model(plan, results[client], drawn=False)
        g = score_features(model, plan.matcher, _block(plan, unseen))  # verify's score
        accepted, images = accepted + int(np.sum(g >= model.threshold)), images + unseen.size
        people.update(np.unique(plan.codes[unseen]).tolist())
        measured += 1
    if not measured:
        return None
    return {"accepted": accepted, "images": images, "people": len(people),
            "clients": measured}


def client_jobs(plan, clients):
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
