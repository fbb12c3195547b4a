"""The ``roc`` report: the printed tables (`format_table`, `format_identification_table`,
`format_dev_eval`); the report folder's files are `ssgallery.biometrics.report_files`'
(re-exported here: `write_report`, `check_report`, ...)."""

from ssgallery.biometrics.client_gaps import AMBIGUOUS, OTHER_CLAIMS
from ssgallery.biometrics.plots import plot_curves, plot_scores, plot_title  # re-exported
from ssgallery.biometrics.report_files import (  # re-exported: the report folder
    CMC_PLOT,
    CURVES,
    DET_PLOT,
    IDENTIFICATION_DET_PLOT,
    PLOT,
    SCORES_PLOT,
    SUMMARY,
    SUMMARY_HEAD,
    check_report,
    format_curves,
    write_identification,
    write_report,
)
from ssgallery.errors import option, printable
from ssgallery.tables import DASH, counted
from ssgallery.tables import format_table as format_rows


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
    """The printed identification table: one row per method; a note under it for each
    figure shown as "—"."""
    head = ["method", "m", "matches", "rank-1 %", "rank-5 %", "rank-10 %", "FNIR@1% %",
            "FNIR@0.1% %"]

    def at(s, r):
        return _pct(s["cmc"][r - 1]) if len(s["cmc"]) >= r else DASH

    rows = [[s["method"], s["m"],
             _pm(s["matches_per_search"], None, "{:,.0f}"), at(s, 1), at(s, 5), at(s, 10),
             _pct(s.get("fnir_at_fpir_1pct")), _pct(s.get("fnir_at_fpir_01pct"))]
            for s in summaries]
    if any("stored_threshold" in s for s in summaries):  # roc --gallery: its 1:N point
        head += ["FPIR@T %", "FNIR@T %"]
        for row, s in zip(rows, summaries):
            row += [_pct(s.get("fpir_at_stored_threshold")),
                    _pct(s.get("fnir_at_stored_threshold"))]
    notes = dict.fromkeys([n for s in summaries for n in s.get("notes", {}).values()]
                          + _rank_notes(summaries, (5, 10)))
    text = format_rows(head, rows, right=range(1, len(head)))
    legend = ("matches: per search (N clients x m); rank-r: closed-set CMC; FNIR@x%: open "
              "set, mated searches missed at FPIR = x% (the threshold on the top score)."
              + (" FPIR@T, FNIR@T: at the gallery's stored 1:N threshold T (what identify "
                 f"{option('open_set')} decides)." if len(head) > 8 else ""))
    return text + "\n" + _wrapped([f"{DASH}: {n}" for n in notes] + [legend])


def _rank_notes(summaries, ranks):
    """The note of the rank columns shown as `DASH`: a search among n clients has no
    rank above n (the CMC, ``cmc`` in summary.json, stops there)."""
    notes = []
    for n in sorted({len(s["cmc"]) for s in summaries}):
        missing = [f"rank-{r}" for r in ranks if r > n]
        if missing:
            notes.append(f"{' and '.join(missing)}: a search among {counted(n, 'client')} "
                         f"has no rank above {n}")
    return notes


def _columns(summaries, wide=False):
    """(header, row function, keys shown) of the printed table. By default the columns a
    person reads first, in at most `WIDTH` characters: method, m, matches per claim, the
    mean client EER (the headline) with its interval, FRR at FAR = 1 % (averaged
    curve), and in gallery mode FAR and FRR at the stored thresholds; ``wide`` adds
    every other convention, the fit time and the failure-to-acquire rates."""
    cols = [("method", lambda s: s["method"], ()),
            ("m", lambda s: s["m"], ()),
            ("matches", lambda s: _pm(s["matches_mean"], s["matches_std"]), ()),
            ("EER % [95% CI]", lambda s: _pct(s["eer_client_mean"]) + _ci(s, "eer_client_mean"),
             ("eer_client_mean",)),
            ("FRR@FAR=1%", lambda s: _pct(s["frr_at_far_1pct_averaged_curve"]),
             ("frr_at_far_1pct_averaged_curve",))]
    if wide:
        cols += [
            ("EER averaged-curve %", lambda s: _pct(s["eer_averaged_curve"]), ()),
            ("EER global-threshold %", lambda s: _pct(s["eer_global_threshold"]), ()),
            ("FRR@FAR=0.1% averaged-curve", lambda s: _pct(s["frr_at_far_01pct_averaged_curve"]),
             ("frr_at_far_01pct_averaged_curve",)),
            ("FRR@FAR=1% global-threshold",
             lambda s: _pct(s["frr_at_far_1pct_global_threshold"]),
             ("frr_at_far_1pct_global_threshold",)),
            ("FRR@FAR=0.1% global-threshold",
             lambda s: _pct(s["frr_at_far_01pct_global_threshold"]),
             ("frr_at_far_01pct_global_threshold",)),
            ("fit s/client", lambda s: _pm(s["fit_seconds_mean"], None, "{:.2f}"), ())]
    if any(s.get("far_at_stored_thresholds") is not None for s in summaries):
        cols += [("FAR@thresholds %", lambda s: _pct(s.get("far_at_stored_thresholds")), ()),
                 ("FRR@thresholds %", lambda s: _pct(s.get("frr_at_stored_thresholds")), ())]
    if wide and any(s.get("fta_genuine") or s.get("fta_impostor") for s in summaries):
        cols += [("FTA genuine %", lambda s: _pct(s.get("fta_genuine")), ()),
                 ("FTA impostor %", lambda s: _pct(s.get("fta_impostor")), ())]
    return cols


WIDTH = 100  # the default tables and their notes fit a terminal this wide


def _notes(summaries, keys):
    """The notes of the figures shown as `DASH` in the columns of ``keys``."""
    return dict.fromkeys(note for s in summaries for k, note in s.get("notes", {}).items()
                         if k in keys)


def _wrapped(lines, break_on_hyphens=True):
    import textwrap

    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  ",
                                    break_on_hyphens=break_on_hyphens) for line in lines)


def format_table(summaries, wide=False):
    """The printed table: one row per method; under it a note for each figure shown as
    `DASH` and what the columns mean (the EER averaged over repetitions only when a
    method has more than one). At most `WIDTH` characters a line unless
    ``wide`` (every convention: see `_columns`; all of them are in summary.json)."""
    cols = _columns(summaries, wide)
    text = format_rows([h for h, _, _ in cols], [[f(s) for _, f, _ in cols] for s in summaries],
                       right=range(1, len(cols)))
    notes = _notes(summaries, {k for _, _, keys in cols for k in keys})
    over = ("clients and repetitions" if any(s.get("repetitions", 1) > 1 for s in summaries)
            else "clients")  # roc --gallery --probes: one set of claims, no repetition
    legend = [(f"EER: each client's own threshold sweep, averaged over {over} "
              "(the headline); [95% CI]: bootstrap over clients. FRR@FAR=1%: on the "
              "client-averaged curve (the paper's Fig. 4).")]
    if any(h.startswith("FAR@thresholds") for h, _, _ in cols):
        legend.append("FAR/FRR@thresholds: at the thresholds stored in the gallery.")
    if not wide:
        legend.append(f"{option('wide')}: every convention, the fit time and failures to acquire "
                      "(all in summary.json).")
    lines = [_wrapped([f"{DASH}: {n}" for n in notes]),
             _wrapped(vs_svm_lines(summaries), break_on_hyphens=False),  # method names: svm-sel
             _wrapped(_worst_at_thresholds(summaries), break_on_hyphens=False),
             _wrapped(legend)]
    return text + "\n" + "\n".join(line for line in lines if line)


def _worst_at_thresholds(summaries):
    """The lines naming, per method, the clients whose stored thresholds accept the
    largest share of their impostor claims and reject the largest share of their
    genuine claims (``far_at_stored_thresholds_worst``, ``frr_...``: the FAR and
    FRR@thresholds columns are their means, which hide them); none when no client has
    any."""
    lines = []
    for rate, what in (("far", "accepted impostor"), ("frr", "rejected genuine")):
        parts = []
        for s in summaries:
            worst = s.get(f"{rate}_at_stored_thresholds_worst")
            if worst:
                reps = s.get("repetitions", 1) > 1
                parts.append(f"{s['label']} " + ", ".join(
                    f"{f'r{rep}:' if reps else ''}{printable(client)} {100 * value:.2f}% "
                    f"({k} of {n})" for rep, client, value, k, n in worst))
        if parts:
            lines.append(f"clients with the highest {rate.upper()}@thresholds (the column is "
                         f"their mean; {what} claims): " + "; ".join(parts) + ".")
    return lines


def vs_svm_lines(summaries):
    """The line naming, per method, its client models far above the same client's SVM
    (``vs_svm``, `ssgallery.biometrics.client_gaps`), the lines counting those not
    compared, and one saying why a method has none compared when no count does (its
    ``reason``); none without an svm row."""
    parts, other, ambiguous, why = [], 0, 0, {}
    for s in summaries:
        v = s.get("vs_svm")
        if not v:
            continue
        other, ambiguous = other + v.get("other_claims", 0), ambiguous + v.get("ambiguous", 0)
        if not v["compared"]:
            if v.get("reason") and not v.get("other_claims") and not v.get("ambiguous"):
                why.setdefault(v["reason"], []).append(s["label"])
            continue
        named = ", ".join(f"r{rep}:{client} +{100 * gap:.1f}" for rep, client, gap in v["worst"])
        more = v["worse"] - len(v["worst"])
        parts.append(f"{s['label']} {v['worse']} of {v['compared']}"
                     + (f" ({named}{f', {more} more' if more else ''})" if named else ""))
    skipped = [f"{counted(n, 'client model')} not compared with the svm's: {reason}."
               for n, reason in ((other, OTHER_CLAIMS), (ambiguous, AMBIGUOUS)) if n]
    if why:
        skipped.append("not compared with the same client's svm: " + "; ".join(
            f"{', '.join(labels)}: {reason}" for reason, labels in why.items()) + ".")
    if not parts:
        return skipped
    by = 100 * next(s["vs_svm"]["worse_by"] for s in summaries if s.get("vs_svm"))
    return [f"client models more than {by:g} points above the EER of the same client's svm: "
            + "; ".join(parts) + "."] + skipped


def format_dev_eval(results):
    """The printed table of `ssgallery.biometrics.evaluation.dev_eval` (the dev HTER and
    the counts are in summary.json)."""
    head = ["method", "criterion", "threshold", "dev FAR %", "dev FRR %", "eval FAR %",
            "eval FRR %", "eval HTER %", "eval FTA %"]
    rows = []
    for r in results:
        crit = r["criterion"] + (f"={100 * r['target_far']:g}%" if r["criterion"] == "far" else "")
        d, e = r["dev"], r["eval"]
        rows.append([r["label"], crit, f"{r['threshold']:.6g}", _pct(d["far"]), _pct(d["frr"]),
                     _pct(e["far"]), _pct(e["frr"]), _pct(e["hter"]),
                     _pct(0.5 * (e["fta_genuine"] + e["fta_impostor"]))])
    return format_rows(head, rows, right=range(2, len(head))) + "\n" + _wrapped([
        ("One global threshold per method, chosen on the development scores, applied to the "
        "evaluation scores.")])


__all__ = [
    "CMC_PLOT",
    "CURVES",
    "DET_PLOT",
    "IDENTIFICATION_DET_PLOT",
    "PLOT",
    "SCORES_PLOT",
    "SUMMARY",
    "SUMMARY_HEAD",
    "check_report",
    "format_curves",
    "format_dev_eval",
    "format_identification_table",
    "format_table",
    "plot_curves",
    "plot_scores",
    "plot_title",
    "write_identification",
    "write_report",
]
