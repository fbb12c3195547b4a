"""``compress``: enrollment store -> gallery, one client at a time.

The options come checked, as two objects (`ssgallery.app.options`): `CompressOptions`
(what changes the models: recorded, digested, shipped to the jobs) and `CompressRun`
(how and where the run happens). The steps: open the store lazily, plan the clients,
compute the features once in chunks and build each client's bounded job
(`ssgallery.app.compress_plan`: `prepare`, `setup_blocks`, `client_jobs`), train the
jobs on a backend (`ssgallery.app.parallel.run_jobs`: this process, ``jobs`` local
processes or a Dask cluster; `ssgallery.app.client_training.train_job`), commit each
finished client to ``<gallery>.parts/`` (`ssgallery.app.parts`), then assemble and
write the gallery once, atomically (`ssgallery.app.compress_write.write_compressed`).
Only this process writes files.

Resumable: after Ctrl-C, SIGKILL or a lost worker, ``CompressRun(resume=True)`` reuses the committed
parts whose store fingerprint and options match and trains only the missing clients.
Incremental: ``update=True`` copies the clients of the existing gallery that were trained
with the same options on the same matcher basis and trains only the others (e.g. the
clients added by ``enroll --add``; `ssgallery.app.update`); when the basis has changed it
names the stale clients, and it names the clients it trains again for other options.
"""

import os
from dataclasses import dataclass

from ssgallery.app.client_result import encode_result
from ssgallery.app.client_training import (  # noqa: F401  (threshold_*, ClientJob: public here)
    GUARD_GAP,
    ClientJob,
    SharedBlocks,
    threshold_at_far,
    threshold_folds,
    train_job,
)
from ssgallery.app.compress_plan import (  # noqa: F401  (FEATURE_BUDGET, CHUNK: public here)
    CHUNK,
    FEATURE_BUDGET,
    client_jobs,
    prepare,
    setup_blocks,
    unseen_accepts,
)
from ssgallery.app.compress_write import write_compressed
from ssgallery.app.impostor_people import new_salt
from ssgallery.app.open_set import fill_spreads, operating_point
from ssgallery.app.options import CompressOptions, CompressRun
from ssgallery.app.parallel import ClusterLost, run_jobs
from ssgallery.app.parts import PartsFolder, options_digest, run_key
from ssgallery.app.thresholds import apply, calibrate
from ssgallery.app.update import kept_from_gallery, warn_retrained
from ssgallery.errors import SsgalleryError, signals_received
from ssgallery.formats.integrity import reads_key_files
from ssgallery.learn.supersparse import resolve_init  # noqa: F401  (public here)
from ssgallery.learn.threads import single_threaded_blas
from ssgallery.progress import as_progress


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
    fta_folds: str = None  # the store's matcher's `Matcher.fta_folds_`
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
    open_set_dropped: bool = False  # the updated gallery's point could not be kept
    worse_than_svm: list = None  # clients whose held-out teacher_gap exceeds GUARD_GAP
    not_held_out: list = None  # clients thresholded on training scores despite --cv-folds
    unseen: dict = None  # their thresholds on the store's people they never trained on
    off_scale: dict = None  # client -> [accepted, impostors]: held-out scores off its scale
    spread_borrowed: list = None  # clients without an impostor spread (`fill_spreads`)
    capped: list = None  # clients trained on at most --max-impostors of their impostors
    impostors: str = None  # --impostors: which impostors when the cap bites
    max_impostors: int = None

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "heldout"}


@single_threaded_blas()
@reads_key_files()
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
    from ssgallery.formats.atomic import output_lock
    from ssgallery.formats.encryption import load_keys
    from ssgallery.images.ingest import default_warn

    options = options if options is not None else CompressOptions()
    run = run if run is not None else CompressRun()
    key, privacy_key = load_keys(run.key_file, run.privacy_key_file)
    plan = prepare(store_path, gallery_path, options, run, privacy_key)
    # the gallery's lock from before the parts folder and --update's read of the old
    # gallery to the gallery's rename: two runs on one gallery take turns (each used to
    # remove the other's <gallery>.parts/ as it started or finished)
    with output_lock(gallery_path, wait=run.warn or default_warn):
        return _locked_run(plan, options, (store_path, gallery_path), run,
                           (key, privacy_key))


def _locked_run(plan, options, paths, run, secrets):
    """`compress` once the gallery's lock is held: resume or update, train, calibrate,
    write (``paths``: the store's and the gallery's, ``secrets``: the signing and
    privacy keys)."""
    store_path, gallery_path = paths
    key, privacy_key = secrets
    results, (previous, previous_point) = \
        kept_from_gallery(plan, gallery_path, key, privacy_key, run.warn) if run.update \
        else ({}, (None, None))
    kept = sorted(results)
    parts = PartsFolder(gallery_path, privacy_key, key)
    parts.check()  # a link or a folder that is not ours: refused before any training
    keys = {c: run_key(c, plan.store.fingerprint, plan.options) for c in plan.todo}
    note = parts.nothing_to_resume() if run.resume else parts.discarded(keys)
    if note is not None:
        from ssgallery.images.ingest import default_warn

        (run.warn or default_warn)(note)
    if not run.resume:
        parts.remove()
    parts.check_resumable()
    stale = {}
    resumed = [c for c in plan.todo if c not in results
               and _resume_one(parts, c, keys[c], (results, stale), plan, run)]
    if stale:
        warn_retrained(stale, plan.options, parts.path, run.warn, "committed parts", "resume",
                       plan.store.fingerprint)
    todo = [c for c in plan.todo if c not in results]
    _train(plan, run, todo, (parts, keys), results)
    mode = options.threshold_mode
    thresholds, calibration = calibrate(results, mode, options.target_far, kept, previous,
                                        gallery_path, plan.store.labels, plan.store.sha256,
                                        new_salt(plan.store.fingerprint))
    apply(results, thresholds, mode)
    _check_calibrated(plan, run, (parts.path, resumed, gallery_path), results, todo)
    borrowed = fill_spreads(results, kept)
    point = operating_point(results, plan.store.labels, options.target_fpir, kept,
                            previous_point, gallery_path)
    unseen = options.cv_folds and unseen_accepts(plan, results, [
        c for c in todo if _not_held_out(results[c])])  # what their thresholds accept
    dead = write_compressed(plan, gallery_path, store_path, results, (calibration, point),
                            run.force, (key, privacy_key))
    parts.remove()
    return _summary(plan, run, (store_path, gallery_path), results,
                    {"trained": todo, "kept": kept, "resumed": resumed,
                     "calibration": calibration, "open_set": point,
                     "open_set_dropped": previous_point is not None and point is None,
                     "never_accepting": dead, "spread_borrowed": borrowed,
                     "unseen": unseen or None})


def _train(plan, run, todo, committed, results):
    """Train the clients ``todo`` on the run's backend; commit each result to the parts
    folder (``committed``: the folder and every client's run key) and to ``results``."""
    parts, keys = committed
    progress = as_progress(run.progress)
    if todo:
        setup_blocks(plan, todo, progress)
    shared = None if plan.gram is None else SharedBlocks(plan.X, plan.gram, plan.fold_spaces)
    fingerprint, digest = plan.store.fingerprint, options_digest(plan.options)
    try:
        progress.start("training clients", len(todo), "clients")
        waiting = set(todo)
        for result in run_jobs(train_job, client_jobs(plan, todo), n_jobs=run.jobs,
                               scheduler=run.scheduler, shared=shared,
                               n_tasks=len(todo), to_bytes=encode_result,
                               private=parts.privacy_key is not None,
                               limits=_dask_limits(plan, run)):
            if run.scheduler is not None:  # a worker's answer: data, checked like a part
                result = _from_worker(plan, result, waiting, run.scheduler)
            waiting.discard(result.client)
            result.provenance["options_digest"] = digest
            result.provenance["store_fingerprint"] = fingerprint
            parts.write(result, keys[result.client])
            results[result.client] = result
            progress.advance()
        progress.end()
    except KeyboardInterrupt as exc:
        _interrupted(parts, exc)
    except ClusterLost as exc:  # the finished clients are kept for --resume: say so
        exc.parts = parts.count()
        if exc.parts:
            kept = f"{exc.parts} finished client(s) kept in {parts.path}"
            exc.args = (f"{exc.args[0]}; {kept}",)
        raise
    except Exception as exc:
        if not signals_received:  # not our interrupt turned into another exception by
            raise  # compiled code (errors.signals_received; cli/__init__.py's catch-all)
        _interrupted(parts, exc)
    finally:
        if hasattr(plan.matcher, "close"):  # a served external program
            plan.matcher.close()


def _interrupted(parts, exc):
    """An interrupt of the training: `CompressInterrupted` naming the finished clients
    committed to ``parts`` (for --resume), or ``exc`` again when there is none."""
    n = parts.count()
    if n:
        raise CompressInterrupted(parts.path, n) from None
    raise exc


def _summary(plan, run, paths, results, done):
    """The `CompressSummary` of a finished run (``done``: trained, kept, resumed,
    calibration, never_accepting, spread_borrowed)."""
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
                           fta_folds=getattr(plan.matcher, "fta_folds_", None),
                           scheduler=run.scheduler,
                           program_runs=_program_runs(plan.matcher, run.jobs, run.scheduler),
                           threshold_mode=plan.options.threshold_mode,
                           heldout={c: r.heldout for c, r in results.items() if r.heldout},
                           worse_than_svm=[c for c in order
                                           if (results[c].row.get("teacher_gap") or 0)
                                           > GUARD_GAP],
                           not_held_out=[c for c in order if plan.options.cv_folds
                                         and _not_held_out(results[c])],
                           off_scale={c: results[c].provenance["cv_off_scale"] for c in order
                                      if results[c].provenance.get("cv_off_scale")},
                           capped=[c for c in order
                                   if results[c].provenance.get("impostors_capped")],
                           impostors=plan.options.impostors,
                           max_impostors=plan.options.max_impostors, **done)


def _not_held_out(result):
    """True when the client's threshold CV held nothing out (fewer than 2 of its images
    or impostor subjects, `threshold_folds`): its threshold and Z-norm come from
    training scores, and so do its share of the expected FAR and FPIR. (A client whose
    held-out scores were off its model's scale, ``cv_off_scale``, is thresholded on
    training scores too, and reported apart: `CompressSummary.off_scale`.)"""
    p = result.provenance or {}
    return p.get("threshold_folds") == 0 and not p.get("cv_off_scale")


def _program_runs(matcher, jobs, scheduler):
    """Program starts and scoring calls of an external matcher run in this process."""
    if not hasattr(matcher, "n_starts_") or jobs != 1 or scheduler is not None:
        return None
    return {"starts": int(matcher.n_starts_), "calls": int(matcher.n_calls_)}


def _resume_one(parts, client, key, found, plan, run):
    """Take ``client``'s committed part if it is this run's and passes `check_result`
    into ``found[0]``; a part of another run goes to ``found[1]`` (its client is trained
    again, `warn_retrained` says so); a bad part is reported (``run.warn``) and its
    client trained again."""
    from ssgallery.images.ingest import default_warn

    results, stale = found
    try:
        part = parts.read_any(client)
        if part is not None and part[1] == key:
            _check(plan, part[0], client, parts.path)
    except SsgalleryError as exc:
        (run.warn or default_warn)(f"{exc}; a bad part: client '{client}' is trained again")
        return False
    if part is not None and part[1] != key:
        stale[client] = part[0]
        return False
    if part is not None:
        results[client] = part[0]
    return part is not None


def _dask_limits(plan, run):
    """A Dask job's time limit (``run.job_timeout``) and its result's largest size
    (`ssgallery.app.result_checks.max_result_bytes`); None without a scheduler."""
    from ssgallery.app.parallel import DaskLimits
    from ssgallery.app.result_checks import max_result_bytes

    if run.scheduler is None:
        return None
    return DaskLimits(seconds=run.job_timeout or None,
                      result_bytes=max_result_bytes(_context(plan), plan.options.m),
                      name=lambda job: f"client '{job.client}'")


def _from_worker(plan, data, waiting, scheduler):
    from ssgallery.app.result_checks import worker_result

    return worker_result(data, waiting, _context(plan), f"Dask cluster {scheduler}")


def _check(plan, result, client, where):
    from ssgallery.app.result_checks import check_result

    check_result(result, client, _context(plan), where)


def _check_calibrated(plan, run, committed, results, trained):
    """The final thresholds of the resumed and trained clients (``committed``: the parts
    folder, the resumed clients, the gallery) pass the gallery's checks, or nothing is
    written. Named as the source: the folder, the cluster, or (an update joins the
    calibration the existing gallery records) the gallery."""
    from ssgallery.app.result_checks import check_calibrated

    folder, resumed, gallery_path = committed
    where = dict.fromkeys(resumed, folder)
    if run.scheduler is not None or run.update:
        source = f"Dask cluster {run.scheduler}" if run.scheduler else gallery_path
        where.update(dict.fromkeys(trained, source))
    check_calibrated(results, [*resumed, *trained], _context(plan), where)


def _context(plan):
    """What `ssgallery.app.result_checks.check_result` checks a result against."""
    return (plan.matcher, plan.similarity, len(plan.store.labels), plan.options.target_far)
