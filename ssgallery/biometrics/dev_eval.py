"""Development and evaluation score files (``roc --dev-scores --eval-scores``, like
``bob bio metrics -e``): one global threshold per method chosen on the development
scores by a criterion (`choose_threshold`), its error rates on the evaluation scores
(`rates_at`), the files of each side paired by method (`pair_dev_eval`, `PAIRING_RULE`).
`dev_eval` does the whole. Failures to acquire (NaN scores) count as rejected attempts,
as in `ssgallery.biometrics.evaluation`.
"""

import numpy as np

from ssgallery.biometrics import metrics
from ssgallery.errors import InputError

CRITERIA = ("eer", "min-hter", "far")


def _pooled(tables):
    """Impostor and genuine scores of tables pooled (NaN = failure to acquire)."""
    neg = np.concatenate([t.score[t.claimed != t.real] for t in tables])
    pos = np.concatenate([t.score[t.claimed == t.real] for t in tables])
    return neg, pos


def choose_threshold(neg, pos, criterion="eer", far=None):
    """One global threshold on development scores.

    Parameters
    ----------
    neg, pos : ndarray
        Impostor and genuine scores (NaN ignored: failures to acquire have no score).
    criterion : {"eer", "min-hter", "far"}
        ``eer``: where |FAR - FRR| is smallest; ``min-hter``: the smallest (FAR + FRR) / 2;
        ``far``: the smallest threshold with FAR <= ``far``.
    """
    neg, pos = neg[np.isfinite(neg)], pos[np.isfinite(pos)]
    if criterion == "eer":
        return metrics.eer_threshold(neg, pos)
    if criterion == "min-hter":
        f, r, t = metrics.roc_curve(neg, pos)
        return float(t[int(np.argmin(f + r))])
    if criterion == "far":
        if far is None:
            raise InputError("the 'far' criterion needs a target FAR")
        return metrics.threshold_at_far(neg, far)
    raise InputError(f"unknown criterion {criterion!r}; choose from {', '.join(CRITERIA)}")


def rates_at(neg, pos, threshold):
    """FAR, FRR, HTER at a threshold with failures to acquire (NaN) counted as rejected
    attempts, and the FTA rates (bob.measure's convention), as a dict; ``n_impostor``
    and ``n_genuine`` count claims (scores), not images or people."""
    acc = np.sum(neg[np.isfinite(neg)] >= threshold)
    rej = np.sum(pos[np.isfinite(pos)] < threshold) + np.sum(~np.isfinite(pos))
    far, frr = float(acc / neg.size), float(rej / pos.size)
    return {"far": far, "frr": frr, "hter": 0.5 * (far + frr),
            "fta_impostor": float(np.mean(~np.isfinite(neg))),
            "fta_genuine": float(np.mean(~np.isfinite(pos))),
            "n_impostor": int(neg.size), "n_genuine": int(pos.size),
            "far_resolution": 1.0 / neg.size}


PAIRING_RULE = ("one development and one evaluation score file are paired with each other "
                "whatever their names; several are paired by method label (the side-car's "
                "method and m, else the file name without .rN and the extension)")


def pair_dev_eval(dev_tables, eval_tables):
    """Development and evaluation tables of each method, paired by `PAIRING_RULE`.

    Returns
    -------
    list of (label, dev tables, eval tables)
        In the order of the development tables; the label of a pair of single files with
        different labels names both (``"scores-dev / scores-eval"``).

    Raises
    ------
    InputError
        With several files, a method label on one side only (the message states the rule).
    """
    if len(dev_tables) == 1 and len(eval_tables) == 1:
        d, e = dev_tables[0].label, eval_tables[0].label
        return [(d if d == e else f"{d} / {e}", dev_tables, eval_tables)]
    dev, ev = group_by_method(dev_tables), group_by_method(eval_tables)
    lonely = [f"'{dev[k][0].label}' has no evaluation scores" for k in dev if k not in ev]
    lonely += [f"'{ev[k][0].label}' has no development scores" for k in ev if k not in dev]
    if lonely:
        raise InputError(f"{'; '.join(lonely)}: {PAIRING_RULE}")
    return [(dev[k][0].label, dev[k], ev[k]) for k in dev]


def dev_eval(dev_tables, eval_tables, criterion="eer", far=None):
    """Threshold chosen on development scores, error rates on evaluation scores (like
    ``bob bio metrics -e``): one global threshold per method, the files of each side
    paired by `pair_dev_eval`.

    Returns
    -------
    list of dict
        Per pair: ``label``, ``method``, ``m`` (of the development side), ``criterion``,
        ``target_far``, ``threshold``, ``dev`` and ``eval`` (each `rates_at`).
    """
    out = []
    for label, dev, ev in pair_dev_eval(dev_tables, eval_tables):
        d_neg, d_pos = _pooled(dev)
        e_neg, e_pos = _pooled(ev)
        if not (np.isfinite(d_neg).any() and np.isfinite(d_pos).any()):
            raise InputError(f"method '{label}': the development scores need genuine and "
                             f"impostor claims")
        t = choose_threshold(d_neg, d_pos, criterion, far)
        out.append({"label": label, "method": dev[0].method, "m": dev[0].m,
                    "criterion": criterion, "target_far": far, "threshold": t,
                    "dev": rates_at(d_neg, d_pos, t), "eval": rates_at(e_neg, e_pos, t)})
    return out


def group_by_method(tables):
    """Score tables grouped by method (`ssgallery.biometrics.evaluation.evaluate` and
    `dev_eval` evaluate each group).

    Parameters
    ----------
    tables : iterable of Scores
        Score tables with ``method`` and ``m``.

    Returns
    -------
    dict
        ``{(method, m): [tables, in order]}``, in order of first appearance.
    """
    groups = {}
    for t in tables:
        groups.setdefault((t.method, t.m), []).append(t)
    return groups


__all__ = ["CRITERIA", "PAIRING_RULE", "choose_threshold", "dev_eval", "group_by_method", "pair_dev_eval",
           "rates_at"]
