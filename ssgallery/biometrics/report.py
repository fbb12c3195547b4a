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


def _pct(v, std=None):
    if v is None:
        return "-"
    return f"{100 * v:.2f}" + (f" ± {100 * std:.2f}" if std is not None else "")


def _pm(v, std, fmt="{:.1f}"):
    if v is None:
        return "-"
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


def format_table(summaries):
    """The printed table: one row per method (FTA: failure-to-acquire rates of the
    genuine and the impostor claims, counted as rejections in the other columns)."""
    head = ["method", "m", "matches/claim", "EER %", "client EER %", "FRR@FAR=1% (%)",
            "FRR@FAR=0.1% (%)", "FTA gen %", "FTA imp %", "fit s/client"]
    rows = [[s["method"], "-" if s["m"] is None else str(s["m"]),
             _pm(s["matches_mean"], s["matches_std"]), _pct(s["eer"], s["eer_std"]),
             _pct(s.get("client_eer"), s.get("client_eer_std")),
             _pct(s["frr_at_far_1pct"]), _pct(s["frr_at_far_01pct"]),
             _pct(s.get("fta_genuine")), _pct(s.get("fta_impostor")),
             _pm(s["fit_seconds_mean"], None, "{:.2f}")] for s in summaries]
    if any(s.get("threshold_far") is not None for s in summaries):
        head += ["FAR@thr %", "FRR@thr %"]
        for r, s in zip(rows, summaries):
            r += [_pct(s.get("threshold_far")), _pct(s.get("threshold_frr"))]
    return _format_rows(head, rows)


def plot_curves(path, summaries, title=None, labels=None, axes="log", force=False):
    """FRR against FAR, one line per method, mean matches in the legend (the paper's
    Fig. 4). ``axes="log"``: log-log axes; ``axes="det"``: a DET plot, both rates on
    normal-deviate axes (probit, ``scipy.special.ndtri``) with rates clipped to
    [1e-4, 1 - 1e-4]. ``labels`` restricts the plot to those method labels.
    Returns False when matplotlib is missing. An existing file is replaced only when
    it is a PNG, or with ``force``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    if labels is not None:
        summaries = [s for s in summaries if s["label"] in set(labels)]
    styles = ["-", "--", "-.", ":"]
    families = list(dict.fromkeys(s["method"] for s in summaries))
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    lowest = 1.0
    for i, s in enumerate(summaries):
        grid, frr = s["far_grid"], s["frr"]
        keep = grid > 0
        if s["matches_mean"] is not None:
            std = s["matches_std"] or 0.0
            label = f"{s['label']} ({s['matches_mean']:.1f} ± {std:.1f})"
        else:
            label = s["label"]
        positive = frr[keep][frr[keep] > 0]
        lowest = min(lowest, positive.min()) if positive.size else lowest
        x, y = grid[keep], np.maximum(frr[keep], 1e-4)
        if axes == "det":
            x, y = _probit(x), _probit(y)
        ax.step(x, y, where="post", label=label, lw=1.5,
                ls=styles[families.index(s["method"]) % len(styles)], color=f"C{i % 10}")
    if axes == "det":
        ticks = np.array([1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95])
        ax.set_xticks(_probit(ticks), [f"{t:g}" for t in ticks])
        ax.set_yticks(_probit(ticks), [f"{t:g}" for t in ticks])
        ax.set_xlim(_probit(1e-4), _probit(0.95))
        ax.set_ylim(_probit(max(1e-3, 0.5 * lowest)), _probit(0.95))
    else:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(grid[grid > 0][0], 1)
        ax.set_ylim(max(1e-3, 0.5 * lowest), 1.05)
    ax.set_xlabel("FAR")
    ax.set_ylabel("FRR")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="method (matches per claim)", fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if title:
        ax.set_title(title if len(title) <= 90 else title[:87] + "...", fontsize=9)
    save_figure(fig, path, force)
    return True


def save_figure(fig, path, force=False):
    """Save a matplotlib figure as PNG atomically and close it; an existing file is
    replaced only when it is a PNG, or with ``force``."""
    import matplotlib.pyplot as plt

    from ssgallery.formats.atomic import write_bytes_atomic

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue(), has_prefix(PNG_SIGNATURE), force)


def _probit(rate):
    """Normal deviate of a rate, clipped to [1e-4, 1 - 1e-4] (DET axes)."""
    from ssgallery.biometrics.metrics import probit

    return probit(rate, 1e-4)


def write_report(out_dir, tables, summaries, *, mode="protocol", source="", config=None,
                 plot=True, warn=None, identification=None, force=False):
    """Write the report folder; returns {kind: path}.

    Files: ``summary.json``, ``curves.csv``, ``roc.png`` (log axes) and ``det.png``
    (normal-deviate axes) unless matplotlib is missing or ``plot`` is False, and
    ``scores/<method>[-m<m>].r<rep>.txt``; with ``identification`` (summaries of
    :func:`ssgallery.biometrics.identification.evaluate_identification` of the tables'
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
        title = f"{source} ({mode})" if source else None
        if plot_curves(out / PLOT, summaries, title=title, force=force):
            files["plot"] = os.fspath(out / PLOT)
            plot_curves(out / DET_PLOT, summaries, title=title, axes="det", force=force)
            files["det_plot"] = os.fspath(out / DET_PLOT)
        elif warn:
            warn("matplotlib is not installed; skipped the plot (pip install matplotlib)")
    return files


__all__ = [
    "format_curves",
    "format_identification_table",
    "format_table",
    "plot_curves",
    "write_report",
]
