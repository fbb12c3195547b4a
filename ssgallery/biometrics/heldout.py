"""Held-out impostor scores: the folds of the threshold CV (`threshold_folds`, which
``compress`` uses for its thresholds and its 1:N operating point), the Z-norm parameters
of a client's held-out impostor scores (`znorm_parameters`, what a gallery stores per
client) and, for the protocol, each method's Z-norm parameters from its training
impostors held out the same way (`heldout_normalisation`), so that ``roc`` ranks the
scores of different clients as a deployed gallery does.
"""

import numpy as np

__all__ = ["heldout_normalisation", "threshold_folds", "znorm_parameters"]


def threshold_folds(y, groups, n_folds=5, random_state=0, subject_order=None):
    """Fold index per sample for the threshold CV, or None when it cannot be done.

    Impostors are split by subject (``groups``): a held-out impostor is someone the
    fold's model never saw, as at verification time. Genuine images are spread over
    the folds one by one. Shape (n,), values 0..k-1 with k = min(n_folds, #genuine,
    #impostor subjects) >= 2.

    ``subject_order`` (every subject of the store, in one seeded order shared by all
    clients): an impostor subject's fold is its place in that order modulo k, so that
    clients share their folds' held-out subjects (and the matcher refitted without
    them, ``ssgallery.app.fold_spaces``); when that leaves a fold without
    impostors, the client's impostor subjects are dealt out in that order instead.
    """
    y = np.asarray(y)
    groups = np.asarray(groups if groups is not None else np.arange(len(y))).astype(str)
    pos = np.flatnonzero(y > 0)
    subjects = np.unique(groups[y < 0])
    k = min(n_folds, len(pos), len(subjects))
    if k < 2:
        return None
    rng = np.random.default_rng(random_state)
    if subject_order is None:
        fold_of = {s: j % k for j, s in enumerate(rng.permutation(subjects))}
    else:
        mine = set(subjects.tolist())
        order = [str(s) for s in subject_order if str(s) in mine]
        place = {str(s): i for i, s in enumerate(subject_order)}
        fold_of = {s: place[s] % k for s in order}
        if len(set(fold_of.values())) < k:
            fold_of = {s: j % k for j, s in enumerate(order)}
    folds = np.empty(len(y), dtype=int)
    for subject, j in fold_of.items():
        folds[(groups == subject) & (y < 0)] = j
    folds[rng.permutation(pos)] = np.arange(len(pos)) % k
    return folds


def floored_std(scores):
    """Sample standard deviation (ddof 1) of ``scores``, floored at 1e-12; 0 scores or 1
    give the floor, so a degenerate client cannot divide by 0."""
    s = np.asarray(scores, dtype=float)
    return float(max(s.std(ddof=1) if s.size > 1 else 0.0, 1e-12))


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
            "std": floored_std(s),
            "n": int(s.size)}


def heldout_normalisation(X, y, groups, fit_fold, n_folds=5, random_state=0):
    """Z-norm parameters of one client's models from its held-out training impostors.

    As ``compress`` does: impostors held out by subject (`threshold_folds`), the models
    refitted on the other folds score them, and each model's mean and standard
    deviation of those scores normalise its scores ``(g(x) - mean) / std``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
        +1 the client's training images, -1 the other clients'.
    groups : ndarray, shape (n,)
        Subject of each row.
    fit_fold : callable (train mask (n,) of bool) -> list of models
        The client's models (one per method) refitted on the rows of the mask.
    n_folds, random_state
        See `threshold_folds`.

    Returns
    -------
    list of dict or None
        Per model `znorm_parameters` of its held-out scores (a gallery client's
        normalisation); None when the folds cannot be made (fewer than 2 genuine rows or
        impostor subjects).
    """
    folds = threshold_folds(y, groups, n_folds, random_state)
    if folds is None:
        return None
    held = None
    for j in range(int(folds.max()) + 1):
        models = fit_fold(folds != j)
        rows = (folds == j) & (y < 0)
        scores = [np.asarray(m.decision_function(X[rows]), dtype=float) for m in models]
        held = scores if held is None else [np.r_[a, b] for a, b in zip(held, scores)]
    return [znorm_parameters(s) for s in held]
