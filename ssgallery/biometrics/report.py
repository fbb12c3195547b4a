"""The ``roc`` report folder: score files, ``summary.json``, ``curves.csv``, the plots."""


import csv
import io
import json
import os
from pathlib import Path

import numpy as np

from ssgallery.biometrics.scores import scores_filename, write_scores
from ssgallery.errors import InputError
from ssgallery.formats.atomic import PNG_SIGNATURE, has_prefix, write_text_atomic

SUMMARY_HEAD = b'{\n  "tool": "ssgallery roc"'
PLOT = "roc.png"
DET_PLOT = "det.png"
SCORES_PLOT = "scores.png"


# --------------------------------------------------------------------------- summary

def _jsonable(summary):
    return {k: v for k, v in summary.items() if k not in ("far_grid", "frr")}


def format_curves(summaries):
    """``curves.csv``: a ``far`` column, then one FRR column per method label."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["far"] + [s["label"] for s in summaries])
    grid = summaries[0]["far_grid"]
    for i, f in enumerate(grid):
        w.writerow([f"{f:.6g}"] + [f"{s['frr'][i]:.6g}" for s in summaries])
    return out.getvalue()


DASH = "—"  # an operating point the data cannot resolve, or a figure that does not apply


def _pct(v, std=None):
    if v is None:
        return DASH
    return f"{100 * v:.2f}" + (f" ± {100 * std:.2f}" if std is not None else "")


def _ci(s, key):
    ci = s.get(key + "_ci95")
    return "" if not ci else f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"


def _pm(v, std, fmt="{:.1f}"):
    if v is None:
        return DASH
    return fmt.format(v) + (" ± " + fmt.format(std) if std is not None else "")


def format_identification_table(summaries):
    """The printed identification table: one row per method."""
    head = ["method", "m", "matches/search", "rank-1 %", "rank-5 %", "rank-10 %", "DIR@FAR=1% (%)"]

    def at(s, r):
        return _pct(s["cmc"][r - 1]) if len(s["cmc"]) >= r else "—"

    rows = [[s["method"], "-" if s["m"] is None else str(s["m"]),
             _pm(s["matches_per_search"], None, "{:,.0f}"), at(s, 1), at(s, 5), at(s, 10),
             _pct(s["dir"]) if s["dir"] is not None else "—"] for s in summaries]
    return _format_rows(head, rows)


def _format_rows(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _columns(summaries):
    """(header, row function) of the printed table; the headline convention first."""
    cols = [("method", lambda s: s["method"]),
            ("m", lambda s: DASH if s["m"] is None else str(s["m"])),
            ("matches/claim", lambda s: _pm(s["matches_mean"], s["matches_std"])),
            ("EER client-mean % [95% CI]",
             lambda s: _pct(s["eer_client_mean"]) + _ci(s, "eer_client_mean")),
            ("EER averaged-curve %", lambda s: _pct(s["eer_averaged_curve"])),
            ("EER global-threshold %", lambda s: _pct(s["eer_global_threshold"])),
            ("FRR@FAR=1% averaged-curve", lambda s: _pct(s["frr_at_far_1pct_averaged_curve"])),
            ("FRR@FAR=0.1% averaged-curve",
             lambda s: _pct(s["frr_at_far_01pct_averaged_curve"])),
            ("FRR@FAR=1% global-threshold",
             lambda s: _pct(s["frr_at_far_1pct_global_threshold"])),
            ("FRR@FAR=0.1% global-threshold",
             lambda s: _pct(s["frr_at_far_01pct_global_threshold"])),
            ("fit s/client", lambda s: _pm(s["fit_seconds_mean"], None, "{:.2f}"))]
    if any(s.get("far_at_stored_thresholds") is not None for s in summaries):
        cols += [("FAR@stored-thresholds %", lambda s: _pct(s.get("far_at_stored_thresholds"))),
                 ("FRR@stored-thresholds %", lambda s: _pct(s.get("frr_at_stored_thresholds")))]
    if any(s.get("fta_genuine") or s.get("fta_impostor") for s in summaries):
        cols += [("FTA genuine %", lambda s: _pct(s.get("fta_genuine"))),
                 ("FTA impostor %", lambda s: _pct(s.get("fta_impostor")))]
    return cols


def _format_rows(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def format_table(summaries):
    """The printed table: one row per method, each column named by its convention; a
    note under the table for each figure shown as "—"."""
    cols = _columns(summaries)
    text = _format_rows([h for h, _ in cols], [[f(s) for _, f in cols] for s in summaries])
    notes = dict.fromkeys(note for s in summaries for note in s.get("notes", {}).values())
    if notes:
        text += "\n" + "\n".join(f"{DASH}: {n}" for n in notes)
    return text + ("\nEER client-mean (the headline): each client's own threshold sweep, "
                   "averaged over clients and repetitions; [95% CI]: bootstrap over clients.")


def format_dev_eval(results):
    """The printed table of `ssgallery.biometrics.evaluation.dev_eval`."""
    head = ["method", "criterion", "threshold", "dev FAR %", "dev FRR %", "dev HTER %",
            "eval FAR %", "eval FRR %", "eval HTER %", "eval FTA %"]
    rows = []
    for r in results:
        crit = r["criterion"] + (f"={100 * r['target_far']:g}%" if r["criterion"] == "far" else "")
        d, e = r["dev"], r["eval"]
        rows.append([r["label"], crit, f"{r['threshold']:.6g}", _pct(d["far"]), _pct(d["frr"]),
                     _pct(d["hter"]), _pct(e["far"]), _pct(e["frr"]), _pct(e["hter"]),
                     _pct(0.5 * (e["fta_genuine"] + e["fta_impostor"]))])
    return _format_rows(head, rows) + ("\nOne global threshold per method, chosen on the "
                                  "development scores, applied to the evaluation scores.")


def _legend_label(s):
    label = s["label"]
    if s["matches_mean"] is not None:
        label += f" ({s['matches_mean']:.1f} ± {s['matches_std'] or 0.0:.1f} matches)"
    if s["eer_averaged_curve"] is not None:
        label += f", EER {100 * s['eer_averaged_curve']:.2f}%"
    return label


def _pct_ticks(ticks):
    return [f"{100 * t:g}%" for t in ticks]


def _pyplot():
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
    write_bytes_atomic(path, buf.getvalue(), has_prefix(PNG_SIGNATURE), force)


def plot_curves(path, summaries, title=None, labels=None, axes="log", targets=(0.01, 0.001),
                force=False):
    """FRR against FAR of the client-averaged curves, one line per method, the matches
    per claim and the EER (point and value) in the legend (the paper's Fig. 4).

    ``axes="log"``: log-log axes; ``axes="det"``: a square DET plot (normal-deviate
    axes, ``scipy.special.ndtri``) with equal ranges starting at the data's resolution
    (1 / the fewest impostor claims of a client). Both in %, with dashed lines at the
    ``targets`` FARs the data resolve. ``labels`` restricts the plot to those methods.
    Returns False when matplotlib is missing. An existing file is replaced only when
    it is a PNG, or with ``force``."""
    plt = _pyplot()
    if plt is None:
        return False
    if labels is not None:
        summaries = [s for s in summaries if s["label"] in set(labels)]
    n_imp = min((s.get("impostors_per_client_min") or 10000) for s in summaries)
    lowest = 1.0 / n_imp
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
    for t in targets:
        if t >= lowest:
            ax.axvline(tf(t), color="0.4", ls=":", lw=1)
            ax.text(tf(t), 0.98, f" target FAR {100 * t:g}%", fontsize=7, color="0.3",
                    transform=ax.get_xaxis_transform(), rotation=90, va="top", ha="left")
    if det:
        ticks = np.array([v for v in (1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05,
                                      0.1, 0.2, 0.4) if v >= lowest * 0.999])
        lim = (_probit(lowest), _probit(0.5))
        ax.plot(lim, lim, color="0.8", lw=0.8, zorder=0)  # FAR = FRR: the EER line
        for set_ticks in (ax.set_xticks, ax.set_yticks):
            set_ticks(_probit(ticks), _pct_ticks(ticks))
        ax.set_xlim(*lim)
        ax.set_ylim(*lim)
        ax.set_aspect("equal")
    else:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lowest, 1)
        ax.set_ylim(lowest / 2, 1.05)
        from matplotlib.ticker import FuncFormatter

        for a in (ax.xaxis, ax.yaxis):
            a.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:g}%"))
    ax.set_xlabel("FAR (false acceptance rate)")
    ax.set_ylabel("FRR (false rejection rate)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="method (matches per claim), EER of the averaged curve (dot)", fontsize=7,
              title_fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)
    if title:
        ax.set_title(title, fontsize=8)
    save_figure(fig, path, force)
    return True


def plot_scores(path, tables, summaries, title=None, bins=50, force=False):
    """``scores.png``: genuine and impostor score histograms (densities), one panel per
    method, every repetition pooled. Returns False when matplotlib is missing."""
    plt = _pyplot()
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
        gen = np.concatenate([t.claimed == t.real for t in mine])
        ok = np.isfinite(score)
        edges = np.histogram_bin_edges(score[ok], bins=bins)
        ax.hist(score[ok & ~gen], edges, density=True, alpha=0.55, color="C3",
                label=f"impostor ({int(np.sum(~gen))})")
        ax.hist(score[ok & gen], edges, density=True, alpha=0.55, color="C2",
                label=f"genuine ({int(np.sum(gen))})")
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("score g(x)", fontsize=7)
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


def write_report(out_dir, tables, summaries, *, mode="protocol", source="", config=None,
                 plot=True, warn=None, identification=None, force=False):
    """Write the report folder; returns {kind: path}.

    Files: ``summary.json``, ``curves.csv``, ``roc.png`` (log axes), ``det.png``
    (normal-deviate axes) and ``scores.png`` (score histograms) unless matplotlib is
    missing or ``plot`` is False, and ``scores/<method>[-m<m>].r<rep>.txt`` (4 columns)
    with their side-car ``.txt.json``. With ``identification`` (summaries of
    `ssgallery.biometrics.identification.evaluate_identification` of the tables'
    full searches), also ``identification/<method>[-m<m>].r<rep>.txt``, ``cmc.png``
    and the ``identification`` section of ``summary.json``. Existing files are replaced
    only when they are files of the same kind written by ssgallery, or with ``force``.
    """
    from ssgallery import __version__

    out = Path(out_dir)
    try:
        (out / "scores").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the report folder ({exc.strerror})", path=out) from None
    files = {"scores": []}
    if mode != "scores":  # never overwrite the inputs of a --scores run
        for t in tables:
            p = out / "scores" / scores_filename(t)
            write_scores(p, t, force)
            files["scores"].append(os.fspath(p))
    summary = {"tool": "ssgallery roc", "tool_version": __version__, "mode": mode,
               "source": source, "config": config or {},
               "methods": [_jsonable(s) for s in summaries]}
    if identification:
        summary["identification"] = identification
    files["summary"] = os.fspath(out / "summary.json")
    write_text_atomic(files["summary"], json.dumps(summary, indent=2) + "\n",
                      has_prefix(SUMMARY_HEAD), force)
    files["curves"] = os.fspath(out / "curves.csv")
    write_text_atomic(files["curves"], format_curves(summaries), has_prefix(b"far,"), force)
    searches = [t.search for t in tables if t.search is not None]
    if searches:
        from ssgallery.biometrics.identification import (
            evaluate_identification,
            write_identification,
        )

        summary["identification"] = evaluate_identification(searches)
        write_text_atomic(files["summary"], json.dumps(summary, indent=2) + "\n",
                          has_prefix(SUMMARY_HEAD), force)
        files.update(write_identification(out, searches, summary["identification"],
                                          plot=plot))
    if plot:
        title = plot_title(source, mode, summaries, config or {})
        if plot_curves(out / PLOT, summaries, title=title, force=force):
            files["plot"] = os.fspath(out / PLOT)
            plot_curves(out / DET_PLOT, summaries, title=title, axes="det", force=force)
            files["det_plot"] = os.fspath(out / DET_PLOT)
            plot_scores(out / SCORES_PLOT, tables, summaries, title=title, force=force)
            files["scores_plot"] = os.fspath(out / SCORES_PLOT)
        elif warn:
            warn("matplotlib is not installed; skipped the plot (pip install matplotlib)")
    return files


__all__ = [
    "format_curves",
    "format_dev_eval",
    "format_identification_table",
    "format_table",
    "plot_curves",
    "plot_scores",
    "plot_title",
    "write_report",
]
