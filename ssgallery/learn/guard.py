"""A guard for distilled models: a super-sparse model much worse than its teacher on
held-out data is detected and repaired (issue 21; docs/method.md, "Robust training").

The distillation objective, Eq. 2 (eq:objective), is measured on the training points,
where a prototype that starts on a training image matches it with its self-similarity:
a low training Omega then says little about new images (benchmarks/ebgm_tail.py). The
guard compares the student with its teacher on images neither was fitted on, by the
share of misranked (genuine, impostor) pairs, and when the student is more than
``max_gap`` worse it refits from other starts (and, if allowed, with one prototype
more), keeping the fit of least held-out gap. What it did is in ``guard_``.
"""

import numpy as np


def misranking(genuine, impostor):
    """Share of (genuine, impostor) score pairs ranked the wrong way: 1 - ROC AUC.

    Ties count one half. Pure function of two 1-D arrays; NaN when either is empty.
    """
    g = np.sort(np.asarray(genuine, dtype=float))
    i = np.sort(np.asarray(impostor, dtype=float))
    if not g.size or not i.size:
        return float("nan")
    above = i.size - np.searchsorted(i, g, side="right")  # impostors scoring above g
    ties = np.searchsorted(i, g, side="right") - np.searchsorted(i, g, side="left")
    return float((above + 0.5 * ties).sum() / (g.size * i.size))


def heldout_gap(teacher_scores, student_scores, positive):
    """Student's minus teacher's `misranking` on the same held-out samples.

    Parameters
    ----------
    teacher_scores, student_scores : ndarray of shape (n,)
    positive : ndarray of shape (n,), bool
        Genuine samples.

    Returns
    -------
    float
        > 0 when the student ranks worse than its teacher (0.05: 5 % more of the
        genuine-impostor pairs misranked).
    """
    positive = np.asarray(positive, dtype=bool)
    t = np.asarray(teacher_scores, dtype=float)
    s = np.asarray(student_scores, dtype=float)
    return misranking(s[positive], s[~positive]) - misranking(t[positive], t[~positive])


def relative_mae_gap(teacher_pred, student_pred, y):
    """Student's held-out mean absolute error relative to the teacher's, minus 1
    (0.1: 10 % more MAE than the teacher); the regression twin of `heldout_gap`."""
    y = np.asarray(y, dtype=float)
    teacher = np.mean(np.abs(np.asarray(teacher_pred, dtype=float) - y))
    student = np.mean(np.abs(np.asarray(student_pred, dtype=float) - y))
    return float(student / teacher - 1.0) if teacher > 0 else float(student > 0)


def _gap(est, X_val, y_val, positive):
    """`heldout_gap` for a classifier distiller, `relative_mae_gap` for a regressor."""
    if hasattr(est, "decision_function"):
        return heldout_gap(est.teacher_.decision_function(X_val),
                           est.decision_function(X_val), positive)
    teacher = est.teacher_
    return relative_mae_gap(y_val if teacher is None else teacher.predict(X_val),
                            est.predict(X_val), y_val)


def _repairs(distiller, grow):
    """The refits tried after a failed check: other starts of real images (the
    class-aware ones for a classifier, target quantiles for regression), then m + 1."""
    m = distiller.n_prototypes
    tried = {distiller.init}
    out = []
    inits = ("class", "genuine") if hasattr(distiller, "decision_function") else ("quantile",)
    for init in inits:
        if init not in tried:
            out.append((f"init={init}", {"init": init}))
            tried.add(init)
    out.append(("3 random starts", {"init": inits[0], "n_init": 4}))
    if grow:
        out.append((f"m={m + 1}", {"n_prototypes": m + 1}))
    return out


def guarded_fit(distiller, X, y, X_val, y_val, max_gap=0.05, grow=False):
    """Fit ``distiller`` on (X, y), check it against its teacher on (X_val, y_val), and
    repair it when it is more than ``max_gap`` worse.

    Parameters
    ----------
    distiller : SuperSparseDistiller or SuperSparseRegressionDistiller
        Unfitted (it is cloned for every attempt; a prefit teacher is kept).
    X, y : training samples (n, d) and labels or targets (n,)
    X_val, y_val : held-out samples (k, d) and labels (both classes present) or targets
    max_gap : float, default=0.05
        Largest gap accepted: `heldout_gap` for a classifier distiller,
        `relative_mae_gap` for a regression distiller (e.g. 0.1 for 10 % more MAE).
    grow : bool, default=False
        Allow one prototype more as the last repair (``--m auto``).

    Returns
    -------
    SuperSparseDistiller
        The fit of least held-out gap, with ``guard_`` = {"gap": its gap, "max_gap",
        "ok": gap <= max_gap, "repaired": True when it is not the first fit,
        "attempts": [(label, gap), ...] in the order tried}.
    """
    from sklearn.base import clone

    positive = np.asarray(y_val) == np.max(y)  # the larger label is the genuine class

    def attempt(overrides):
        est = clone(distiller).set_params(**overrides)
        if distiller.prefit:  # clone() drops the fitted teacher: keep the object
            est.set_params(teacher=distiller.teacher)
        est.fit(X, y)
        return est, _gap(est, X_val, y_val, positive)

    best, gap = attempt({})
    attempts = [("first fit", gap)]
    best_gap = gap
    if gap > max_gap:
        for label, overrides in _repairs(distiller, grow):
            est, gap = attempt(overrides)
            attempts.append((label, gap))
            if gap < best_gap:
                best, best_gap = est, gap
            if gap <= max_gap:
                break
    best.guard_ = {"gap": float(best_gap), "max_gap": float(max_gap),
                   "ok": bool(best_gap <= max_gap), "repaired": best_gap < attempts[0][1],
                   "attempts": [(label, float(g)) for label, g in attempts]}
    return best
