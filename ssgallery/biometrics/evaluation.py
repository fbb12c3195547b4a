"""From claims' scores to the paper's figures of merit.

:func:`evaluate` groups :class:`~ssgallery.biometrics.scores.Scores` tables by method, sweeps
each client's own threshold (one ROC per client and repetition), averages the client
curves vertically (mean FRR at each FAR), and reports per method: EER (mean ± std
over repetitions, each repetition's EER taken exactly on its client-averaged curve),
the mean of the clients' own EERs (a second, more lenient convention: averaging
curves penalises a client whose one bad genuine image costs 1/k of FRR over a wide
FAR range), FRR at FAR = 1 % and 0.1 % on the curve averaged over all clients and
repetitions (each client at its own operating point of :func:`metrics.frr_at_far`),
matches per claim and training time per client (SVM teacher included).
"""

import numpy as np

from ssgallery.biometrics import metrics
from ssgallery.errors import InputError

GRID_LOWEST = 1e-4
GRID_POINTS = 401


def default_grid():
    """FAR grid of the averaged curves: 0, then 401 log-spaced values in [1e-4, 1]."""
    return metrics.far_grid(GRID_LOWEST, GRID_POINTS)


def client_curves(table):
    """Per claimed client: (client, far, frr) of its own threshold sweep.

    Clients without a genuine or without an impostor claim are left out.
    """
    out = []
    genuine = table.claimed == table.real
    for c in np.unique(table.claimed):
        mine = table.claimed == c
        pos, neg = table.score[mine & genuine], table.score[mine & ~genuine]
        if pos.size and neg.size:
            far, frr, _ = metrics.roc_curve(neg, pos)
            out.append((str(c), far, frr))
    return out


def _group(tables):
    groups = {}
    for t in tables:
        groups.setdefault((t.method, t.m), []).append(t)
    return groups


def _mean_std(values):
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return None, None
    return float(v.mean()), float(v.std())


def evaluate(tables, grid=None):
    """Figures of merit per method.

    Parameters
    ----------
    tables : list of Scores
    grid : ndarray or None
        FAR grid, default :func:`default_grid`.

    Returns
    -------
    list of dict
        One per (method, m), in order of first appearance, with keys ``method``, ``m``,
        ``label``, ``repetitions``, ``clients`` (client-curves averaged), ``eer``,
        ``eer_std``, ``eer_per_repetition`` (EER of the client-averaged curve),
        ``client_eer``, ``client_eer_std`` (mean of the clients' own EERs, mean and
        std over repetitions), ``frr_at_far_1pct``, ``frr_at_far_01pct``,
        ``matches_mean``, ``matches_std``, ``fit_seconds_mean``, ``n_genuine``,
        ``n_impostor``, ``fta_genuine`` and ``fta_impostor`` (failure-to-acquire rates:
        such claims count as rejected, see :mod:`~ssgallery.biometrics.metrics`),
        ``far_grid`` and ``frr`` (the averaged curve, arrays), and
        ``threshold_far`` / ``threshold_frr`` (mean FAR/FRR at stored per-client
        thresholds, gallery mode only, else None).
    """
    grid = default_grid() if grid is None else np.asarray(grid, dtype=float)
    out = []
    for (method, m), group in _group(tables).items():
        rep_eers, rep_client_eers, all_curves, matches, seconds, at_t = [], [], [], [], [], []
        n_gen = n_imp = fta_gen = fta_imp = 0
        for t in sorted(group, key=lambda t: t.repetition):
            curves = client_curves(t)
            if not curves:
                continue
            rep_eers.append(metrics.average_eer([(a, b) for _, a, b in curves]))
            rep_client_eers.append(np.mean([metrics.curve_eer(a, b) for _, a, b in curves]))
            all_curves.extend((a, b) for _, a, b in curves)
            genuine = t.claimed == t.real
            n_gen += int(genuine.sum())
            n_imp += int((~genuine).sum())
            fta_gen += int(np.isnan(t.score[genuine]).sum())
            fta_imp += int(np.isnan(t.score[~genuine]).sum())
            for c, info in t.clients.items():
                matches.append(info.get("matches"))
                seconds.append(info.get("fit_seconds"))
                if info.get("threshold") is not None:
                    mine = t.claimed == c
                    pos, neg = t.score[mine & genuine], t.score[mine & ~genuine]
                    if pos.size and neg.size:
                        at_t.append(metrics.farfrr(neg, pos, float(info["threshold"])))
        if not all_curves:
            raise InputError(f"method '{group[0].label}': no client has both genuine and "
                             f"impostor claims; nothing to evaluate")
        _, frr = metrics.average_curves(all_curves, grid)
        eer_mean, eer_std = _mean_std(rep_eers)
        ceer_mean, ceer_std = _mean_std(rep_client_eers)
        m_mean, m_std = _mean_std(matches)
        s_mean, _ = _mean_std(seconds)
        out.append({
            "method": method, "m": m, "label": group[0].label,
            "repetitions": len(rep_eers), "clients": len(all_curves),
            "eer": eer_mean, "eer_std": eer_std, "eer_per_repetition": rep_eers,
            "client_eer": ceer_mean, "client_eer_std": ceer_std,
            "frr_at_far_1pct": metrics.grid_frr_at(grid, frr, 0.01),
            "frr_at_far_01pct": metrics.grid_frr_at(grid, frr, 0.001),
            "matches_mean": m_mean, "matches_std": m_std, "fit_seconds_mean": s_mean,
            "n_genuine": n_gen, "n_impostor": n_imp,
            "fta_genuine": fta_gen / n_gen if n_gen else None,
            "fta_impostor": fta_imp / n_imp if n_imp else None,
            "threshold_far": float(np.mean([a for a, _ in at_t])) if at_t else None,
            "threshold_frr": float(np.mean([b for _, b in at_t])) if at_t else None,
            "far_grid": grid, "frr": frr,
        })
    return out


__all__ = ["client_curves", "default_grid", "evaluate"]
