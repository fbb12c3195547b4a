"""The ``roc`` report folder: score files, ``summary.json``, ``curves.csv``, the plot.

Score files use the 4-column text format of the biometrics community (bob, CSU)::

    claimed_id real_id probe_label score

one claim per line, whitespace-separated; a claim is genuine when ``claimed_id ==
real_id``. Whitespace and ``%`` inside a field are percent-encoded (``%20``, ``%25``).
ssgallery adds ``#`` comment lines on top (method, m, repetition; per client the
matches per claim and training time), which :func:`read_scores` uses when present and
which other tools can ignore; files without them are read as well (method = the file
name, repetition from a ``.rN`` suffix). Every file is written atomically.
"""

import csv
import io
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from .atomic import write_text_atomic
from .errors import InputError
from .protocol import Scores
from .textfile import read_lines

MAGIC = "ssgallery-scores"
PLOT = "roc.png"
DET_PLOT = "det.png"


def _enc(value):
    s = str(value)
    return (s.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")
            .replace("\n", "%0A").replace("\r", "%0D") or "%00")


def _dec(field):
    return "" if field == "%00" else unquote(field)


def _num(value):
    return "none" if value is None else repr(float(value))


def scores_filename(table):
    """``svm.r0.txt``, ``ssvm-m2.r3.txt``."""
    stem = table.method if table.m is None else f"{table.method}-m{table.m}"
    return f"{re.sub(r'[^A-Za-z0-9_.+-]', '_', stem)}.r{table.repetition}.txt"


def format_scores(table):
    """The text of a score file for one :class:`~ssgallery.protocol.Scores`."""
    out = io.StringIO()
    m = "none" if table.m is None else int(table.m)
    out.write(f"# {MAGIC} 1 method={_enc(table.method)} m={m} repetition={table.repetition}\n")
    out.write("# columns: claimed_id real_id probe_label score\n")
    for c, info in table.clients.items():
        extra = "".join(f" {k}={_num(v)}" for k, v in sorted(info.items()))
        out.write(f"# client={_enc(c)}{extra}\n")
    for row in zip(table.claimed, table.real, table.probe, table.score):
        out.write(f"{_enc(row[0])} {_enc(row[1])} {_enc(row[2])} {float(row[3])!r}\n")
    return out.getvalue()


def write_scores(path, table):
    """Write one score file atomically."""
    write_text_atomic(path, format_scores(table))


def _meta(text):
    out = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = _dec(v)
    return out


def _float_or_none(v):
    return None if v in (None, "none") else float(v)


def read_scores(path):
    """Read a 4-column score file.

    Returns
    -------
    Scores
        ``method`` and ``m`` from the ssgallery header if present, else the file name;
        ``clients`` holds whatever per-client information the header gave.

    Raises
    ------
    InputError
        Missing or unreadable file, a line without 4 fields, a non-numeric score,
        or no scores at all.
    """
    path = os.fspath(path)
    lines = read_lines(path, "score file")
    stem = Path(path).name
    stem = stem[: -len(Path(stem).suffix)] if Path(stem).suffix in (".txt", ".scores") else stem
    match = re.fullmatch(r"(.*)\.r(\d+)", stem)
    method, m, rep = (match.group(1), None, int(match.group(2))) if match else (stem, None, 0)
    clients, rows = {}, []
    for lineno, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            body = text[1:].strip()
            if body.startswith(MAGIC):
                meta = _meta(body)
                method = meta.get("method", method)
                m = None if meta.get("m", "none") == "none" else int(meta["m"])
                rep = int(meta.get("repetition", rep))
            elif body.startswith("client="):
                meta = _meta(body)
                c = meta.pop("client")
                clients[c] = {k: _float_or_none(v) for k, v in meta.items()}
            continue
        fields = text.split()
        if len(fields) != 4:
            raise InputError(f"line {lineno}: expected 4 columns (claimed_id real_id "
                             f"probe_label score), got {len(fields)}", path=path)
        try:
            score = float(fields[3])
        except ValueError:
            raise InputError(f"line {lineno}: score '{fields[3]}' is not a number",
                             path=path) from None
        if not np.isfinite(score):
            raise InputError(f"line {lineno}: score is not finite", path=path)
        rows.append((_dec(fields[0]), _dec(fields[1]), _dec(fields[2]), score))
    if not rows:
        raise InputError("score file has no scores", path=path)
    claimed, real, probe, score = zip(*rows)
    return Scores(method, m, rep, np.array(claimed), np.array(real), np.array(probe),
                  np.array(score, dtype=float), clients)


def read_score_files(paths):
    """Read several score files; files of one method get distinct repetitions."""
    tables, seen = [], set()
    for p in paths:
        t = read_scores(p)
        while (t.method, t.m, t.repetition) in seen:
            t.repetition += 1
        seen.add((t.method, t.m, t.repetition))
        tables.append(t)
    return tables


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


def format_table(summaries):
    """The printed table: one row per method."""
    head = ["method", "m", "matches/claim", "EER %", "client EER %", "FRR@FAR=1% (%)",
            "FRR@FAR=0.1% (%)", "fit s/client"]
    rows = [[s["method"], "-" if s["m"] is None else str(s["m"]),
             _pm(s["matches_mean"], s["matches_std"]), _pct(s["eer"], s["eer_std"]),
             _pct(s.get("client_eer"), s.get("client_eer_std")),
             _pct(s["frr_at_far_1pct"]), _pct(s["frr_at_far_01pct"]),
             _pm(s["fit_seconds_mean"], None, "{:.2f}")] for s in summaries]
    if any(s.get("threshold_far") is not None for s in summaries):
        head += ["FAR@thr %", "FRR@thr %"]
        for r, s in zip(rows, summaries):
            r += [_pct(s.get("threshold_far")), _pct(s.get("threshold_frr"))]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def plot_curves(path, summaries, title=None, labels=None, axes="log"):
    """FRR against FAR, one line per method, mean matches in the legend (the paper's
    Fig. 4). ``axes="log"``: log-log axes; ``axes="det"``: a DET plot, both rates on
    normal-deviate axes (probit, ``scipy.special.ndtri``) with rates clipped to
    [1e-4, 1 - 1e-4]. ``labels`` restricts the plot to those method labels.
    Returns False when matplotlib is missing."""
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
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    from .atomic import write_bytes_atomic

    write_bytes_atomic(path, buf.getvalue())
    return True


def _probit(rate):
    """Normal deviate of a rate, clipped to [1e-4, 1 - 1e-4] (DET axes)."""
    from .metrics import probit

    return probit(rate, 1e-4)


def write_report(out_dir, tables, summaries, *, mode="protocol", source="", config=None,
                 plot=True, warn=None):
    """Write the report folder; returns {kind: path}.

    Files: ``summary.json``, ``curves.csv``, ``roc.png`` (log axes) and ``det.png``
    (normal-deviate axes) unless matplotlib is missing or ``plot`` is False, and
    ``scores/<method>[-m<m>].r<rep>.txt``.
    """
    from . import __version__

    out = Path(out_dir)
    try:
        (out / "scores").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the report folder ({exc.strerror})", path=out) from None
    files = {"scores": []}
    if mode != "scores":  # never overwrite the inputs of a --scores run
        for t in tables:
            p = out / "scores" / scores_filename(t)
            write_scores(p, t)
            files["scores"].append(os.fspath(p))
    summary = {"tool": "ssgallery roc", "tool_version": __version__, "mode": mode,
               "source": source, "config": config or {},
               "methods": [_jsonable(s) for s in summaries]}
    files["summary"] = os.fspath(out / "summary.json")
    write_text_atomic(files["summary"], json.dumps(summary, indent=2) + "\n")
    files["curves"] = os.fspath(out / "curves.csv")
    write_text_atomic(files["curves"], format_curves(summaries))
    if plot:
        title = f"{source} ({mode})" if source else None
        if plot_curves(out / PLOT, summaries, title=title):
            files["plot"] = os.fspath(out / PLOT)
            plot_curves(out / DET_PLOT, summaries, title=title, axes="det")
            files["det_plot"] = os.fspath(out / DET_PLOT)
        elif warn:
            warn("matplotlib is not installed; skipped the plot (pip install matplotlib)")
    return files


__all__ = [
    "format_curves",
    "format_scores",
    "format_table",
    "plot_curves",
    "read_score_files",
    "read_scores",
    "scores_filename",
    "write_report",
    "write_scores",
]
