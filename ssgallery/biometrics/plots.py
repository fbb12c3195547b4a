"""The plots of the ``roc`` report: FRR against FAR (log or DET axes), score
histograms, the closed-set CMC and the open-set DET (FNIR against FPIR), each saved as a PNG atomically (`save_figure`).
Every function returns False when matplotlib is missing."""

import io
import os

import numpy as np

from ssgallery.formats.atomic import PNG_SIGNATURE, has_prefix

PNG = has_prefix(PNG_SIGNATURE)  # the kind of a plot file (`save_figure`)


def _legend_label(s):
    label = s["label"]
    if s["matches_mean"] is not None:
        label += f" ({s['matches_mean']:.1f} ± {s['matches_std'] or 0.0:.1f} matches)"
    if s["eer_averaged_curve"] is not None:
        label += f", EER {100 * s['eer_averaged_curve']:.2f}%"
    return label


def _pct_ticks(ticks):
    return [f"{100 * t:g}%" for t in ticks]


def pyplot():
    """matplotlib's pyplot with the file-only Agg backend, or None without matplotlib
    (the ``plot`` extra): the reports are then written without figures.

    Returns
    -------
    module or None
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(fig, path, force=False):
    """Save a matplotlib figure as PNG atomically and close it; an existing file is
    replaced only when it is a PNG, or with ``force``."""
    import matplotlib.pyplot as plt

    from ssgallery.formats.atomic import write_bytes_atomic

    if fig.get_layout_engine() is None:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue(), PNG, force, lock=True)


def _low_end(resolution):
    """The low end of a curve plot's error-rate axes: the curves' ``resolution`` (1/n),
    at most 10 %. One or two impostor claims per client (or non-mated searches) would
    give axes from 100 % or 50 % to 50 %: none (matplotlib warns of identical limits;
    a DET axis from probit(100 %) = inf is an error)."""
    return min(resolution, 0.1)


def plot_curves(path, summaries, title=None, labels=None, axes="log", targets=(0.01, 0.001),
                force=False):
    """FRR against FAR of the client-averaged curves, one line per method, the matches
    per claim and the EER (point and value) in the legend (the paper's Fig. 4).

    ``axes="log"``: log-log axes; ``axes="det"``: a square DET plot (normal-deviate
    axes, ``scipy.special.ndtri``) with equal ranges starting at the data's resolution
    (1 / the fewest impostor claims of a client). Both in %, with dashed lines at the
    ``targets`` FARs the data resolve. A method whose summary has the rates at the
    gallery's stored thresholds (``roc --gallery``) gets that operating point marked
    (a cross), and one with genuine failures to acquire the floor its FRR cannot go
    below (a dashed line at FRR = the genuine FTA rate). ``labels`` restricts the plot
    to those methods. Returns False when matplotlib is missing. An existing file is
    replaced only when it is a PNG, or with ``force``."""
    plt = pyplot()
    if plt is None:
        return False
    if labels is not None:
        summaries = [s for s in summaries if s["label"] in set(labels)]
    n_imp = min((s.get("impostors_per_client_min") or 10000) for s in summaries)
    lowest = _low_end(1.0 / n_imp)
    styles = ["-", "--", "-.", ":"]
    families = list(dict.fromkeys(s["method"] for s in summaries))
    det = axes == "det"
    fig, ax = plt.subplots(figsize=(6.4, 7.6) if det else (7.5, 6.0), dpi=110,
                           layout="constrained")
    tf = _probit if det else (lambda v: np.asarray(v, dtype=float))
    for i, s in enumerate(summaries):
        grid, frr = s["far_grid"], s["frr"]
        keep = grid >= lowest
        color = f"C{i % 10}"
        ax.step(tf(grid[keep]), tf(np.maximum(frr[keep], lowest / 2)), where="post",
                label=_legend_label(s), lw=1.5, color=color,
                ls=styles[families.index(s["method"]) % len(styles)])
        if s["eer_averaged_curve"] is not None:
            e = max(s["eer_averaged_curve"], lowest)
            ax.plot(tf(e), tf(e), "o", color=color, ms=5)
        _operating_marks(ax, s, color, lowest, tf)
    _target_lines(ax, targets, lowest, tf)
    if det:
        _det_axes(ax, lowest)
    else:
        _log_axes(ax, lowest)
    ax.set_xlabel("FAR (false acceptance rate)")
    ax.set_ylabel("FRR (false rejection rate)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="method (matches per claim), EER of the averaged curve (dot)", fontsize=7,
              title_fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)
    if title:  # a long source name must not be cut by the figure's edge
        title = _fit_title(title, 90 if det else 105)
    if title:
        ax.set_title(title, fontsize=8)
    save_figure(fig, path, force)
    return True


def _target_lines(ax, targets, lowest, tf):
    """A dashed line, labelled, at each of the ``targets`` FARs the data resolve."""
    for t in targets:
        if t >= lowest:
            ax.axvline(tf(t), color="0.4", ls=":", lw=1)
            ax.text(tf(t), 0.98, f" target FAR {100 * t:g}%", fontsize=7, color="0.3",
                    transform=ax.get_xaxis_transform(), rotation=90, va="top", ha="left")


def _det_axes(ax, lowest):
    """Square DET axes (normal deviates) from the data's resolution ``lowest`` to 50 %,
    ticks in %, and the FAR = FRR line."""
    ticks = np.array([v for v in (1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05,
                                  0.1, 0.2, 0.4) if v >= lowest * 0.999])
    lim = (_probit(lowest), _probit(0.5))
    ax.plot(lim, lim, color="0.8", lw=0.8, zorder=0)  # FAR = FRR: the EER line
    for set_ticks in (ax.set_xticks, ax.set_yticks):
        set_ticks(_probit(ticks), _pct_ticks(ticks))
    ax.set_xlim(*lim)
    ax.set_ylim(*lim)
    ax.set_aspect("equal")


def _log_axes(ax, lowest):
    """Log-log axes from the data's resolution ``lowest``, ticks in %."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lowest, 1)
    ax.set_ylim(lowest / 2, 1.05)
    from matplotlib.ticker import FuncFormatter

    for a in (ax.xaxis, ax.yaxis):
        a.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:g}%"))


def _operating_marks(ax, s, color, lowest, tf):
    """The stored thresholds' operating point (a cross, its rates in the legend) and the
    failure-to-acquire floor of one method's curve."""
    far, frr = s.get("far_at_stored_thresholds"), s.get("frr_at_stored_thresholds")
    if far is not None and frr is not None:
        ax.plot(tf(max(far, lowest)), tf(max(frr, lowest / 2)), "X", color=color, ms=9,
                mec="black", mew=0.6, label=f"{s['label']} at the stored thresholds: FAR "
                f"{100 * far:.2f}%, FRR {100 * frr:.2f}%")
    fta = s.get("fta_genuine") or 0.0
    if fta > 0:
        ax.axhline(tf(max(fta, lowest / 2)), color=color, ls="--", lw=0.9, alpha=0.8,
                   label=f"{s['label']}: failure-to-acquire floor (FRR >= {100 * fta:.2f}%)")


def _fit_title(title, width):
    """``title`` with each line cut at ``width`` characters (an ellipsis in the middle)."""
    out = []
    for line in str(title).splitlines():
        if len(line) > width:
            keep = (width - 3) // 2
            line = line[:keep] + "..." + line[-keep:]
        out.append(line)
    return "\n".join(out)


def _threshold_line(ax, mine, shifted):
    """The threshold drawn on a score histogram: 0 when the scores are shifted by each
    client's stored threshold, else the pooled scores' EER threshold (one global
    threshold)."""
    from ssgallery.biometrics.metrics import eer_threshold

    if shifted:
        ax.axvline(0.0, color="black", lw=1, ls="--", label="stored thresholds")
        return
    gen = np.concatenate([t.score[t.claimed == t.real] for t in mine])
    imp = np.concatenate([t.score[t.claimed != t.real] for t in mine])
    gen, imp = gen[np.isfinite(gen)], imp[np.isfinite(imp)]
    if gen.size and imp.size:
        ax.axvline(eer_threshold(imp, gen), color="black", lw=1, ls="--",
                   label="global EER threshold")


def _histogram(ax, score, ok, claims, edges, color, name):
    """One density histogram of the acquired scores of ``claims`` (boolean masks), its
    legend counting them and the claims that failed to acquire; none drawn when no
    claim was acquired (a density of nothing is undefined)."""
    lost = int(np.sum(claims & ~ok))
    label = f"{name} ({int(np.sum(claims))}" + (f", {lost} failed to acquire)" if lost
                                                   else ")")
    if np.any(claims & ok):
        ax.hist(score[claims & ok], edges, density=True, alpha=0.55, color=color,
                label=label)
    else:
        ax.plot([], [], color=color, label=label)  # in the legend only


def _stored(table):
    """Each claim's stored threshold (NaN where the client has none)."""
    t = {c: (info or {}).get("threshold") for c, info in table.clients.items()}
    return np.array([np.nan if t.get(c) is None else float(t[c]) for c in table.claimed])


def plot_scores(path, tables, summaries, title=None, bins=50, force=False):
    """``scores.png``: genuine and impostor score histograms (densities), one panel per
    method, every repetition pooled, with the threshold: for a gallery (stored
    thresholds) the scores are shown as g(x) minus the claimed client's threshold, so
    that every client's threshold is the line at 0; otherwise the line is the pooled
    scores' EER threshold (one global threshold). Returns False when matplotlib is
    missing."""
    plt = pyplot()
    if plt is None:
        return False
    labels = [s["label"] for s in summaries]
    n = len(labels)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), dpi=110,
                             squeeze=False)
    for ax, label in zip(axes.ravel(), labels):
        mine = [t for t in tables if t.label == label]
        score = np.concatenate([t.score for t in mine])
        stored = np.concatenate([_stored(t) for t in mine])
        shifted = bool(np.isfinite(stored).all())
        if shifted:
            score = score - stored
        gen = np.concatenate([t.claimed == t.real for t in mine])
        ok = np.isfinite(score)
        edges = np.histogram_bin_edges(score[ok], bins=bins)
        for claims, color, name in ((~gen, "C3", "impostor"), (gen, "C2", "genuine")):
            _histogram(ax, score, ok, claims, edges, color, name)
        _threshold_line(ax, mine, shifted)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("g(x) - the client's threshold" if shifted else "score g(x)",
                      fontsize=7)
        ax.set_ylabel("density", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=8)
    save_figure(fig, path, force)
    return True


def _probit(rate):
    """Normal deviate of a rate, clipped to [1e-6, 1 - 1e-6] (DET axes)."""
    from ssgallery.biometrics.metrics import probit

    return probit(rate, 1e-6)


def plot_title(source, mode, summaries, config):
    """Data set, clients, repetitions and threshold convention, for the plots."""
    name = os.path.basename(os.path.normpath(str(source).split(" on ")[0])) or str(source)
    if mode == "scores":
        name = f"{len(str(source).split(', '))} score file(s)"
    s = summaries[0]
    clients = config.get("enrolled") or (s["clients"] // max(1, s["repetitions"]))
    return (f"{name} ({mode}): {clients} clients, {s['repetitions']} repetition(s)\n"
            "client-specific thresholds, FRR averaged over clients at each FAR")


def plot_cmc(path, summaries, title=None, force=False):
    """Closed-set CMC (identification rate against rank), one line per method, the
    matches per search in the legend (``force``: `save_figure`). Returns False when
    matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    for i, s in enumerate(summaries):
        ranks_ = np.arange(1, len(s["cmc"]) + 1)
        cost = s["matches_per_search"]
        label = s["label"] + (f" ({cost:,.0f} matches/search)" if cost else "")
        ax.plot(ranks_, 100 * np.asarray(s["cmc"]), marker="o", ms=3, lw=1.5,
                color=f"C{i % 10}", label=f"{label}, rank-1 {100 * s['rank1']:.1f} %")
    ax.set_xlabel("rank")
    ax.set_ylabel("identification rate (%)")
    ax.set_xticks(np.arange(1, max(len(s["cmc"]) for s in summaries) + 1))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or "closed-set identification (CMC)", fontsize=9)
    save_figure(fig, path, force)
    return True


def plot_identification_det(path, summaries, title=None, force=False):
    """Open-set DET: FNIR against FPIR with one threshold on the top candidate's score
    (normal-deviate axes, averaged over repetitions), one line per method, FNIR at
    FPIR = 1 % in the legend (``force``: `save_figure`). Returns False when matplotlib
    is missing or no method has a curve."""
    plt = pyplot()
    summaries = [s for s in summaries if s.get("det")]
    if plt is None or not summaries:
        return False
    from ssgallery.biometrics.metrics import probit

    lowest = _low_end(min(s["det"]["fpir"][0] for s in summaries))
    fig, ax = plt.subplots(figsize=(6.4, 6.4), dpi=110)
    for i, s in enumerate(summaries):
        fnir = s.get("fnir_at_fpir_1pct")
        label = s["label"] + ("" if fnir is None else f", FNIR {100 * fnir:.1f} % at FPIR 1 %")
        ax.step(probit(s["det"]["fpir"], 1e-6), probit(s["det"]["fnir"], 1e-6), where="post",
                lw=1.5, color=f"C{i % 10}", label=label)
    for t in (0.01, 0.001):
        if t >= lowest:
            ax.axvline(probit(t), color="0.4", ls=":", lw=1)
    ticks = np.array([v for v in (1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8,
                                  0.95) if v >= lowest * 0.999])
    ax.set_xticks(probit(ticks), _pct_ticks(ticks))
    yt = np.array([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 0.95])
    ax.set_yticks(probit(yt), _pct_ticks(yt))
    ax.set_xlim(probit(lowest), probit(0.99))
    ax.set_ylim(probit(0.005), probit(0.995))
    ax.set_xlabel("FPIR (non-mated searches returning a candidate)")
    ax.set_ylabel("FNIR (mated searches whose mate is not returned first)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(title or "open-set identification: threshold on the top candidate's score",
                 fontsize=9)
    save_figure(fig, path, force)
    return True
