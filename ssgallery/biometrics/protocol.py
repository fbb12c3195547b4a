"""The paper's face-verification protocol (Sect. IV-A) and its runner.

Per repetition (seeded): a random half of the subjects are enrolled clients, the
others appear only as impostors at test time. Each client gets ``n_train`` random
training images; its remaining images are genuine claims; every image of a
non-enrolled subject is an impostor claim against every client (the splits:
`ssgallery.biometrics.splits.make_splits`, re-exported here). The one-vs-all
training set of a client is its training images (+1) against the training images of
the other enrolled clients (-1), so test impostors are never seen in training. The
matcher (the PCA basis for eigenface) is fitted on the training images only.

`ProtocolOptions` (`ssgallery.biometrics.protocol_options`) holds what the protocol runs
(methods, m, splits, seed, jobs, identification), checked when built. `run_protocol`
trains, per client, the SVM teacher once and every method at every m from it, and
returns the claims' scores as `Scores` tables (one per method and repetition): what
`ssgallery.app.roc` turns into curves and EERs and what `ssgallery.biometrics.report`
writes as 4-column score files.
"""

import time

import numpy as np

from ssgallery.biometrics.protocol_options import (  # noqa: F401  (public here too)
    DEFAULT_METHODS,
    SSVM_METHODS,
    ProtocolOptions,
)
from ssgallery.biometrics.scores import Scores
from ssgallery.biometrics.splits import Split, make_splits  # noqa: F401  (public here too)
from ssgallery.errors import InputError
from ssgallery.learn.defaults import DEFAULT_M
from ssgallery.matchers.base import face_check, fit_matcher, transform_in_chunks
from ssgallery.progress import as_progress


def default_matcher_factory():
    """An unfitted eigenface matcher (95 % variance, gamma = 1/d, as in the paper)."""
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    return EigenfaceMatcher()


def method_specs(methods, m_values):
    """[(name, m)] for every method at every m; the full SVM once with m=None.

    An item ``(name, m)`` of ``methods`` is taken as is (one method at one m).
    """
    specs = []
    for name in methods:
        if not isinstance(name, str):
            specs.append((str(name[0]), None if name[0] == "svm" else int(name[1])))
        elif name == "svm":
            specs.append((name, None))
        else:
            specs.extend((name, int(m)) for m in m_values)
    return specs


def _distils_between(name, options):
    """True when method ``name`` of ``options`` distils at ``options.between``: a
    super-sparse SVM whose ``method_options`` do not set their own ``between``."""
    opts = options.method_options.get(name, {})
    return str(opts.get("method", name)).lower() in SSVM_METHODS and "between" not in opts


def between_applied(options):
    """``options.between`` when some listed method distils at it (`_make`), else 0: what
    a report records as the run's ``between``."""
    if any(_distils_between(name, options) for name, _ in method_specs(options.methods, (1,))):
        return options.between
    return 0.0


def _make(name, m, random_state, options, y=None, groups=None):
    """An unfitted method (the teacher's distillation or reduction) from the registry;
    the super-sparse SVMs distil at ``options.between`` too (unless their
    ``method_options`` set ``between``), and make no swap when the client's impostors
    (rows of negative ``y``) are all one person by ``groups``
    (`ssgallery.learn.defaults.swap_rounds_for`), as ``compress`` trains them."""
    from ssgallery.biometrics.methods import make_method
    from ssgallery.learn.defaults import swap_rounds_for

    opts = dict(options.method_options.get(name, {}))
    if options.between and _distils_between(name, options):
        opts["between"] = options.between
    if opts.get("swap_rounds"):
        opts["swap_rounds"] = swap_rounds_for(opts["swap_rounds"], y, groups)
    return make_method(opts.pop("method", name), m, random_state=random_state, **opts)


def _fit_client(data, similarity, specs, random_state, options, gram=None):
    """Teacher once (on ``gram`` = S(X, X), shared by the clients of a repetition), then
    every (method, m): scores of the genuine probes and the impostor claims; with
    ``options.norm_folds`` (searches only), each method's held-out Z-norm parameters.
    ``data``: (X, y, subject of each row, genuine probes, impostor claims)."""
    from ssgallery.learn.teacher import SimilaritySVM

    X, y, groups, X_gen, X_imp = data
    t0 = time.perf_counter()
    teacher = SimilaritySVM(similarity=similarity, random_state=random_state,
                            **options.method_options.get("svm", {})).fit(X, y, gram)
    teacher_s = time.perf_counter() - t0
    out = []
    for name, m in specs:
        t0 = time.perf_counter()
        if name == "svm":
            model, matches = teacher, teacher.n_support_total_
        else:
            model = _make(name, m, random_state, options, y, groups)
            model.fit(X, y, teacher=teacher)
            matches = model.n_matches_
        fit_s = time.perf_counter() - t0
        out.append((model.decision_function(X_gen), model.decision_function(X_imp),
                    float(matches), teacher_s + fit_s, None))
    if options.identification and options.norm_folds:
        norms = _normalisation(X, y, groups, similarity, specs, teacher.C_, random_state,
                               options, gram)
        out = [row[:4] + (norm,) for row, norm in zip(out, norms or [None] * len(out))]
    return out


def _normalisation(X, y, groups, similarity, specs, C, random_state, options, gram):
    """Every method's held-out Z-norm parameters (None when the folds cannot be made)."""
    from ssgallery.biometrics.heldout import heldout_normalisation
    from ssgallery.learn.teacher import SimilaritySVM

    def fit_fold(train):
        sub = None if gram is None else gram[np.ix_(train, train)]
        teacher = SimilaritySVM(similarity=similarity, random_state=random_state,
                                **{**options.method_options.get("svm", {}), "C": C}).fit(
            X[train], y[train], sub)
        return [teacher if name == "svm" else
                _make(name, m, random_state, options, y, groups).fit(  # as the client's
                    X[train], y[train], teacher=teacher) for name, m in specs]

    return heldout_normalisation(X, y, groups, fit_fold, options.norm_folds, random_state)


def run_protocol(images, labels, options=None, *, matcher_factory=None, probe_labels=None,
                 progress=None, enrollable=None, private=False):
    """Run the protocol and score every claim with every method.

    Parameters
    ----------
    images : ndarray, shape (n, H, W), float on [0, 255]
    labels : array-like of str, shape (n,)
    options : ProtocolOptions, optional
        Methods, m, splits, seed, jobs, identification (default: every default).
    matcher_factory : callable () -> Matcher, optional
        A fresh unfitted matcher per repetition; default eigenface.
    probe_labels : sequence of str, optional
        How each image is named in score files (default its index).
    progress : ssgallery.progress.Progress, optional
        Per repetition, the probes and training images mapped to the matcher space (one
        step per image) and the clients trained (one step per client).
    enrollable : iterable of str, optional
        Subjects that may be enrolled (see `make_splits`).
    private : bool
        The images are personal data read with the privacy key: local workers
        (``options.n_jobs``) never share them through a file on disk
        (`ssgallery.learn.threads.memmap_options`).

    Returns
    -------
    list of Scores
        One per (method, m, repetition), methods in the order given. The verification
        claims: genuine probes against their own client, impostors against every client;
        a claim whose probe is not a face for the repetition's matcher
        (`ssgallery.matchers.base.Matcher.is_face`) scores NaN, a failure to
        acquire (the search tables keep every score). With ``options.identification``,
        ``table.search`` is a `Scores` of every probe (genuine and impostor) against
        every client.
    """
    o = options if options is not None else ProtocolOptions()
    images = np.asarray(images)
    labels = np.asarray(labels).astype(str)
    if images.ndim != 3 or len(images) != len(labels):
        raise InputError(f"expected images (n, H, W) and n labels, got {images.shape} and "
                         f"{len(labels)} labels")
    specs = method_specs(o.methods, o.m or (DEFAULT_M,))
    probe_labels = (np.arange(len(labels)).astype(str) if probe_labels is None
                    else np.asarray(probe_labels).astype(str))
    matcher_factory = matcher_factory or default_matcher_factory
    tables = []
    progress = as_progress(progress)
    for split in make_splits(labels, o.n_enrolled, o.n_train, o.repetitions, o.seed,
                             enrollable):
        step = f"repetition {split.repetition + 1}/{o.repetitions}: "
        tables += _split_tables(split, (images, labels, probe_labels), matcher_factory(),
                                specs, o, (progress, step, private))
    order = {spec: i for i, spec in enumerate(specs)}
    tables.sort(key=lambda t: (order[(t.method, t.m)], t.repetition))
    return tables


def _split_tables(split, data, matcher, specs, options, run):
    """One repetition: fit ``matcher`` on the training images only, train every client,
    score the claims; one `Scores` per (method, m). ``run``: (Progress, the repetition's
    label prefix, ``private`` of `run_protocol`)."""
    images, labels, probe_labels = data
    progress, step, private = run
    identification = options.identification
    matcher = fit_matcher(matcher, images[split.train_indices()],  # training only
                          labels[split.train_indices()], progress,
                          f"{step}fitting the {getattr(matcher, 'name', '')} matcher")
    sim = matcher.similarity()
    needed = np.concatenate([split.train_indices(), split.impostors]
                            + [split.genuine[c] for c in split.enrolled])
    feats = dict(zip(needed.tolist(), transform_in_chunks(
        matcher, images[needed], progress=progress, label=f"{step}computing features")))
    fta = np.zeros(len(images), dtype=bool)  # test probes that are not faces for it
    claims = needed[len(split.train_indices()):]
    fta[claims] = ~face_check(matcher, images[claims])[0]
    X = np.stack([feats[i] for i in split.train_indices()])
    owner = labels[split.train_indices()]
    X_imp = np.stack([feats[i] for i in split.impostors])
    rs = int(options.seed) * 1000 + split.repetition
    gram = sim(X, X)  # the same training set for every client of this repetition
    gen_idx = np.concatenate([split.genuine[c] for c in split.enrolled])
    X_gen = np.stack([feats[i] for i in gen_idx])
    own = {c: np.isin(gen_idx, split.genuine[c]) for c in split.enrolled}
    jobs = [((X, np.where(owner == c, 1, -1), owner, X_gen if identification else X_gen[own[c]],
              X_imp), sim, specs, rs, options, gram) for c in split.enrolled]
    with progress.phase(f"{step}training clients", len(jobs), "clients"):
        results = _map(jobs, options.n_jobs, progress, private)
    tables = []
    for k, spec in enumerate(specs):
        per_client = {c: res[k] for c, res in zip(split.enrolled, results)}
        table = _claims_table(spec, split, labels, probe_labels, per_client,
                              {c: own[c] if identification else slice(None)
                               for c in split.enrolled}, fta)
        if identification:
            table.search = _search_table(spec, split, labels, probe_labels, gen_idx,
                                         per_client)
        tables.append(table)
    return tables


def _claims_table(spec, split, labels, probe_labels, per_client, own_rows, fta):
    """The verification claims of one (method, m) in one repetition; claims whose
    probe failed to acquire (``fta``, per image) score NaN (never accepted)."""
    claimed, real, probe, score, clients = [], [], [], [], {}
    for c in split.enrolled:
        gen, imp, matches, secs, _ = per_client[c]
        idx = np.concatenate([split.genuine[c], split.impostors])
        claimed.append(np.full(len(idx), c))
        real.append(labels[idx])
        probe.append(probe_labels[idx])
        score.append(np.where(fta[idx], np.nan, np.concatenate([gen[own_rows[c]], imp])))
        clients[c] = {"matches": matches, "fit_seconds": secs}
    return Scores(spec[0], spec[1], split.repetition, np.concatenate(claimed),
                  np.concatenate(real), np.concatenate(probe),
                  np.concatenate(score).astype(float), clients)


def _search_table(spec, split, labels, probe_labels, gen_idx, per_client):
    """Every test probe (genuine of any client, impostor) against every client, with
    each client's held-out normalisation as a gallery stores it: a client without an
    impostor-score spread of its own borrows one, as ``compress`` gives it
    (`ssgallery.biometrics.openset.pooled_spreads`)."""
    from ssgallery.biometrics.openset import pooled_spreads

    idx = np.concatenate([gen_idx, split.impostors])
    claimed, score = [], []
    for c in split.enrolled:
        gen, imp, _, _, _ = per_client[c]
        claimed.append(np.full(len(idx), c))
        score.append(np.concatenate([gen, imp]))
    n = len(split.enrolled)
    clients = {}
    norms, _ = pooled_spreads([per_client[c][4] for c in split.enrolled])
    for c, norm in zip(split.enrolled, norms):
        clients[c] = {"matches": per_client[c][2]} | (
            {} if norm is None else {"norm_mean": norm["mean"], "norm_std": norm["std"]})
    return Scores(spec[0], spec[1], split.repetition, np.concatenate(claimed),
                  np.tile(labels[idx], n), np.tile(probe_labels[idx], n),
                  np.concatenate(score).astype(float), clients)


def _map(jobs, n_jobs, progress, private=False):
    """_fit_client over jobs, in order, reporting progress per finished client."""
    from ssgallery.learn.threads import memmap_options, worker_count

    n_jobs = 1 if n_jobs is None or n_jobs == 1 else worker_count(n_jobs, len(jobs))
    if n_jobs == 1:
        out = []
        for job in jobs:
            out.append(_fit_client(*job))
            progress.advance()
        return out
    from joblib import Parallel, delayed

    out = []
    gen = Parallel(n_jobs=n_jobs, return_as="generator", **memmap_options(private))(
        delayed(_fit_client)(*j) for j in jobs)
    for res in gen:
        out.append(res)
        progress.advance()
    return out
