"""Training one client of ``compress``: the per-client job every backend runs
(`train_job`: this process, local workers or a Dask cluster), what it carries
(`ClientJob`, and the run's `SharedBlocks` sent once) and what it returns (a
`ssgallery.app.client_result.ClientResult`: the model, its provenance, its summary row).

The fitting itself (teacher, distillation, held-out thresholds: `train_client`) is in
`ssgallery.app.client_fit`; its names are importable from here too.
"""

import time
from dataclasses import dataclass

import numpy as np

from ssgallery.app.client_fit import (  # noqa: F401  (public here too)
    AUTO_M_GRID,
    GUARD_GAP,
    ClientFit,
    teacher_agreement,
    threshold_at_far,
    train_client,
)
from ssgallery.app.client_result import ClientResult
from ssgallery.app.options import MAX_ITER, N_FOLDS, CompressOptions  # noqa: F401
from ssgallery.biometrics.heldout import (  # noqa: F401  (public here)
    threshold_folds,
    znorm_parameters,
)
from ssgallery.learn.threads import single_threaded_blas


@dataclass
class ClientJob:
    """Everything one client's training needs, bounded by the impostor cap.

    Attributes
    ----------
    client : str
    X : ndarray of shape (k, d) or None
        Features of the client's training rows (own images + at most K impostors);
        None when the client trains on every stored row and the run's `SharedBlocks`
        hold them.
    y : ndarray of shape (k,)
        +1 own images, -1 impostors.
    groups : ndarray of shape (k,)
        Subject of each row (impostors are held out by subject).
    similarity, bounds :
        The matcher's similarity and box on its space.
    options : CompressOptions
        The run's training options (`ssgallery.app.options.CompressOptions`).
    gram : ndarray of shape (k, k), optional
        S(X, X).
    capped : bool
        True when the impostor cap left impostor images out.
    folds, fold_spaces : optional
        The threshold CV's folds and refitted matcher spaces (`train_client`; with
        `SharedBlocks`, the spaces come from their ``fold_spaces``).
    """

    client: str
    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    similarity: object
    bounds: object
    options: CompressOptions
    gram: np.ndarray = None
    capped: bool = False
    folds: np.ndarray = None
    fold_spaces: list = None
    rows: np.ndarray = None


def client_provenance(job, fit):
    """The provenance dict stored with a client's model: how it was trained."""
    o = fit.options if fit.options is not None else job.options  # as trained (swaps)
    d, svm, reg = fit.distiller, fit.svm, fit.distiller.regressor_
    k = fit.cv["threshold_folds"]
    return {**o.provenance(), "m": len(d.beta_), "d": int(d.prototypes_.shape[1]),
            "lam_scale": reg.lam_scale, "lambda_abs": float(reg.lam_),
            "n_init": int(reg.n_init),
            "omega": float(reg.objective_), "n_similarity_evals": int(reg.n_similarity_evals_),
            "n_iter": int(reg.n_iter_), "svm_n_support": int(svm.n_support_total_),
            "svm_C": float(svm.C_), "svm_intercept": float(svm.intercept_),
            "svm_n_free": int(svm.n_free_), "svm_C_passed": [float(c) for c in svm.C_passed_],
            "svm_threshold": fit.svm_threshold,
            "n_genuine": int(np.sum(job.y > 0)), "n_impostor": int(np.sum(job.y < 0)),
            "impostors_capped": bool(job.capped), "seed": int(o.seed),
            "threshold_method": f"{k}-fold CV, impostors held out by subject" if k
            else "training scores", **fit.cv}


def summary_row(client, result_prov, threshold, beta, intercept, normalization=None):
    """One client's line of the compress summary; ``frr`` from the provenance's
    ``frr_heldout`` (`ssgallery.app.thresholds.apply`) when it has one."""
    p = result_prov
    counts = p.get("frr_heldout")
    return {"client": client, "m": p["m"], "threshold": float(threshold),
            "normalization": normalization,
            "beta": [float(b) for b in beta], "intercept": float(intercept),
            "svm_n_support": p["svm_n_support"], "svm_threshold": p["svm_threshold"],
            "cv_far": p["cv_far"], "cv_frr": p["cv_frr"], "svm_cv_frr": p["svm_cv_frr"],
            "teacher_gap": p.get("teacher_gap"),  # None in galleries made before it
            "omega": p["omega"], "n_impostor": p["n_impostor"],
            "frr": counts[0] / counts[1] if counts else None}


def _heldout(job, fit):
    """What a result carries of the held-out scores: ``impostor``, ``genuine`` and, when
    the job knows its store rows, ``impostor_row`` (the store row of each impostor
    score: the probes of the held-out searches, `ssgallery.app.open_set`)."""
    out = {"impostor": np.asarray(fit.heldout["impostor"], dtype=float),
           "genuine": np.asarray(fit.heldout["genuine"], dtype=float)}
    if job.rows is not None:
        out["impostor_row"] = np.asarray(job.rows)[fit.heldout["impostor_index"]]
    return out


@dataclass
class SharedBlocks:
    """What every client of an uncapped run trains on (each on every stored row), sent
    once to each worker (`ssgallery.app.parallel.run_jobs`), not with every job.

    Attributes
    ----------
    X : ndarray of shape (n, d)
        Features of every stored row.
    gram : ndarray of shape (n, n)
        S(X, X).
    fold_spaces : FoldSpaces, optional
        The matcher refitted per threshold-CV fold (`ssgallery.app.fold_spaces`), the
        folds several clients share already done.
    """

    X: np.ndarray
    gram: np.ndarray
    fold_spaces: object = None


def job_blocks(job, shared):
    """What a job trains on: its own blocks, or the run's when it carries none.

    Parameters
    ----------
    job : ClientJob
        One client's job.
    shared : SharedBlocks or None
        The blocks every job of the run shares (`SharedBlocks`).

    Returns
    -------
    X : ndarray or None
        The training features.
    gram : ndarray or None
        Their Gram matrix.
    fold_spaces : object or None
        The threshold CV's per-fold matcher spaces, for this client's folds.
    """
    if job.X is not None or shared is None:
        return job.X, job.gram, job.fold_spaces
    spaces = job.fold_spaces
    if shared.fold_spaces is not None and job.folds is not None:
        spaces = shared.fold_spaces.for_client(job.y, job.groups, job.folds)
    return shared.X, shared.gram, spaces


def train_job(job, shared=None):
    """Train one client (any process): `train_client` -> `ClientResult`; ``shared``: the
    run's `SharedBlocks`, if any."""
    start, cpu = time.perf_counter(), time.process_time()
    with single_threaded_blas():
        X, gram, spaces = job_blocks(job, shared)
        fit = train_client(X, job.y, job.similarity, job.options, groups=job.groups,
                           bounds=job.bounds, gram=gram, folds=job.folds,
                           fold_spaces=spaces)
    d = fit.distiller
    prov = client_provenance(job, fit)
    return ClientResult(client=job.client, prototypes=np.asarray(d.prototypes_, dtype=float),
                        beta=np.asarray(d.beta_, dtype=float), intercept=float(d.intercept_),
                        threshold=float(fit.threshold), provenance=prov,
                        normalization=fit.normalization,
                        heldout=_heldout(job, fit),
                        row=summary_row(job.client, prov, fit.threshold, d.beta_, d.intercept_,
                                        fit.normalization),
                        seconds=time.perf_counter() - start,
                        cpu_seconds=time.process_time() - cpu)
