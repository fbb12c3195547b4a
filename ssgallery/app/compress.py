"""``compress``: enrollment store -> gallery, one client at a time.

Per enrolled client c, on the matcher features X of every image in the store:

1. **Teacher.** One-vs-all :class:`~ssgallery.learn.teacher.SimilaritySVM` (images of c = +1,
   every other client's and every background subject's images = -1), C by balanced
   5-fold CV, on the matcher's own similarity.
2. **Distillation.** :class:`~ssgallery.learn.supersparse.SuperSparseDistiller` fits m virtual
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
   its threshold and #SVs are stored next to the prototypes for comparison.

The gallery is written once, atomically, at the end: an error or Ctrl-C leaves nothing.
"""

import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery.errors import InputError, NotRenderableError, SsgalleryError
from ssgallery.learn.defaults import DEFAULT_LAM
from ssgallery.learn.supersparse import resolve_init
from ssgallery.learn.threads import single_threaded_blas

N_FOLDS = 5
AUTO_M_GRID = (10, 5, 3, 2, 1)  # --m auto: candidates, largest first (Eq. 8 (eq:xval-m))
MAX_ITER = 200  # the learner's default: L-BFGS-B iterations (varpro) / sweeps (paper)


@dataclass
class ClientFit:
    """Everything trained for one client (what :func:`train_client` returns).

    Attributes
    ----------
    svm : SimilaritySVM
    distiller : SuperSparseDistiller
    threshold, svm_threshold : float
        At the target FAR, from cross-validated impostor scores.
    cv : dict
        Achieved CV FAR/FRR of both models at their thresholds, fold counts.
    normalization : dict
        Z-norm parameters of the distilled model's scores, ``{"kind": "znorm", "mean",
        "std", "n"}``, from the same held-out impostor scores as the threshold.
    heldout : dict
        The held-out scores of the distilled model: ``impostor`` (n_imp,), ``genuine``
        (n_gen,), ``impostor_subject`` (n_imp,) (what calibration across clients needs).
    """

    svm: object
    distiller: object
    threshold: float
    svm_threshold: float
    cv: dict = field(default_factory=dict)
    normalization: dict = None
    heldout: dict = field(default_factory=dict)


def znorm_parameters(impostor_scores):
    """Z-norm parameters of one client's impostor scores: mean and standard deviation.

    ``(g(x) - mean) / std`` makes the client's impostor scores zero-mean, unit-variance,
    so one threshold can serve every client (score normalisation, e.g. Auckenthaler et
    al. 2000). The std is floored at 1e-12 so a degenerate client cannot divide by 0.

    Returns
    -------
    dict
        ``{"kind": "znorm", "mean": float, "std": float, "n": int}``
    """
    s = np.asarray(impostor_scores, dtype=float)
    return {"kind": "znorm", "mean": float(np.mean(s)),
            "std": float(max(np.std(s, ddof=1) if s.size > 1 else 0.0, 1e-12)),
            "n": int(s.size)}


def threshold_at_far(impostor_scores, target_far):
    """Smallest threshold t with #{impostor scores >= t} <= floor(target_far * n)."""
    from ssgallery.biometrics.metrics import threshold_at_far as at_far

    if len(impostor_scores) == 0:
        raise InputError("no impostor images to set a threshold: enrol at least two "
                         "clients or add background subjects")
    return at_far(impostor_scores, target_far)


def _fit_pair(X, y, similarity, bounds, m, lam, solver, init, C, rho, random_state,
              max_iter=MAX_ITER, gram=None):
    """SVM teacher (``gram`` = S(X, X) if known), then its distillation to m prototypes
    (m="auto": Eq. 8 (eq:xval-m))."""
    from ssgallery.learn.supersparse import SuperSparseDistiller
    from ssgallery.learn.teacher import SimilaritySVM

    svm = SimilaritySVM(similarity=similarity, C=C, random_state=random_state).fit(X, y, gram)
    dist = SuperSparseDistiller(teacher=svm, prefit=True, n_prototypes=2 if m == "auto" else m,
                                similarity=similarity, lam=lam, solver=solver, init=init,
                                bounds=bounds, max_iter=max_iter, random_state=random_state)
    if m == "auto":
        from ssgallery.learn.mselect import select_n_prototypes

        n_pos = int(np.sum(y > 0))
        selection = select_n_prototypes(dist, X, y, m_grid=AUTO_M_GRID, rho=rho,
                                        cv=max(2, min(N_FOLDS, n_pos)), random_state=random_state)
        return svm, selection.best_estimator_
    return svm, dist.fit(X, y)


def threshold_folds(y, groups, n_folds=N_FOLDS, random_state=0):
    """Fold index per sample for the threshold CV, or None when it cannot be done.

    Impostors are split by subject (``groups``): a held-out impostor is someone the
    fold's model never saw, as at verification time. Genuine images are spread over
    the folds one by one. Shape (n,), values 0..k-1 with k = min(n_folds, #genuine,
    #impostor subjects) >= 2.
    """
    y = np.asarray(y)
    groups = np.asarray(groups if groups is not None else np.arange(len(y))).astype(str)
    pos = np.flatnonzero(y > 0)
    subjects = np.unique(groups[y < 0])
    k = min(n_folds, len(pos), len(subjects))
    if k < 2:
        return None
    rng = np.random.default_rng(random_state)
    folds = np.empty(len(y), dtype=int)
    for j, subject in enumerate(rng.permutation(subjects)):
        folds[(groups == subject) & (y < 0)] = j % k
    folds[rng.permutation(pos)] = np.arange(len(pos)) % k
    return folds


def train_client(X, y, similarity, *, groups=None, m=2, lam=DEFAULT_LAM, solver="varpro", init="class",
                 bounds=None, rho=0.01, target_far=0.01, n_folds=N_FOLDS, random_state=0,
                 max_iter=MAX_ITER, gram=None):
    """Teacher, distillation and CV thresholds for one client.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Matcher features of every training image.
    y : ndarray of shape (n,)
        +1 for the client's images, -1 for everyone else's.
    similarity : Similarity
        The matcher's similarity on X.
    groups : ndarray of shape (n,), optional
        Subject of each image; impostors are held out by subject (default: by image).
    m : int or "auto"
    lam, solver, init, bounds, rho : learner options
    target_far : float
    n_folds : int
        Folds for the threshold (fewer when there are fewer genuine images).
    max_iter : int
        The learner's ``max_iter`` (varpro: L-BFGS-B iterations; paper: sweeps).
    gram : ndarray of shape (n, n), optional
        S(X, X), computed once for all clients by :func:`compress`.

    Returns
    -------
    ClientFit
    """
    svm, dist = _fit_pair(X, y, similarity, bounds, m, lam, solver, init, "cv", rho,
                          random_state, max_iter, gram)
    m_fit = len(dist.beta_)
    folds = threshold_folds(y, groups, n_folds, random_state)
    k = int(folds.max()) + 1 if folds is not None else 0
    if folds is not None:
        imp_g, imp_s, gen_g, gen_s = [], [], [], []
        for j in range(k):
            tr, te = folds != j, folds == j
            f_svm, f_dist = _fit_pair(X[tr], y[tr], similarity, bounds, m_fit, lam, solver,
                                      init, svm.C_, rho, random_state, max_iter)
            neg, pos = te & (y < 0), te & (y > 0)
            imp_g.append(f_dist.decision_function(X[neg]))
            imp_s.append(f_svm.decision_function(X[neg]))
            gen_g.append(f_dist.decision_function(X[pos]))
            gen_s.append(f_svm.decision_function(X[pos]))
        imp_g, imp_s = np.concatenate(imp_g), np.concatenate(imp_s)
        gen_g, gen_s = np.concatenate(gen_g), np.concatenate(gen_s)
        imp_subject = np.concatenate([np.asarray(groups)[(folds == j) & (y < 0)]
                                      for j in range(k)]) if groups is not None else None
    else:  # too few images or impostor subjects to hold out: training scores
        neg = y < 0
        imp_subject = np.asarray(groups)[neg] if groups is not None else None
        imp_g, imp_s = dist.decision_function(X[neg]), svm.decision_function(X[neg])
        gen_g, gen_s = dist.decision_function(X[~neg]), svm.decision_function(X[~neg])
    t, t_svm = threshold_at_far(imp_g, target_far), threshold_at_far(imp_s, target_far)
    cv = {"threshold_folds": k,
          "cv_far": float(np.mean(imp_g >= t)), "cv_frr": float(np.mean(gen_g < t)),
          "svm_cv_far": float(np.mean(imp_s >= t_svm)),
          "svm_cv_frr": float(np.mean(gen_s < t_svm))}
    return ClientFit(svm=svm, distiller=dist, threshold=t, svm_threshold=t_svm, cv=cv,
                     normalization=znorm_parameters(imp_g),
                     heldout={"impostor": imp_g, "genuine": gen_g,
                              "impostor_subject": imp_subject})


@dataclass
class CompressSummary:
    """What :func:`compress` did (also what ``ssgallery compress --json`` prints)."""

    gallery: str
    store: str
    matcher: str
    dimension: int
    target_far: float
    clients: list  # one dict per client: id, m, threshold, svm_n_support, ...
    basis_stale: bool = False

    def to_dict(self):
        return dict(self.__dict__)


INITS = ("auto", "class", "genuine", "kmeans", "random")


def _rendered(matcher, prototypes):
    """Prototypes drawn as uint8 images (m, H, W) for ``show``; None for a matcher whose
    space cannot be drawn (deep descriptors)."""
    try:
        return np.clip(np.round(matcher.render(prototypes)), 0, 255).astype(np.uint8)
    except NotRenderableError:
        return None


def _check_options(m, rho, target_far, lam, solver, init, max_iter=MAX_ITER):
    if m != "auto" and (isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1):
        raise InputError(f"--m must be a positive integer or 'auto', got {m!r}")
    if not 0.0 <= float(target_far) < 1.0:
        raise InputError(f"--target-far must be in [0, 1), got {target_far}")
    if float(lam) < 0:
        raise InputError(f"--lam must be >= 0, got {lam}")
    if rho is not None and float(rho) < 0:
        raise InputError(f"--rho must be >= 0, got {rho}")
    if solver not in ("varpro", "paper"):
        raise InputError(f"--solver must be 'varpro' or 'paper', got {solver!r}")
    if init not in INITS:
        raise InputError(f"--init must be one of {', '.join(INITS)}, got {init!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InputError(f"--max-iter must be a positive integer, got {max_iter!r}")


@single_threaded_blas()
def compress(store_path="enrollment.h5", gallery_path="gallery.h5", *, m=2, rho=0.01,
             target_far=0.01, lam=DEFAULT_LAM, solver="varpro", init="auto", clients=None,
             cv_folds=N_FOLDS, random_state=0, progress=None, max_iter=MAX_ITER, force=False,
             key_file=None, matcher_cmd=None):
    """Compress every enrolled client of a store into a gallery.

    Parameters
    ----------
    store_path, gallery_path : str or Path
    m : int or "auto"
        Prototypes per client; "auto" = Eq. 8 (eq:xval-m) with penalty ``rho`` per prototype.
    rho : float
    target_far : float
        False acceptance rate the per-client thresholds aim at (CV estimate).
    lam : float
        Ridge penalty on beta (Eq. 2 (eq:objective)).
    solver : {"varpro", "paper"}
    init : {"auto", "class", "genuine", "kmeans", "random"}
        Starting prototypes; "auto" (default) = :func:`resolve_init`.
    clients : list of str or comma-separated str, optional
        Compress only these enrolled clients (all images still serve as impostors).
    cv_folds : int
        Folds of the threshold CV; 0 or 1 sets thresholds on training scores instead
        (optimistic, but 1 + cv_folds times cheaper: for slow external matchers).
    random_state : int
    progress : callable(client_id, done, total), optional
        Called with ``(None, 0, total)`` before the first client, then after each client.
    max_iter : int
        The learner's iteration cap (varpro: L-BFGS-B iterations; paper: sweeps over
        the m prototypes), default 200. A few (e.g. 4) keep the number of program runs
        of a black-box matcher small.
    force : bool
        Replace a file at ``gallery_path`` that is not an ssgallery file. A store, a
        folder or a special file there is always refused, before any training.
    key_file : str, optional
        The host's signing key (default ``$SSGALLERY_KEY_FILE``; none: unsigned gallery).
    matcher_cmd : str or list, optional
        The host's external matcher program (default ``$SSGALLERY_MATCHER_CMD`` or the
        configuration file, :mod:`ssgallery.matchers.host`); its contract must be the
        store's.

    Returns
    -------
    CompressSummary
    """
    from ssgallery.formats.atomic import check_writable
    from ssgallery.formats.gallery import FORMAT, write_gallery
    from ssgallery.formats.integrity import load_key
    from ssgallery.formats.store import load_store
    from ssgallery.matchers.host import host_matcher

    _check_options(m, rho, target_far, lam, solver, init, max_iter)
    key = load_key(key_file)
    store = load_store(store_path)
    check_writable(gallery_path, FORMAT, force)  # fail now, not after training every client
    if isinstance(clients, str):
        clients = [c.strip() for c in clients.split(",") if c.strip()]
    todo = list(store.clients) if clients is None else list(clients)
    unknown = [c for c in todo if c not in store.clients]
    if unknown:
        shown = ", ".join(store.clients[:8]) + (", ..." if len(store.clients) > 8 else "")
        raise SsgalleryError(f"not an enrolled client: {', '.join(unknown[:5])} "
                             f"(enrolled: {shown})", path=store_path)
    if not todo:
        raise InputError("the store has no enrolled client to compress", path=store_path)
    matcher = store.matcher(host=host_matcher(matcher_cmd))
    similarity = matcher.similarity()
    init = resolve_init(init, similarity)
    bounds = matcher.bounds()
    X = store.matcher_features(matcher)  # cached at enroll
    gram = similarity(X, X)  # one S(X, X) serves every client's one-vs-all SVM
    models, rows = [], []
    from ssgallery.formats.gallery import ClientModel

    if progress is not None:
        progress(None, 0, len(todo))
    for i, client in enumerate(todo):
        y = np.where(store.labels == client, 1, -1)
        if not np.any(y < 0):
            raise InputError(f"client '{client}' has no impostor images: enrol at least two "
                             "clients or add background subjects", path=store_path)
        fit = train_client(X, y, similarity, groups=store.labels, m=m, lam=lam, solver=solver, init=init,
                           bounds=bounds, rho=rho, target_far=target_far,
                           n_folds=cv_folds, random_state=random_state, max_iter=max_iter,
                           gram=gram)
        d, svm = fit.distiller, fit.svm
        reg = d.regressor_
        prov = {"m": len(d.beta_), "d": int(X.shape[1]), "lambda": float(lam),
                "solver": solver, "init": init, "max_iter": int(max_iter), "omega": float(reg.objective_),
                "n_similarity_evals": int(reg.n_similarity_evals_), "n_iter": int(reg.n_iter_),
                "svm_n_support": int(svm.n_support_total_), "svm_C": float(svm.C_),
                "svm_intercept": float(svm.intercept_), "svm_threshold": fit.svm_threshold,
                "target_far": float(target_far), "n_genuine": int(np.sum(y > 0)),
                "n_impostor": int(np.sum(y < 0)), "m_selection": "auto" if m == "auto"
                else "fixed", "rho": float(rho) if m == "auto" else None,
                "threshold_method": f"{fit.cv['threshold_folds']}-fold CV, impostors held out "
                "by subject" if fit.cv["threshold_folds"] else "training scores", **fit.cv}
        images = _rendered(matcher, d.prototypes_)
        models.append(ClientModel(client_id=client, prototypes=d.prototypes_, beta=d.beta_,
                                  intercept=d.intercept_, threshold=fit.threshold,
                                  similarity=similarity.params(), provenance=prov,
                                  prototype_images=images, normalization=fit.normalization))
        rows.append({"client": client, "m": prov["m"], "threshold": fit.threshold,
                     "beta": [float(b) for b in d.beta_], "intercept": float(d.intercept_),
                     "svm_n_support": prov["svm_n_support"], "svm_threshold": fit.svm_threshold,
                     "cv_far": fit.cv["cv_far"], "cv_frr": fit.cv["cv_frr"],
                     "svm_cv_frr": fit.cv["svm_cv_frr"], "omega": prov["omega"],
                     "normalization": fit.normalization})
        if progress is not None:
            progress(client, i + 1, len(todo))
    write_gallery(gallery_path, matcher_name=store.matcher_name,
                  matcher_config=store.matcher_config, matcher_state=store.matcher_state,
                  image_shape=store.image_shape, clients=models, key=key,
                  attrs={"target_far": float(target_far), "store": os.path.abspath(store_path),
                         "store_fingerprint": store.fingerprint,
                         "basis_stale": bool(store.basis_stale)}, force=force)
    return CompressSummary(gallery=os.fspath(gallery_path), store=os.fspath(store_path),
                           matcher=store.matcher_name, dimension=int(X.shape[1]),
                           target_far=float(target_far), clients=rows,
                           basis_stale=bool(store.basis_stale))
