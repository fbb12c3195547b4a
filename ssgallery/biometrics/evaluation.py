"""From claims' scores to figures of merit, each named by its convention.

`evaluate` groups `ssgallery.biometrics.scores.Scores` tables by method
and reports, per method, figures under three conventions (every key says which):

``*_client_mean``
    Each client's own threshold sweep (one ROC per client and repetition); the EER of
    each client, averaged over clients (then over repetitions). The headline: it is
    what client-specific thresholds deliver to a typical client.
``*_averaged_curve``
    The clients' curves averaged vertically (mean FRR at each FAR, the paper's
    Fig. 4: "by varying each client-specific threshold, and then by averaging over all
    clients and repetitions"); its EER is more severe than the mean client EER, since
    one bad genuine image of one client costs 1/k of FRR over a wide FAR range.
``*_global_threshold``
    One threshold for every client: all clients' scores of a repetition pooled into
    one ROC (what a system with a single global threshold delivers).

FRR at FAR = 1 % and 0.1 % are reported for the averaged curve and the global
threshold, but only where the data resolve that FAR (FAR >= 1 / #impostor claims of a
client, resp. of the pool); otherwise the value is None and ``notes`` says why.
Bootstrap 95 % intervals resample clients (seeded). Failures to acquire (NaN scores)
count as rejected attempts, as in bob.measure: FAR = accepted / all impostor attempts,
FRR = (rejected + FTA) / all genuine attempts; the FTA rates are reported separately.

Development and evaluation score files (`dev_eval`, importable from here too) are
`ssgallery.biometrics.dev_eval`.
"""

import hashlib

import numpy as np

from ssgallery.biometrics import metrics
from ssgallery.biometrics.client_gaps import REFERENCE, compare_with_reference
from ssgallery.biometrics.curve_sets import PooledClaims, Staircases
from ssgallery.biometrics.dev_eval import (  # noqa: F401  (public here too)
    CRITERIA,
    PAIRING_RULE,
    choose_threshold,
    dev_eval,
    group_by_method,
    pair_dev_eval,
    rates_at,
)
from ssgallery.errors import InputError
from ssgallery.progress import as_progress

GRID_LOWEST = 1e-4
GRID_POINTS = 401
OPERATING_POINTS = (("1pct", 0.01), ("01pct", 0.001))
N_BOOT = 200


def default_grid():
    """FAR grid of the averaged curves: 0, then 401 log-spaced values in [1e-4, 1]."""
    return metrics.far_grid(GRID_LOWEST, GRID_POINTS)


def fta_curve(neg, pos):
    """(far, frr) of one set of claims whose NaN scores are failures to acquire
    (`metrics.roc_curve` counts them as rejected attempts), or None when one side
    has no claim."""
    neg, pos = np.asarray(neg, dtype=float), np.asarray(pos, dtype=float)
    if neg.size == 0 or pos.size == 0:
        return None
    far, frr, _ = metrics.roc_curve(neg, pos)
    return far, frr


def claims_by_client(table):
    """Each claimed client's rows of ``table``, ``{client: indices}``, clients in sorted
    order, each client's claims in file order (one sort, not one pass per client)."""
    clients, code = np.unique(table.claimed, return_inverse=True)
    order = np.argsort(code, kind="stable")
    ends = np.cumsum(np.bincount(code, minlength=len(clients)))
    return {str(c): order[e - n:e] for c, e, n in
            zip(clients, ends, np.bincount(code, minlength=len(clients)))}


def client_curves(table, progress=None, by_client=None):
    """Per claimed client: (client, far, frr) of its own threshold sweep.

    Clients without a genuine or without an impostor claim are left out. ``progress``:
    one step per claimed client (of the caller's phase); ``by_client``: the table's
    `claims_by_client`, when already computed.
    """
    out = []
    progress = as_progress(progress)
    genuine = table.claimed == table.real
    by_client = claims_by_client(table) if by_client is None else by_client
    for c, rows in by_client.items():
        mine = genuine[rows]
        curve = fta_curve(table.score[rows[~mine]], table.score[rows[mine]])
        if curve is not None:
            out.append((c, *curve))
        progress.advance()
    return out


def client_sweeps(table, progress=None, by_client=None):
    """Per claimed client: (client, far, frr, EER) of its own threshold sweep
    (`client_curves` with each curve's EER), computed once for every figure that needs
    them (`evaluate_method`, `client_eers`). ``progress``, ``by_client``: see
    `client_curves`."""
    return [(c, far, frr, metrics.curve_eer(far, frr))
            for c, far, frr in client_curves(table, progress, by_client)]


def client_eers(tables, sweeps=None):
    """Each client's own EER per repetition, ``{(repetition, client, claims): EER}``,
    over the tables of one method (clients without a genuine or an impostor claim are
    left out, as in `client_curves`). ``claims`` is a digest of the client's claims
    (probe and true identity): two methods' client models are compared only on the same
    claims (score files of two runs may share a repetition number and a client).
    ``sweeps``: each table's `client_sweeps`, when already computed."""
    out = {}
    sweeps = [client_sweeps(t) for t in tables] if sweeps is None else sweeps
    for t, sweep in zip(tables, sweeps):
        rows = claims_by_client(t)
        for c, _, _, eer in sweep:
            claims = sorted(zip(t.probe[rows[c]].astype(str), t.real[rows[c]].astype(str)))
            digest = hashlib.sha256(repr(claims).encode()).hexdigest()[:16]
            out[(int(t.repetition), c, digest)] = eer
    return out


def _mean_std(values):
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return None, None
    return float(v.mean()), float(v.std())


def _frr_at(far, frr, target):
    """FRR at the operating point FAR <= target of one curve (step function)."""
    return float(metrics.frr_on_grid(far, frr, [target])[0])


def _repetition_figures(t, sweep):
    """The per-repetition figures: averaged-curve EER, mean client EER, and the global
    threshold's EER and FRR at the operating points (pooled ROC); ``sweep``: the
    table's `client_sweeps`."""
    genuine = t.claimed == t.real
    pooled = fta_curve(t.score[~genuine], t.score[genuine])
    out = {"eer_averaged_curve": metrics.average_eer([(a, b) for _, a, b, _ in sweep]),
           "eer_client_mean": float(np.mean([e for _, _, _, e in sweep])),
           "eer_global_threshold": metrics.curve_eer(*pooled)}
    for name, far in OPERATING_POINTS:
        out[f"frr_at_far_{name}_global_threshold"] = _frr_at(*pooled, far)
    return out


def _bootstrap(reps, n_boot, seed, progress=None):
    """95 % intervals over clients: resample the clients of each repetition (with
    replacement, seeded), recompute each convention's EER, average over repetitions.
    ``reps``: per repetition (curves, genuine/impostor score arrays per client);
    ``progress``: one step per draw (of the caller's phase)."""
    rng = np.random.default_rng(seed)
    progress = as_progress(progress)
    draws = {"eer_client_mean": [], "eer_averaged_curve": [], "eer_global_threshold": []}
    reps = [(Staircases(curves), client_eers, PooledClaims(negs, poss))
            for curves, client_eers, negs, poss in reps]
    for _ in range(n_boot):
        per = {k: [] for k in draws}
        for steps, client_eers, pooled in reps:
            idx = rng.integers(0, len(steps), len(steps))
            per["eer_client_mean"].append(np.mean(client_eers[idx]))
            per["eer_averaged_curve"].append(metrics.curve_eer(*steps.staircase(idx)))
            weights = np.bincount(idx, minlength=len(steps))
            per["eer_global_threshold"].append(metrics.curve_eer(*pooled.curve(weights)))
        for k, values in draws.items():
            values.append(np.mean(per[k]))
        progress.advance()
    return {f"{k}_ci95": [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]
            for k, v in draws.items()}


def _per_client_scores(t, clients):
    genuine, rows = t.claimed == t.real, claims_by_client(t)
    negs = [t.score[rows[c][~genuine[rows[c]]]] for c in clients]
    poss = [t.score[rows[c][genuine[rows[c]]]] for c in clients]
    return negs, poss


def _resolution(summary, min_imp_client, imp_per_rep):
    """None out the operating points the data cannot resolve, with a note each."""
    notes = {}
    for name, far in OPERATING_POINTS:
        label = f"{100 * far:g}%"
        key = f"frr_at_far_{name}_averaged_curve"
        if far * min_imp_client < 1 - 1e-9:
            summary[key] = None
            notes[key] = (f"FAR {label} is below the resolution of a client's curve "
                          f"(1/{min_imp_client} impostor claims)")
        key = f"frr_at_far_{name}_global_threshold"
        if far * imp_per_rep < 1 - 1e-9:
            summary[key] = None
            notes[key] = (f"FAR {label} is below the resolution of the pooled scores "
                          f"(1/{imp_per_rep} impostor claims per repetition)")
    return notes


WORST_AT_THRESHOLDS = 5  # clients named with the highest FAR (FRR) at the stored thresholds


def _stored_thresholds(t):
    """Per client at the stored thresholds (gallery mode): ``{"far": [repetition,
    client, FAR, accepted, impostor claims], "frr": [repetition, client, FRR, rejected,
    genuine claims]}`` (a failure to acquire is a rejection)."""
    out = []
    genuine, rows = t.claimed == t.real, claims_by_client(t)
    for c, info in t.clients.items():
        if info.get("threshold") is None:
            continue
        mine = rows.get(str(c), np.empty(0, dtype=np.intp))
        neg, pos = t.score[mine[~genuine[mine]]], t.score[mine[genuine[mine]]]
        if neg.size and pos.size:
            thr, who = float(info["threshold"]), [int(t.repetition), str(c)]
            accepted, rejected = int(np.sum(neg >= thr)), int(np.sum(~(pos >= thr)))
            out.append({"far": who + [accepted / neg.size, accepted, int(neg.size)],
                        "frr": who + [rejected / pos.size, rejected, int(pos.size)]})
    return out


def _worst_at_thresholds(at_t, rate):
    """The `WORST_AT_THRESHOLDS` clients with the highest ``rate`` ("far": the share of
    their impostor claims accepted, "frr": of their genuine claims rejected) at their
    stored thresholds, above 0 (the mean over clients hides them), as `_stored_thresholds`
    gives them, highest first; None without stored thresholds."""
    if not at_t:
        return None
    named = sorted((c[rate] for c in at_t if c[rate][3]), key=lambda w: (-w[2], w[0], w[1]))
    return named[:WORST_AT_THRESHOLDS]


def _claim_figures(used):
    """The claims behind a method's figures, over the repetitions it has client curves
    in (``used``: (table, its clients' impostor scores) pairs, in repetition order):
    ``(figures, imp_per_rep)``, figures the summary's ``matches_mean`` ... ``fta_impostor``
    keys (in their order) and ``imp_per_rep`` the fewest impostor claims of a repetition."""
    n_gen = n_imp = fta_gen = fta_imp = 0
    matches, seconds = [], []
    for t, _ in used:
        genuine = t.claimed == t.real
        n_gen, n_imp = n_gen + int(genuine.sum()), n_imp + int((~genuine).sum())
        fta_gen += int(np.sum(np.isnan(t.score[genuine])))
        fta_imp += int(np.sum(np.isnan(t.score[~genuine])))
        for info in t.clients.values():
            matches.append(info.get("matches"))
            seconds.append(info.get("fit_seconds"))
    m_mean, m_std = _mean_std(matches)
    figures = {
        "matches_mean": m_mean, "matches_std": m_std, "fit_seconds_mean": _mean_std(seconds)[0],
        "n_genuine": n_gen, "n_impostor": n_imp,
        "impostors_per_client_min": min(min(len(n) for n in negs) for _, negs in used),
        "fta_genuine": fta_gen / n_gen if n_gen else 0.0,
        "fta_impostor": fta_imp / n_imp if n_imp else 0.0}
    return figures, min(sum(len(n) for n in negs) for _, negs in used)


def _at_stored_thresholds(used):
    """Gallery mode: the mean FAR and FRR over clients at their stored thresholds and
    the worst clients there (`_stored_thresholds`, `_worst_at_thresholds`); None each
    without stored thresholds."""
    at_t = [c for t, _ in used for c in _stored_thresholds(t)]
    return {**{f"{rate}_at_stored_thresholds": float(np.mean([c[rate][2] for c in at_t]))
               if at_t else None for rate in ("far", "frr")},
            **{f"{rate}_at_stored_thresholds_worst": _worst_at_thresholds(at_t, rate)
               for rate in ("far", "frr")}}


def evaluate_method(group, grid, n_boot=N_BOOT, seed=0, sweeps=None, progress=None):
    """Figures of one method (its tables of every repetition); see `evaluate`.
    ``sweeps``: each table's `client_sweeps`, in the order of ``group``, when already
    computed (`evaluate` computes them once for these figures and `client_eers`);
    ``progress``: a phase of two steps per repetition, one for the averaged curve and
    one per bootstrap draw."""
    reps, boot_in, all_curves, used = [], [], [], []
    sweeps = [client_sweeps(t) for t in group] if sweeps is None else sweeps
    shown = as_progress(progress)
    shown.start(f"evaluating {group[0].label}: figures, bootstrap over clients",
                2 * len(group) + 1 + n_boot, "steps")
    for t, sweep in sorted(zip(group, sweeps), key=lambda ts: ts[0].repetition):
        shown.advance()
        if not sweep:
            shown.advance()
            continue
        reps.append(_repetition_figures(t, sweep))
        shown.advance()
        curves = [(a, b) for _, a, b, _ in sweep]
        negs, poss = _per_client_scores(t, [c for c, _, _, _ in sweep])
        boot_in.append((curves, np.array([e for _, _, _, e in sweep]), negs, poss))
        all_curves.extend(curves)
        used.append((t, negs))
    if not all_curves:
        raise InputError(f"method '{group[0].label}': no client has both genuine and "
                         f"impostor claims; nothing to evaluate")
    _, frr = metrics.average_curves(all_curves, grid)
    shown.advance()
    out = {"method": group[0].method, "m": group[0].m, "label": group[0].label,
           "repetitions": len(reps), "clients": len(all_curves)}
    for key in ("eer_client_mean", "eer_averaged_curve", "eer_global_threshold"):
        out[key], out[key + "_std"] = _mean_std([r[key] for r in reps])
    out["eer_averaged_curve_per_repetition"] = [r["eer_averaged_curve"] for r in reps]
    if n_boot:
        out.update(_bootstrap(boot_in, n_boot, seed, shown))
    shown.end()
    for name, far in OPERATING_POINTS:
        out[f"frr_at_far_{name}_averaged_curve"] = metrics.grid_frr_at(grid, frr, far)
        key = f"frr_at_far_{name}_global_threshold"
        out[key] = _mean_std([r[key] for r in reps])[0]
    claims, imp_per_rep = _claim_figures(used)
    out["notes"] = _resolution(out, claims["impostors_per_client_min"], imp_per_rep)
    out.update({**claims, **_at_stored_thresholds(used), "far_grid": grid, "frr": frr})
    return out


def evaluate(tables, grid=None, n_boot=N_BOOT, seed=0, progress=None):
    """Figures of merit per method.

    Parameters
    ----------
    tables : list of Scores
    grid : ndarray or None
        FAR grid of the averaged curve, default `default_grid`.
    n_boot : int
        Bootstrap resamples of the clients for the 95 % intervals (0: none).
    seed : int
        Seed of the bootstrap.
    progress : ssgallery.progress.Progress, optional
        Two phases per method: its client curves (one step per client of each
        repetition), then its figures (`evaluate_method`: two steps per repetition, one
        for the averaged curve, one per bootstrap draw); then, when ``svm`` ran, one
        phase comparing each method's client models with the SVMs (a step per method).

    Returns
    -------
    list of dict
        One per (method, m), in order of first appearance, with keys ``method``, ``m``,
        ``label``, ``repetitions``, ``clients``; ``eer_client_mean``,
        ``eer_averaged_curve``, ``eer_global_threshold`` (mean over repetitions), each
        with ``_std`` (over repetitions) and ``_ci95`` (bootstrap over clients);
        ``eer_averaged_curve_per_repetition``; ``frr_at_far_1pct_averaged_curve``,
        ``frr_at_far_01pct_averaged_curve``, ``frr_at_far_1pct_global_threshold``,
        ``frr_at_far_01pct_global_threshold`` (None where not resolved; ``notes`` says
        why); ``matches_mean``, ``matches_std``, ``fit_seconds_mean``, ``n_genuine``,
        ``n_impostor`` (claims, summed over repetitions: a probe image counts once per
        client it claims), ``impostors_per_client_min`` (the fewest impostor claims of a
        client), ``fta_genuine``,
        ``fta_impostor``, ``far_at_stored_thresholds`` / ``frr_at_stored_thresholds``
        (gallery mode, else None: means over clients), ``far_at_stored_thresholds_worst``
        / ``frr_at_stored_thresholds_worst`` (the clients with the highest FAR / FRR
        there, `_worst_at_thresholds`) and ``far_grid`` / ``frr`` (the averaged curve);
        beside the full SVM, every other method's ``vs_svm``: its client models
        compared with the same clients' SVMs
        (`ssgallery.biometrics.client_gaps.client_gaps`).
    """
    grid = default_grid() if grid is None else np.asarray(grid, dtype=float)
    progress = as_progress(progress)
    groups = group_by_method(tables)
    out = []
    sweeps = {}
    for key, group in groups.items():
        by_client = [claims_by_client(t) for t in group]
        with progress.phase(f"evaluating {group[0].label}: client curves",
                            sum(len(rows) for rows in by_client), "clients"):
            sweeps[key] = [client_sweeps(t, progress, rows)
                           for t, rows in zip(group, by_client)]
        out.append(evaluate_method(group, grid, n_boot, seed, sweeps[key], progress))
    gaps = {}
    if any(method == REFERENCE for method, _ in groups):  # else nothing to compare
        with progress.phase(f"evaluating: client models against {REFERENCE}'s",
                            len(groups), "methods"):
            eers = {}
            for k, g in groups.items():
                eers[k] = client_eers(g, sweeps[k])
                progress.advance()
        gaps = compare_with_reference(eers)
    for summary, key in zip(out, groups):
        if key in gaps:
            summary[f"vs_{REFERENCE}"] = gaps[key]
    return out


__all__ = ["claims_by_client", "client_curves", "client_eers", "client_sweeps", "default_grid", "evaluate",
           "evaluate_method", "fta_curve"]
