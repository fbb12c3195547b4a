"""The options of ``compress`` and ``roc``, as objects validated once, where they come in.

`CompressOptions` is what changes the trained models: it is recorded in each client's
provenance, hashed into the digest that ``--resume`` and ``--update`` compare
(`ssgallery.app.parts.options_digest`, `ssgallery.app.parts.run_key`), and shipped to
every worker with the client's job. `CompressRun` is how and where a run happens
(workers, resuming, the host's key and matcher program, progress): it never changes a
model, and it is recorded nowhere. ``roc`` takes `RocInputs` (what it evaluates), the
protocol's `ssgallery.biometrics.protocol.ProtocolOptions` and `ReportOptions` (defined
in `ssgallery.app.roc_options`, importable from here).

Each field declares its default, its check and how it enters the digest (`option_field`,
`ssgallery.app.option_digest`); the objects are frozen, and every value is checked and
normalised (``float``, ``int``) when the object is built, with the messages the command line shows as flags
(`ssgallery.errors.option`); a yes/no field takes a bool only (`flag_bool`:
``guard="no"`` or ``force=1`` is refused, never read as true). docs/contributing.md
("Adding a compress option") is the recipe for a new field.
"""

from dataclasses import dataclass, fields, replace

from ssgallery.app.option_digest import (
    ALWAYS,
    IF_CHANGED,
    NEVER,
    changed_fields,
    option_field,
)
from ssgallery.app.roc_options import ReportOptions, RocInputs  # noqa: F401  (public here too)
from ssgallery.app.training_sets import DEFAULT_MAX_IMPOSTORS, IMPOSTOR_MODES
from ssgallery.biometrics.calibration import DEFAULT_THRESHOLD_MODE, THRESHOLD_MODES
from ssgallery.checks import (  # noqa: F401  (the checks are public here too)
    CheckedOptions,
    checked_field,
    flag_bool,
    is_int,
    non_negative,
    non_negative_int,
    one_of,
    open_rate,
    positive_int,
    probability,
    real,
    seed_int,
    shown,
)
from ssgallery.errors import InputError
from ssgallery.errors import option as _flag  # how a message names a parameter
from ssgallery.learn.defaults import BLACK_BOX_M, DEFAULT_BETWEEN, DEFAULT_LAM, DEFAULT_M

N_FOLDS = 5  # folds of the threshold CV
MAX_ITER = 200  # the learner's default: L-BFGS-B iterations (varpro) / sweeps (paper)
# A black box's training ("auto", `resolve_training`): 3 swaps of real training images and
# no Eq. 7 (eq:similarity-grad) move, which beat moving on both black boxes measured
# (docs/benchmarks/ebgm_swaps.md, paper_att_ebgm.md, paper_lfw_dlibbox.md)
BLACK_BOX_MAX_ITER = 0
BLACK_BOX_SWAP_ROUNDS = 3
INITS = ("auto", "class", "genuine", "kmeans", "random")
SOLVERS = ("varpro", "paper")
# A Dask job's time limit (CompressRun.job_timeout): one hour, ~400x the slowest mean
# per-client training measured (synth400, 8 s; docs/benchmarks/calibration.md), ~6,000x
# a capped client (0.25-0.55 CPU s; docs/benchmarks/scale.md), which the number of
# clients does not change: a slow machine is not a hung job.
JOB_TIMEOUT = 3600.0

# ------------------------------------------------------------------------------ checks
# (the shared ones: ssgallery.checks)

def _int_or_auto(lowest):
    """The check of a field that is "auto" or an integer >= ``lowest`` (1 or 0)."""
    kind = "a positive" if lowest == 1 else "a non-negative"

    def check(name, value):
        if value == "auto":
            return value
        if not is_int(value) or value < lowest:
            raise InputError(f"{_flag(name)} must be {kind} integer or 'auto', "
                             f"got {value!r}")
        return int(value)
    return check


def m_or_auto(name, value):
    """m: prototypes per client, "auto" (Eq. 8) or None (the matcher's default)."""
    return None if value is None else _m_count(name, value)


_m_count = _int_or_auto(1)
count_or_auto = _int_or_auto(0)  # max_iter, swap_rounds


def _solver(name, value):
    if value not in SOLVERS:
        raise InputError(f"{_flag(name)} must be 'varpro' or 'paper', got {value!r}")
    return value


def _max_impostors(name, value):  # None or 0: no cap
    if value is not None and (not is_int(value) or value < 0):
        raise InputError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value or 0)


def _impostors(name, value):
    if value not in IMPOSTOR_MODES:
        raise InputError(f"{name} must be one of {', '.join(IMPOSTOR_MODES)}, got {value!r}")
    return value


_Options = CheckedOptions  # the objects' base (ssgallery.checks)


@dataclass(frozen=True, kw_only=True)
class CompressOptions(_Options):
    """What ``compress`` trains: the options that change the client models.

    Attributes
    ----------
    threshold_mode : {"znorm-global", "client", "shrink"}
        How the thresholds are set from every client's held-out impostor scores once
        all clients are trained (`ssgallery.biometrics.calibration`). Not in the
        digest: an ``--update`` with another mode is refused on its own.
    m : int, "auto" or None
        Prototypes per client; "auto" = Eq. 8 (eq:xval-m) with penalty ``rho`` per
        prototype. None (default): `DEFAULT_M` for an analytic matcher, `BLACK_BOX_M` for a
        black box, at most the images trained on (`resolve_training`; ``compress``
        digests the resolved value).
    target_far : float
        False acceptance rate the thresholds aim at on people never seen here.
    lam : float
        Ridge penalty on beta (Eq. 2 (eq:objective)).
    rho : float
    solver : {"varpro", "paper"}
    init : {"auto", "class", "genuine", "kmeans", "random"}
        Starting prototypes; "auto" (default) = `ssgallery.learn.initial.resolve_init`
        (``compress`` digests the resolved value).
    max_iter : int or "auto"
        The learner's iteration cap (varpro: L-BFGS-B iterations; paper: sweeps); 0: no
        move, the prototypes stay on the start's training images (beta by Eq. 4).
        "auto" (default): `MAX_ITER` for an analytic matcher, `BLACK_BOX_MAX_ITER` for a
        black box (`resolve_training`; ``compress`` digests the resolved value).
    max_impostors : int
        K: each client trains on its own images and at most K impostor images
        (`ssgallery.app.training_sets`); None or 0 = all (kept as 0).
    impostors : {"sample", "cohort"}
        Which impostors when the cap bites: stratified seeded sample or nearest subjects.
    cv_folds : int
        Folds of the threshold CV; 0 or 1 sets thresholds on training scores instead.
    seed : int
        Random seed (the learner's ``random_state``, the impostor sample, the folds).
    refit_matcher : bool
        Refit a matcher that learns from images on each threshold-CV fold
        (`ssgallery.app.fold_spaces`; uncapped runs only).
    protect_templates : bool
        Store the prototypes through a secret isometry of the matcher space keyed by the
        host's privacy key (`ssgallery.formats.protect`; the run's
        ``privacy_key_file``), and no rendered image: the same verdicts, templates
        unlinkable to another deployment's and renewed by compressing with a new key.
        Eigenface and dlib only (a black-box matcher's pixel-space prototypes cannot be
        rotated).
    target_fpir : float
        The 1:N operating point: the fraction of strangers' searches over every client
        that may return someone (`ssgallery.app.open_set`). Set once every client is
        trained and re-derived for the grown gallery on ``update``: never digested.
    refresh_every : int
        ``solver="paper"``: exact similarities every p moves of a prototype, the
        first-order model in between (`ssgallery.learn.solvers.solve_paper_refresh`).
    guard : bool
        Refit a client whose distilled model ranks the threshold CV's held-out images
        much worse than its SVM (`ssgallery.app.client_fit.GUARD_GAP`) from other
        starts (and m + 1 with ``m="auto"``), keeping the fit of least held-out gap.
    between : float
        Also distil the SVM's scores at points between the client and the impostors
        (`ssgallery.learn.targets.between_points`), with this total weight relative to
        the training images' (default `ssgallery.learn.defaults.DEFAULT_BETWEEN`); 0:
        the training images only, as the paper. Analytic matchers only (eigenface,
        dlib): a black box trains with 0. In the digest when not 0 (galleries made
        before this option had 0).
    swap_rounds : int
        Improve each client's start by up to this many swaps of a prototype for one of
        its training images (or of the points between the classes, with ``between``),
        each the swap that lowers the unmoved training objective most, keeping one image
        the SVM accepts, normally the client's own (`ssgallery.learn.initial.swap_start`);
        0: the start rule's prototypes. The
        swaps read the similarities among the training images (a black box's Gram
        matrix, already answered: no program run); memory grows as the square of the
        client's training images. "auto" (default): 0 for an analytic matcher,
        `BLACK_BOX_SWAP_ROUNDS` for a black box (`resolve_training`). No swap for a client
        whose impostors are all one person (`ssgallery.learn.defaults.swap_rounds_for`).
    lam_sum : float
        A penalty on the square of the sum of each client's weights beta, relative to
        the similarities' scale like ``lam`` (`ssgallery.learn.objective.penalty`): it
        pulls the distilled model towards its SVM's balance of genuine and impostor
        weights. 0 (default): Eq. 2 (eq:objective) as the paper. In the digest and the
        provenance when not 0. Library only (no ``compress`` flag): measured on
        docs/benchmarks/ebgm_balance.md.
    """

    threshold_mode: str = option_field(DEFAULT_THRESHOLD_MODE, one_of(*THRESHOLD_MODES), NEVER)
    m: object = option_field(None, m_or_auto, ALWAYS)  # resolved: digested
    target_far: float = option_field(0.01, probability, ALWAYS)
    lam: float = option_field(DEFAULT_LAM, non_negative, ALWAYS)
    rho: float = option_field(0.01, non_negative, ALWAYS)
    solver: str = option_field("varpro", _solver, ALWAYS)
    init: str = option_field("auto", one_of(*INITS), ALWAYS)
    max_iter: object = option_field("auto", count_or_auto, ALWAYS)  # resolved: digested
    max_impostors: int = option_field(DEFAULT_MAX_IMPOSTORS, _max_impostors, ALWAYS)
    impostors: str = option_field("sample", _impostors, ALWAYS)
    cv_folds: int = option_field(N_FOLDS, non_negative_int, ALWAYS)
    seed: int = option_field(0, seed_int, ALWAYS)
    refit_matcher: bool = option_field(True, flag_bool, ALWAYS)
    protect_templates: bool = option_field(False, flag_bool, IF_CHANGED)
    target_fpir: float = option_field(0.01, open_rate, NEVER)
    refresh_every: int = option_field(1, positive_int)
    guard: bool = option_field(False, flag_bool)
    # 0.5 since issue 24 (1:N search of the default SSVM m=2); galleries before it: 0
    between: float = option_field(DEFAULT_BETWEEN, non_negative, IF_CHANGED, baseline=0.0)
    swap_rounds: object = option_field("auto", count_or_auto, IF_CHANGED, baseline=0)
    lam_sum: float = option_field(0.0, non_negative, IF_CHANGED, baseline=0.0)

    def digest_dict(self):
        """What the options digest and the parts' run key hash: the `ALWAYS` fields, and
        the `IF_CHANGED` fields whose value is not their baseline (so that adding a field
        leaves the digest of every existing gallery unchanged). Only options resolved for
        their matcher have one (`resolve_training`): m None and max_iter or swap_rounds
        "auto" train another model on another matcher."""
        unresolved = [name for name, value in (("m", self.m), ("max_iter", self.max_iter),
                                               ("swap_rounds", self.swap_rounds))
                      if value is None or (value == "auto" and name != "m")]
        if unresolved:  # a programming error: resolve for the matcher first
            raise ValueError(f"unresolved options have no digest: {', '.join(unresolved)}")
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.metadata["digest"] == ALWAYS}
        return {**out, **changed_fields(self)}

    def provenance(self):
        """The options' entries of a client's provenance (under their historical names;
        a later field only when not at its baseline)."""
        auto = self.m == "auto"
        out = {"lambda": self.lam, "solver": self.solver, "init": self.init,
               "max_iter": self.max_iter, "target_far": self.target_far,
               "m_selection": "auto" if auto else "fixed", "rho": self.rho if auto else None,
               "impostors": self.impostors, "max_impostors": self.max_impostors}
        return {**out, **changed_fields(self)}


def _clients(name, value):
    """None (every enrolled client), a list, or ``"a,b,c"`` (a comma inside an id
    written ``\\,``: `ssgallery.formats.hdf5.split_ids`); one that names no client
    (``""``, ``","``) is refused, not read as a store without clients."""
    typed = value
    if isinstance(value, str):
        from ssgallery.formats.hdf5 import split_ids

        value = split_ids(value)
    if value is not None and not len(value):
        raise InputError(f"{_flag(name)} names no client: {shown(typed)}")
    return None if value is None else list(value)


@dataclass(frozen=True, kw_only=True)
class CompressRun(_Options):
    """How and where ``compress`` runs: never changes a model, recorded nowhere.

    Attributes
    ----------
    clients : list of str or comma-separated str, optional
        Compress only these enrolled clients (the others still serve as impostors).
    jobs : int
        Local worker processes (joblib/loky); -1 = one per core.
    scheduler : str, optional
        Address of a Dask distributed scheduler that runs the per-client jobs.
    job_timeout : float
        Seconds a client's job may run on the Dask cluster (from when a worker thread
        is free for it, `ssgallery.app.parallel.DaskLimits`) before the run stops with
        one line naming the client; 0 = no limit. The default, `JOB_TIMEOUT`, is far
        above what training one client takes (bounded per client by the impostor cap,
        whatever the number of clients). Local jobs run this host's own code: no limit.
    resume : bool
        Reuse the committed parts of an interrupted run with the same store and options.
    update : bool
        Copy the existing gallery's clients trained with the same options on the same
        matcher basis; train only the others.
    force : bool
        Replace a file at the gallery path that is not an ssgallery file (a store, a
        folder or a special file there is always refused, before any training).
    key_file : str, optional
        The host's signing key (default ``$SSGALLERY_KEY_FILE``; none: unsigned gallery).
    matcher_cmd : str or list, optional
        The host's external matcher program (`ssgallery.matchers.host`).
    privacy_key_file : str, optional
        The host's privacy key (default ``$SSGALLERY_PRIVACY_KEY_FILE``): reads an
        encrypted store, writes the gallery encrypted, and keys ``protect_templates``
        (`ssgallery.formats.encryption`).
    progress : ssgallery.progress.Progress, optional
        Reports computing the features (one step per image, when the store has none
        cached), the shared similarity matrix, and training (one step per client).
    warn : callable(str), optional
        Receives warnings (a bad committed part, whose client is trained again);
        default `ssgallery.images.ingest.default_warn`.
    """

    clients: object = option_field(None, _clients)
    jobs: int = option_field(1)
    scheduler: str = option_field(None)
    job_timeout: float = option_field(JOB_TIMEOUT, non_negative)
    resume: bool = option_field(False, flag_bool)
    update: bool = option_field(False, flag_bool)
    force: bool = option_field(False, flag_bool)
    key_file: str = option_field(None)
    matcher_cmd: object = option_field(None)
    privacy_key_file: str = option_field(None)
    progress: object = option_field(None)
    warn: object = option_field(None)

    def __post_init__(self):
        super().__post_init__()
        from ssgallery.app.parallel import check_backend

        check_backend(self.jobs, self.scheduler)


def resolve_between(between, black_box, matcher_name, warn):
    """The weight of the points between the classes a matcher trains with (``compress
    --between``, ``roc --between``): ``between``, or 0 for a black box, whose inputs are
    not vectors to average (`ssgallery.learn.targets.between_points`), so that its
    galleries and reports say what was applied. ``warn`` names a weight a black box
    ignores, unless it is the default (`DEFAULT_BETWEEN`), which means "where it
    applies"."""
    if not black_box:
        return between
    if between and between != DEFAULT_BETWEEN:
        warn(f"{_flag('between')} {between:g} is ignored: the {matcher_name} matcher is a "
             "black box (no midpoints of its inputs); its clients are fitted on the "
             "training images only")
    return 0.0


def resolve_training(options, black_box, n_images=None):
    """``options`` with ``m`` None and ``max_iter`` and ``swap_rounds`` "auto" resolved
    for the matcher: a black box (``black_box``: no analytic gradient, Eq. 7
    (eq:similarity-grad)) keeps `BLACK_BOX_M` real training images, improved by swaps
    (`BLACK_BOX_SWAP_ROUNDS`) and never moved (`BLACK_BOX_MAX_ITER`); an analytic
    matcher moves `DEFAULT_M` of them (`MAX_ITER`), unswapped. The default m is a default, not a
    request: never more than ``n_images`` (the images it is trained on, when given).
    Values already set pass through, so resolving twice changes nothing."""
    auto = {"max_iter": BLACK_BOX_MAX_ITER if black_box else MAX_ITER,
            "swap_rounds": BLACK_BOX_SWAP_ROUNDS if black_box else 0}
    resolved = {k: v for k, v in auto.items() if getattr(options, k) == "auto"}
    if options.m is None:
        m = BLACK_BOX_M if black_box else DEFAULT_M
        resolved["m"] = m if n_images is None else min(m, int(n_images))
    return replace(options, **resolved)


def split_options(values, *classes):
    """One object per dataclass from ``values`` (e.g. a command's keyword arguments),
    each taking the names of its fields; a name no class has is a programming error."""
    rest, out = dict(values), []
    for cls in classes:
        names = {f.name for f in fields(cls)}
        out.append(cls(**{k: rest.pop(k) for k in list(rest) if k in names}))
    if rest:
        raise TypeError(f"no options object takes {', '.join(sorted(rest))}")
    return tuple(out)
