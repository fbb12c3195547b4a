"""The ``roc`` report folder as files: the score files, ``summary.json``, ``curves.csv``,
the identification files and the plots (drawn by `ssgallery.biometrics.plots`), checked
before any is written (`check_report`) and written one by one, a progress step each
(`write_report`); the printed tables are `ssgallery.biometrics.report`'s."""

import csv
import io
import os
from pathlib import Path

from ssgallery import jsontext
from ssgallery.biometrics.plots import (
    PNG,
    plot_cmc,
    plot_curves,
    plot_identification_det,
    plot_scores,
    plot_title,
    pyplot,
)
from ssgallery.biometrics.scores import (
    check_scores_writable,
    scores_filename,
    sidecar_path,
    write_scores,
)
from ssgallery.errors import InputError
from ssgallery.formats.atomic import check_writable, has_prefix, write_text_atomic
from ssgallery.progress import as_progress
from ssgallery.safeio import file_name

SUMMARY_HEAD = b'{\n  "tool": "ssgallery roc"'
SUMMARY, CURVES = has_prefix(SUMMARY_HEAD), has_prefix(b"far,")  # their kinds
PLOT = "roc.png"
DET_PLOT = "det.png"
SCORES_PLOT = "scores.png"
CMC_PLOT = "cmc.png"
IDENTIFICATION_DET_PLOT = "det_identification.png"


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




def write_report(out_dir, tables, summaries, *, mode="protocol", source="", config=None,
                 plot=True, warn=None, identification=None, force=False, progress=None):
    """Write the report folder; returns {kind: path}.

    Files: ``summary.json``, ``curves.csv``, ``roc.png`` (log axes), ``det.png``
    (normal-deviate axes) and ``scores.png`` (score histograms) unless matplotlib is
    missing or ``plot`` is False, and ``scores/<method>[-m<m>].r<rep>.txt`` (4 columns)
    with their side-car ``.txt.json``. With ``identification`` (summaries of
    `ssgallery.biometrics.identification.evaluate_identification` of the tables'
    full searches; computed here when not given and the tables carry searches), also
    ``identification/<method>[-m<m>].r<rep>.txt``, ``cmc.png``, ``det_identification.png``
    (FNIR against FPIR) and the ``identification`` section of ``summary.json``. Existing
    files are replaced only when they are files of the same kind written by ssgallery, or
    with ``force``. ``progress``: one phase, "writing the report", a step per file
    (`report_file_count`; a plot is a file).
    """
    from ssgallery import __version__

    out, progress = Path(out_dir), as_progress(progress)
    searches = [t.search for t in tables if t.search is not None]
    check_report(out, [scores_filename(t) for t in tables] if mode != "scores" else [],
                 [scores_filename(t) for t in searches], plot, force)
    try:
        (out / "scores").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the report folder ({exc.strerror})", path=out) from None
    if searches and identification is None:
        from ssgallery.biometrics.identification import evaluate_identification

        identification = evaluate_identification(searches)
    files = {"scores": []}
    with progress.phase("writing the report", report_file_count(tables, mode, plot), "files"):
        if mode != "scores":  # never overwrite the inputs of a --scores run
            for t in tables:
                p = out / "scores" / scores_filename(t)
                write_scores(p, t, force)
                files["scores"].append(os.fspath(p))
                progress.advance()
        summary = {"tool": "ssgallery roc", "tool_version": __version__, "mode": mode,
                   "source": source, "config": config or {},
                   "methods": [_jsonable(s) for s in summaries]}
        if identification:
            summary["identification"] = identification
        files["summary"] = os.fspath(out / "summary.json")
        write_text_atomic(files["summary"], jsontext.dumps(summary, indent=2) + "\n", SUMMARY,
                          force, lock=True)  # locked: checked and renamed as one writer
        progress.advance()
        files["curves"] = os.fspath(out / "curves.csv")
        write_text_atomic(files["curves"], format_curves(summaries), CURVES, force, lock=True)
        progress.advance()
        if searches:
            files.update(write_identification(out, searches, identification, plot=plot,
                                              force=force, progress=progress))
        if plot:
            files.update(_plots(out, tables, summaries, config, mode, source, warn, force,
                                progress))
    return files


def report_file_count(tables, mode="protocol", plot=True):
    """How many files `write_report` writes (side-cars aside): the score files (none for
    ``--scores``), ``summary.json``, ``curves.csv``, the identification score files and,
    with ``plot`` and matplotlib, 3 plots (5 with searches)."""
    searches = sum(t.search is not None for t in tables)
    plots = (3 + 2 * bool(searches)) if plot and pyplot() is not None else 0
    return (len(tables) if mode != "scores" else 0) + 2 + searches + plots


def _plots(out, tables, summaries, config, mode, source, warn, force, progress):
    """``roc.png``, ``det.png`` and ``scores.png`` (`write_report`), a progress step each;
    a warning instead when matplotlib is missing."""
    title = plot_title(source, mode, summaries, config or {})
    if not plot_curves(out / PLOT, summaries, title=title, force=force):
        if warn:
            warn("matplotlib is not installed; skipped the plot (pip install matplotlib)")
        return {}
    progress.advance()
    plot_curves(out / DET_PLOT, summaries, title=title, axes="det", force=force)
    progress.advance()
    plot_scores(out / SCORES_PLOT, tables, summaries, title=title, force=force)
    progress.advance()
    return {"plot": os.fspath(out / PLOT), "det_plot": os.fspath(out / DET_PLOT),
            "scores_plot": os.fspath(out / SCORES_PLOT)}


def check_report(out, score_files, search_files, plot=True, force=False):
    """Refuse, before any file of the report is written, an existing one that may not be
    replaced (`ssgallery.formats.atomic.check_writable`, the kinds the writers give):
    a refusal leaves the report folder as it was, never half replaced. ``roc`` calls it
    before it runs the protocol too, with the score files it plans, so a refusal comes
    before the training, not after it.

    Parameters
    ----------
    out : Path
        The report folder.
    score_files, search_files : list of str
        The names of the files in ``scores/`` and ``identification/``
        (`ssgallery.biometrics.scores.score_file_name`).
    plot, force : bool
        As `write_report`'s.
    """
    out = Path(file_name(out))  # a NUL character: one line, not pathlib's ValueError
    searches = bool(search_files)
    checks = [(out / "summary.json", SUMMARY), (out / "curves.csv", CURVES)]
    if plot and pyplot() is not None:
        names = (PLOT, DET_PLOT, SCORES_PLOT) + ((CMC_PLOT, IDENTIFICATION_DET_PLOT)
                                                 if searches else ())
        checks += [(out / name, PNG) for name in names]
    for path, kind in checks:
        if os.path.lexists(path):
            check_writable(path, kind, force)
    for folder, name in [("scores", n) for n in score_files] + \
            [("identification", n) for n in search_files]:
        path = out / folder / name
        if os.path.lexists(path) or os.path.lexists(sidecar_path(path)):
            check_scores_writable(path, force)


def write_identification(out_dir, searches, summaries, plot=True, force=False,
                         progress=None):
    """Write the full-search score files (``identification/``), ``cmc.png`` and
    ``det_identification.png``; ``force``: as `write_report`'s; ``progress``: a step
    per file.

    Every probe is scored against every client in these 4-column files, so other
    tools (bob, pyeer) compute the same CMC from them. Returns {kind: path(s)}.
    """
    progress = as_progress(progress)
    folder = Path(out_dir) / "identification"
    folder.mkdir(parents=True, exist_ok=True)
    files = {"identification_scores": []}
    for table in searches:
        path = folder / scores_filename(table)
        write_scores(path, table, force)
        files["identification_scores"].append(os.fspath(path))
        progress.advance()
    if plot and plot_cmc(Path(out_dir) / CMC_PLOT, summaries, force=force):
        files["cmc_plot"] = os.fspath(Path(out_dir) / CMC_PLOT)
        progress.advance()
    if plot and plot_identification_det(Path(out_dir) / IDENTIFICATION_DET_PLOT, summaries,
                                        force=force):
        files["identification_det_plot"] = os.fspath(Path(out_dir) / IDENTIFICATION_DET_PLOT)
        progress.advance()
    return files


__all__ = ["CMC_PLOT", "CURVES", "DET_PLOT", "IDENTIFICATION_DET_PLOT", "PLOT", "SCORES_PLOT",
           "SUMMARY", "SUMMARY_HEAD", "check_report", "format_curves",
           "report_file_count", "write_identification", "write_report"]
