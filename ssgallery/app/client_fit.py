"""Fitting one client of ``compress``: teacher, distillation, held-out thresholds
(`train_client`; the job that runs it on every backend: `ssgallery.app.client_training`).

Per client c, on the matcher features X of its bounded training set
(`ssgallery.app.training_sets`: its own images and at most K impostors):

1. **Teacher.** One-vs-all `ssgallery.learn.teacher.SimilaritySVM` (images of c = +1,
   the impostor images = -1), C by balanced 5-fold CV, on the matcher's own similarity.
2. **Distillation.** `ssgallery.learn.supersparse.SuperSparseDistiller` fits m virtual
   prototypes to the SVM's decision values (Eqs. 2 (eq:objective) to 6
   (eq:final-gradient)); ``m="auto"`` picks m by the incremental validation of Eq. 8
   (eq:xval-m).
3. **Threshold.** The training scores of a model are optimistic, so the threshold comes
   from cross-validated impostor scores: 5 folds, impostors split by subject (a
   held-out impostor is a person the fold's model never saw, as at verification time),
   genuine images spread evenly; on each fold the SVM (C fixed to the one chosen in
   step 1) and the distilled model are refitted on the other folds and score the
   held-out images. The threshold is the smallest one at which
   at most ``floor(target_far * n_impostors)`` of those held-out impostor scores are
   accepted (accept when g(x) >= threshold). The same is done for the full SVM, and
   its threshold and #SVs are stored next to the prototypes for comparison. When the
   folds' models scored on another scale than the model fitted on every image (at
   their threshold it accepts significantly more of its own training impostor people
   than the target FAR allows: `_off_scale`), the held-out scores cannot set its threshold,
   and its training scores do (``cv_off_scale`` in the provenance; compress warns).
"""

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from ssgallery.app.options import N_FOLDS, CompressOptions, resolve_training
from ssgallery.biometrics.heldout import threshold_folds, znorm_parameters
from ssgallery.errors import InputError
from ssgallery.learn.defaults import swap_rounds_for

GUARD_GAP = 0.05  # held-out teacher_gap above which compress warns (and --guard refits)
AUTO_M_GRID = (10, 5, 3, 2, 1)  # --m auto: candidates, largest first (Eq. 8 (eq:xval-m))


@dataclass
class ClientFit:
    """Everything trained for one client (what `train_client` returns).

    Attributes
    ----------
    svm : SimilaritySVM
    distiller : SuperSparseDistiller
    threshold, svm_threshold : float
        At the target FAR, from cross-validated impostor scores (training scores when
        none can be held out, or when those are off the final model's scale).
    cv : dict
        Achieved CV FAR/FRR of both models at their thresholds, fold counts.
    normalization : dict
        Z-norm parameters of the distilled model's scores, ``{"kind": "znorm", "mean",
        "std", "n"}``, from the same held-out impostor scores as the threshold.
    heldout : dict
        The held-out scores of the distilled model: ``impostor`` (n_imp,), ``genuine``
        (n_gen,), ``impostor_subject`` (n_imp,) (what calibration across clients needs).
    first_distiller : SuperSparseDistiller or None
        With ``options.guard``, the first fit's distilled model: what ``compress``
        keeps without ``--guard`` (the same object as ``distiller`` when the guard kept
        it). None when the guard did not run.
    options : CompressOptions or None
        The options the client was trained with: resolved for its matcher
        (`ssgallery.app.options.resolve_training`) and its impostors
        (`ssgallery.learn.defaults.swap_rounds_for`).
    """

    svm: object
    distiller: object
    threshold: float
    svm_threshold: float
    cv: dict = field(default_factory=dict)
    normalization: dict = None
    heldout: dict = field(default_factory=dict)
    first_distiller: object = None
    options: object = None


def threshold_at_far(impostor_scores, target_far):
    """Smallest threshold t with #{impostor scores >= t} <= floor(target_far * n)."""
    from ssgallery.biometrics.metrics import threshold_at_far as at_far

    if len(impostor_scores) == 0:
        raise InputError("no impostor images to set a threshold: enrol at least two "
                         "clients or add background subjects")
    return at_far(impostor_scores, target_far)


def _fit_pair(X, y, similarity, bounds, options, C, m, gram=None, n_init=1):
    """SVM teacher (``gram`` = S(X, X) if known), then its distillation to m prototypes
    (m="auto": Eq. 8 (eq:xval-m)) with the learner options of ``options`` and ``n_init``
    starts (more only when the guard refits)."""
    from ssgallery.learn.supersparse import SuperSparseDistiller
    from ssgallery.learn.teacher import SimilaritySVM

    o = options
    svm = SimilaritySVM(similarity=similarity, C=C, random_state=o.seed).fit(X, y, gram)
    m_fit = 2 if m == "auto" else min(m, len(X))  # a row at most once: no jittered copies
    dist = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=m_fit,
                                similarity=similarity, lam=o.lam, solver=o.solver,
                                init=o.init, bounds=bounds, max_iter=o.max_iter,
                                refresh_every=o.refresh_every, n_init=n_init,
                                between=o.between, swap_rounds=o.swap_rounds,
                                lam_sum=o.lam_sum,
                                random_state=o.seed)
    if m == "auto":
        from ssgallery.learn.mselect import select_n_prototypes

        n_pos = int(np.sum(y > 0))
        grid = tuple(m for m in AUTO_M_GRID if m <= len(X))  # never more than its images
        selection = select_n_prototypes(dist, X, y, m_grid=grid, rho=o.rho,
                                        cv=max(2, min(N_FOLDS, n_pos)), random_state=o.seed)
        return svm, selection.best_estimator_
    return svm, dist.fit(X, y)


def train_client(X, y, similarity, options=None, *, groups=None, bounds=None, gram=None,
                 folds=None, fold_spaces=None):
    """Teacher, distillation and CV thresholds for one client.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Matcher features of every training image.
    y : ndarray of shape (n,)
        +1 for the client's images, -1 for everyone else's.
    similarity : Similarity
        The matcher's similarity on X.
    options : CompressOptions, optional
        The training options (`ssgallery.app.options.CompressOptions`; default: its
        defaults): lam, solver, init ("auto": `ssgallery.learn.initial.resolve_init`),
        rho, target_far, m (None: the matcher's default; never more prototypes than
        training rows, `_fit_pair`), max_iter and swap_rounds ("auto":
        `ssgallery.app.options.resolve_training`), seed, and cv_folds, the folds of the
        threshold CV (fewer when there are fewer genuine images).
    groups : ndarray of shape (n,), optional
        Subject of each image; impostors are held out by subject (default: by image).
    bounds : (lower, upper), optional
        The box of the matcher's space.
    gram : ndarray of shape (n, n), optional
        S(X, X), computed once for all clients by `compress`.
    folds : ndarray of shape (n,), optional
        The threshold-CV fold of each sample (default `threshold_folds`).
    fold_spaces : list of (ndarray of shape (n, d_j), Similarity, bounds), optional
        Per fold j, the samples in the space of the matcher refitted without fold j's
        held-out impostor subjects (`ssgallery.app.fold_spaces`), so that those
        impostors are unseen by the matcher too, as at verification time. Default:
        every fold uses ``X``.

    Returns
    -------
    ClientFit
    """
    from ssgallery.learn.supersparse import resolve_init

    o = options if options is not None else CompressOptions()
    o = resolve_training(replace(o, init=resolve_init(o.init, similarity)),
                         not getattr(similarity, "has_gradient", False))
    o = replace(o, swap_rounds=swap_rounds_for(o.swap_rounds, y, groups))
    if folds is None:
        folds = threshold_folds(y, groups, o.cv_folds, o.seed)
    k = int(folds.max()) + 1 if folds is not None else 0
    fit_and_hold_out = partial(_fit_and_hold_out, _Training(
        X, y, similarity, bounds, gram, folds, fold_spaces or [(X, similarity, bounds)] * k))
    svm, dist, scores = fit_and_hold_out(o, o.m)
    guard = first = None
    if o.guard and k:
        first = dist
        svm, dist, scores, guard = _guard(o, fit_and_hold_out, (svm, dist, scores))
    t, t_svm, cv = _cv_thresholds(scores, o.target_far, k)
    off_scale = _off_scale(X, y, dist, t, o.target_far, groups) if k else None
    if off_scale is not None:  # the folds' models do not describe this one's scale
        ranking = {n: cv[n] for n in ("misranking", "svm_misranking", "teacher_gap")}
        scores, k = _training_scores(X, y, svm, dist), 0
        t, t_svm, cv = _cv_thresholds(scores, o.target_far, k)
        cv.update(ranking, cv_off_scale=off_scale)  # ranking: still the held-out one's
    if guard is not None:
        cv["guard"] = guard
    imp_g, gen_g = scores[0], scores[2]
    imp_index = np.concatenate([np.flatnonzero((folds == j) & (y < 0)) for j in range(k)]) \
        if k else np.flatnonzero(y < 0)
    imp_subject = np.asarray(groups)[imp_index] if groups is not None else None
    return ClientFit(svm=svm, distiller=dist, threshold=t, svm_threshold=t_svm, cv=cv,
                     normalization=znorm_parameters(imp_g),
                     heldout={"impostor": imp_g, "genuine": gen_g,
                              "impostor_subject": imp_subject, "impostor_index": imp_index},
                     first_distiller=first, options=o)


@dataclass
class _Training:
    """One client's training data as `train_client` has it, its threshold folds set
    (``folds`` None: too few images or impostor subjects to hold any out)."""

    X: np.ndarray
    y: np.ndarray
    similarity: object
    bounds: object
    gram: np.ndarray
    folds: np.ndarray
    spaces: list  # per fold: (X, similarity, bounds) in the matcher refitted without it


def _fit_and_hold_out(c, opts, m, n_init=1):
    """The client's SVM and distilled model (``opts``, ``m``, ``n_init`` starts) and their
    held-out scores (distilled impostor, SVM impostor, distilled genuine, SVM genuine):
    training scores when nothing can be held out."""
    svm, dist = _fit_pair(c.X, c.y, c.similarity, c.bounds, opts, "cv", m, c.gram, n_init)
    if c.folds is None:  # too few images or impostor subjects to hold out: training scores
        return svm, dist, _training_scores(c.X, c.y, svm, dist)
    m_fit = len(dist.beta_)
    return svm, dist, _heldout_scores(
        c.y, c.folds, c.spaces,
        lambda Xf, yf, sim_f, bounds_f: _fit_pair(Xf, yf, sim_f, bounds_f, opts,
                                                  svm.C_, m_fit, n_init=n_init))


def _training_scores(X, y, svm, dist):
    """The training scores of both models, in the order of `_heldout_scores`."""
    neg = y < 0
    return [dist.decision_function(X[neg]), svm.decision_function(X[neg]),
            dist.decision_function(X[~neg]), svm.decision_function(X[~neg])]


def _off_scale(X, y, dist, threshold, target_far, groups=None):
    """``[accepted, impostors]`` when the distilled model, at the ``threshold`` its
    held-out impostor scores gave, accepts significantly more of its own training
    impostors than ``target_far`` allows, counting their people (``groups``: the subject
    of each image; `ssgallery.biometrics.calibration.accepts_too_many`): the held-out
    scores come from the folds' models, and these scored on another scale than the model
    fitted on every image (e.g. an SVM whose every sample is a bounded support vector:
    its intercept is not determined by the data and moves between fits). None when the
    held-out scores can set its threshold."""
    from ssgallery.biometrics.calibration import accepts_too_many

    neg = y < 0
    hits = dist.decision_function(X[neg]) >= threshold
    if accepts_too_many(hits, target_far, None if groups is None else np.asarray(groups)[neg]):
        return [int(hits.sum()), int(hits.size)]
    return None


def _cv_thresholds(scores, target_far, k):
    """The distilled model's and its SVM's thresholds at ``target_far`` from the held-out
    ``scores`` (`_fit_and_hold_out`), and the CV rates both achieve (``k`` folds)."""
    imp_g, imp_s, gen_g, gen_s = scores
    t, t_svm = threshold_at_far(imp_g, target_far), threshold_at_far(imp_s, target_far)
    return t, t_svm, {"threshold_folds": k,
                      "cv_far": float(np.mean(imp_g >= t)), "cv_frr": float(np.mean(gen_g < t)),
                      "svm_cv_far": float(np.mean(imp_s >= t_svm)),
                      "svm_cv_frr": float(np.mean(gen_s < t_svm)),
                      **teacher_agreement(gen_g, imp_g, gen_s, imp_s, held_out=k > 0)}


def teacher_agreement(gen_g, imp_g, gen_s, imp_s, held_out=True):
    """How the distilled model ranks held-out images beside its SVM teacher.

    From the threshold CV's held-out scores (distilled ``gen_g``, ``imp_g``; SVM
    ``gen_s``, ``imp_s``): each model's share of misranked (genuine, impostor) pairs
    (`ssgallery.learn.guard.misranking`, 1 - ROC AUC) and their difference
    ``teacher_gap`` (> 0: the distilled model is worse). None when nothing was held out
    (training scores say nothing of new images).

    Returns
    -------
    dict
        ``{"misranking", "svm_misranking", "teacher_gap"}``, floats or None.
    """
    if not held_out:
        return {"misranking": None, "svm_misranking": None, "teacher_gap": None}
    from ssgallery.learn.guard import misranking

    mine, svm = misranking(gen_g, imp_g), misranking(gen_s, imp_s)
    return {"misranking": mine, "svm_misranking": svm, "teacher_gap": mine - svm}


def _guard(o, fit_and_hold_out, first):
    """``--guard``: when the first fit's held-out `teacher_agreement` gap exceeds
    `GUARD_GAP`, refit from the other class-aware start, from 3 random starts of real
    images, and (``m="auto"``) with one prototype more, each with its threshold CV,
    keeping the fit of least gap (`ssgallery.learn.guard`, the library's twin).
    Returns (svm, distiller, held-out scores, record)."""
    def gap(scores):
        imp_g, imp_s, gen_g, gen_s = scores
        return teacher_agreement(gen_g, imp_g, gen_s, imp_s)["teacher_gap"]

    best, best_gap = first, gap(first[2])
    attempts = [("first fit", best_gap)]
    if best_gap > GUARD_GAP:
        m = len(first[1].beta_)
        tries = [(f"init={i}", replace(o, init=i), m, 1) for i in ("class", "genuine")
                 if i != o.init]
        # n_init=4: the class-aware start, then 3 of random real images of each class
        tries.append(("3 random starts", replace(o, init="class"), m, 4))
        if o.m == "auto":
            tries.append((f"m={m + 1}", o, m + 1, 1))
        for label, opts, m_try, n_init in tries:
            fit = fit_and_hold_out(opts, m_try, n_init)
            attempts.append((label, gap(fit[2])))
            if attempts[-1][1] < best_gap:
                best, best_gap = fit, attempts[-1][1]
            if best_gap <= GUARD_GAP:
                break
    record = {"attempts": [[a, float(g)] for a, g in attempts],
              "repaired": bool(best_gap < attempts[0][1]), "ok": bool(best_gap <= GUARD_GAP)}
    return (*best, record)


def _heldout_scores(y, folds, spaces, refit):
    """The threshold CV: per fold j, both models refitted (``refit(X, y, similarity,
    bounds) -> (svm, distiller)``) on the other folds in ``spaces[j]`` (``(X, similarity,
    bounds)``) score fold j's images. Returns the distilled and the SVM's impostor
    scores, then their genuine scores, each concatenated over the folds."""
    imp_g, imp_s, gen_g, gen_s = [], [], [], []
    for j, (Xf, sim_f, bounds_f) in enumerate(spaces):
        tr, te = folds != j, folds == j
        f_svm, f_dist = refit(Xf[tr], y[tr], sim_f, bounds_f)
        neg, pos = te & (y < 0), te & (y > 0)
        imp_g.append(f_dist.decision_function(Xf[neg]))
        imp_s.append(f_svm.decision_function(Xf[neg]))
        gen_g.append(f_dist.decision_function(Xf[pos]))
        gen_s.append(f_svm.decision_function(Xf[pos]))
    return [np.concatenate(v) for v in (imp_g, imp_s, gen_g, gen_s)]
