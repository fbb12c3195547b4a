"""``docs/benchmarks/index.md``: one row per benchmark page with its headline figures.

The figures are read from the pages themselves (their markdown tables and printed
output), never typed: `HEADLINES` says, per page, which cells make its headline. When
a page is rewritten by its script, the index is rewritten with it
(`_results.write_page` calls `write_index`), and tests/test_benchmarks_index.py fails
when the committed index is not what `index_text` makes of the committed pages, or when
a page has no headline (a new page needs an entry here; a page whose table changed
shape needs its entry mended).
"""

import re
from pathlib import Path

INTRO = ("Each page is written by the benchmark script it names, with the exact command, "
         "the commit, the date and the machine's load; rerun the command to update it. "
         "Ratios are measured side by side in one run. The headline figures below are "
         "read from the pages by `benchmarks/_index.py` when a page is written.")


class Missing(LookupError):
    """A figure the page does not have (any more)."""


def _split(line):
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(text):
    """The markdown tables of a page: lists of {column: cell} rows."""
    out, lines = [], text.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|(---\|)+", lines[i + 1].strip()) \
                and (i == 0 or not lines[i - 1].startswith("|")):
            head, rows = _split(lines[i]), []
            for line in lines[i + 2:]:
                if not line.startswith("|"):
                    break
                rows.append(dict(zip(head, _split(line))))
            out.append(rows)
    return out


def cell(text, first, column, *, where=None):
    """The cell of column ``column`` (its exact title) in the first row whose first
    cell is ``first`` (and whose other cells match ``where``: {column: value})."""
    for rows in tables(text):
        for row in rows:
            values = list(row.values())
            if values and values[0] == first and column in row and all(
                    row.get(k) == v for k, v in (where or {}).items()):
                return row[column]
    raise Missing(f"no cell '{column}' in a row '{first}'")


def grab(text, pattern, group=1):
    """The first match of ``pattern`` in the page (its printed output included)."""
    found = re.search(pattern, text, re.MULTILINE)
    if not found:
        raise Missing(f"nothing matches {pattern!r}")
    return found.group(group)


def _balance(text, chosen):
    """ebgm_balance's headline: per seed, compress's and the ``chosen`` arm's mean EER
    (models worse > 5) and the SVM's, from each seed's summary table."""
    def row(seed, name, group=1):
        return grab(text, rf"^Seed {seed} \((?:.*\n)+?\s+{re.escape(name)}\s+(\S+)\s+(\d+)",
                    group)

    def seed_cell(seed):
        svm = grab(text, rf"^Seed {seed} \((?:.*\n)+?\s+svm\s+(\S+)")
        return (f"seed {seed} {row(seed, 'compress')} ({row(seed, 'compress', 2)}) -> "
                f"{row(seed, chosen)} ({row(seed, chosen, 2)}) ({svm})")

    return (f"AT&T, EBGM, mean client EER (models more than 5 points worse), compress -> "
            f"{chosen} (SVM): " + ", ".join(
                seed_cell(s) for s in re.findall(r"^Seed (\d+) \(", text, re.MULTILINE)))


def _before_after(text, heading, before, after):
    """``"B -> A (S)"``: the mean EER of rows ``before`` and ``after`` and of ``svm`` in
    the summary table under the line that starts with ``heading`` (`ebgm_tail.summary`)."""
    def row(name):
        return grab(text, rf"^{re.escape(heading)}(?:.*\n)+?\s+{re.escape(name)}\s+(\S+)")

    return f"{row(before)} -> {row(after)} ({row('svm')})"


def _paper_att(t):
    # (mean client EER, matches, the full SVM's m): the page's own table, or roc --wide's
    # (its EER column is the client mean with its interval, "1.36 [0.95, 1.80]")
    for eer, matches, dash in (("client EER %", "matches/claim", "-"),
                               ("EER % [95% CI]", "matches", "—")):
        try:
            svm, ssvm = (cell(t, m, eer, where={"m": k}).split(" [")[0] for m, k in
                         (("svm", dash), ("ssvm", "2")))
            return (f"AT&T, eigenface: mean client EER {ssvm} % at m = 2 vs {svm} % for "
                    f"the full SVM ({cell(t, 'svm', matches)} matches per claim)")
        except Missing:
            continue
    raise Missing("no mean client EER column")


def _paper_lfw(t):
    parts = []
    for matcher in ("eigenface", "dlib"):
        col = f"{matcher} client EER %"
        try:
            parts.append(f"{matcher}: SVM {cell(t, 'svm', col)} %, SSVM m = 2 "
                         f"{cell(t, 'ssvm m=2', col)} % (mean client EER)")
        except Missing:
            continue
    if not parts:
        raise Missing("no matcher's column")
    return "LFW, " + "; ".join(parts)


def _paper_lfw_dlibbox(t):
    rows = [r for rows in tables(t) for r in rows if r.get("arm") == "black box"]
    svm = next(r for r in rows if r["method"] == "svm")
    ssvm = [r for r in rows if r["method"].startswith("ssvm")]
    if not ssvm:
        raise Missing("no ssvm row of the black box")
    # compress's black-box training: the swapped start (since "auto"), else varpro, at
    # a black box's default m (BLACK_BOX_M) when the page has it
    from ssgallery.learn.defaults import BLACK_BOX_M

    default = [r for r in ssvm if r["method"].endswith(f"m={BLACK_BOX_M}")] or ssvm
    shown = next((r for key in ("swap", "varpro") for r in default if key in r["method"]),
                 default[0])
    text = (f"LFW, dlib as a black-box program: mean client EER {shown['method']} "
            f"{shown['client EER %']} % vs SVM {svm['client EER %']} % ({shown['matches']} "
            f"vs {svm['matches']} matches per claim, {shown['> 5 worse'].split('/')[-1]} "
            "clients)")
    fewer = next((r for r in ssvm if "swap" in r["method"] and r is not shown
                  and float(r["matches"]) < float(shown["matches"])), None)
    if fewer is not None:  # what fewer matches cost
        text += (f"; {fewer['method']} {fewer['client EER %']} %, "
                 f"{fewer['> 5 worse'].replace('/', ' of ')} clients more than 5 points "
                 "worse")
    return text


def _scale_row(measure):
    return lambda t: f"{measure}: {cell(t, measure, 'value')}"


def _scale(t):
    rows = [r for rows in tables(t) for r in rows]
    ratio = next(r["value"] for r in rows if r["measure"].startswith("per-client training"))
    capped = [r for r in rows if r["measure"].startswith("peak RSS of compress")][-1]
    return (f"per-client training time, largest vs smallest store: {ratio}; "
            f"{capped['measure'].split(' (')[0]}: {capped['value']}")


def _start_choice(t):
    """ebgm_tail's suspect 6 per seed: held-out start choice vs the genuine rule (all
    client models), or nothing on a page without it."""
    seeds = re.findall(r"^Suspect 6:.*seed (\d+)", t, re.MULTILINE)
    parts = [f"seed {s} " + grab(t, rf"^Suspect 6:.*seed {s} (?:.*\n)+?\s+held-out choice\s+(\S+)")
             + " vs " + grab(t, rf"^Suspect 6:.*seed {s} (?:.*\n)+?\s+genuine rule\s+(\S+)")
             for s in seeds]
    return "; start chosen on held-out images vs genuine rule, all models: " + ", ".join(parts) \
        if parts else ""


def _inside(text, pool="person"):
    """``synth a / b of n, att ...``: the strangers page's runs inside the interval
    counting claims and inside the one by impostor person (its coverage lines)."""
    lines = re.findall(rf"^- (\S+), `{pool}`: .* claims in (\d+) of (\d+) runs, .* "
                       r"person in (\d+) of", text, re.MULTILINE)
    if not lines:
        raise Missing("no coverage lines")
    return ", ".join(f"{d} {a} / {b} of {n}" for d, a, n, b in lines)


def _frr_inside(text):
    """``synth a / b of n, att ...``: the strangers page's runs whose fresh genuine FRR
    lies inside the interval counting claims and inside the one by client."""
    lines = re.findall(r"^- (\S+): the fresh genuine FRR inside the interval counting "
                       r"claims in (\d+) of (\d+) runs .* by client in (\d+) of", text,
                       re.MULTILINE)
    if not lines:
        raise Missing("no FRR coverage lines")
    return ", ".join(f"{d} {a} / {b} of {n}" for d, a, n, b in lines)


_PERSON = {"run": "0", "pool": "`person`"}
_HALVES = {"run": "0", "pool": "`halves`"}
_XDOMAIN = {"run": "0", "matcher": "eigenface", "background": "none",
            "model": "ssvm, compress's thresholds", "strangers": "AT&T"}
_XDOMAIN_LFW = dict(_XDOMAIN, strangers="LFW")

def _sample_difficulty(t):
    v = grab(t, r"^committed: sample_data/ is seed 0 at variation (\S+)")
    frr = lambda name: grab(t, rf"^{re.escape(name)}\s+\d+\s+(\S+)")
    return (f"make demo's expected FRR on seed 0: variation 1 {frr('seed 0, variation 1')} %, "
            f"{v} (sample_data) {frr(f'seed 0, variation {v}')} %; AT&T, 40 clients "
            + grab(t, r"^AT&T all \d+\s+\d+\s+(\S+)") + " %")


HEADLINES = {
    "client_far": lambda t: "; ".join(
        f"{d}: {bad} clients accept strangers above 2 x target, {hit} named by their "
        f"held-out interval ({fine} named wrongly)" for d, bad, hit, fine in re.findall(
            r"^- (\S+): (\d+) over-acceptors .*?interval rule names \d+ \((\d+) "
            r"over-acceptors, (\d+) fine\)", t, re.MULTILINE)) or None,
    "calibration": lambda t: (
        "achieved FAR at target 1 % on unseen impostors, AT&T: "
        f"{cell(t, 'att', 'achieved FAR % (mean ± sd)', where={'mode': '`znorm-global`'})} % "
        "(znorm-global) vs "
        f"{cell(t, 'att', 'achieved FAR % (mean ± sd)', where={'mode': '`client-v0`'})} % "
        "(per client, before)"),
    "strangers": lambda t: (
        "stranger FAR at target 1 %, run 0, synth (20 clients, 300 strangers): "
        f"{cell(t, 'synth', 'measured FAR % [95 % over people]', where=_PERSON)} % "
        "(info's interval by impostor person "
        f"{cell(t, 'synth', '[95 % by impostor person] (design effect; info)', where=_PERSON)}"
        "; halves, before: "
        f"{cell(t, 'synth', 'measured FAR % [95 % over people]', where=_HALVES)} %); "
        f"inside the interval counting claims / by person (runs): {_inside(t)}; "
        f"FRR on fresh genuine images inside claims / by client: {_frr_inside(t)}"),
    "frr_heldout": lambda t: (
        "AT&T, 10 galleries pooled, FRR % at the stored thresholds: compress's expected "
        f"{cell(t, 'att', 'expected (compress) [95 % by client]', where={'run': 'all'})}, "
        "the same held-out images out of the basis "
        f"{cell(t, 'att', 'out of the basis [95 % by client]', where={'run': 'all'})}, "
        f"the shipped models on new images {cell(t, 'att', 'shipped, new', where={'run': 'all'})}"),
    "strangers_twoway": lambda t: "; ".join(
        f"{d}: stranger FAR inside by person {a} of {n}, by person and client {b} of {n} "
        f"(mean width {wa} vs {wb} points)" for d, a, n, wa, b, wb in re.findall(
            r"^- (\S+): the measured FAR inside the interval by impostor person (\d+) of "
            r"(\d+) .*?mean width (\S+) points\), by person and client (\d+) of \d+ "
            r"\(.*?mean width (\S+) points\)", t, re.MULTILINE)) or None,
    "strangers_xdomain": lambda t: (
        "AT&T strangers on 20 LFW clients, eigenface, run 0, target 1 %: "
        f"{cell(t, 'lfw-att', 'measured FAR % [95 % over people]', where=_XDOMAIN)} % "
        "accepted (LFW strangers "
        f"{cell(t, 'lfw-att', 'measured FAR % [95 % over people]', where=_XDOMAIN_LFW)} %)"),
    "defaults": lambda t: (
        "SSVM - SVM mean client EER with the default stop rule: worst "
        f"{cell(t, 'rel-2e-3 (default)', 'worst')} pp, mean "
        f"{cell(t, 'rel-2e-3 (default)', 'mean')} pp over 8 set/matcher/m cells"),
    "dlib_fta": lambda t: (
        "LFW, rule 'any detection': genuine FTA "
        + grab(t, r"^LFW: 158 people(?:.*\n)+?\s+any detection\s+\S+\s+([\d.]+ %)")
        + ", non-faces accepted "
        + grab(t, r"^LFW: 158 people(?:.*\n)+?\s+any detection(?:\s+\S+){6}\s+(\d+/\d+)")),
    "ebgm_tail": lambda t: (
        "AT&T, EBGM, mean EER of the tail's client models: SVM "
        + grab(t, r"^Tail:(?:.*\n)+?\s+svm\s+(\S+)") + ", start "
        + grab(t, r"^Tail:(?:.*\n)+?\s+start\s+(\S+)") + ", 30 sweeps p=5 eta 2 "
        + grab(t, r"^Tail:(?:.*\n)+?\s+30 sweeps p=5 eta 2\s+(\S+)") + _start_choice(t)),
    "ebgm_detect": lambda t: (
        "AT&T, EBGM, ROC AUC for telling the client models more than 5 points worse than "
        "their SVM, held-out gap / mirror misfit: " + ", ".join(
            f"seed {s} " + grab(t, rf"^seed {s}:(?:.*\n)+?\s+held-out gap\s+(\S+)") + " / "
            + grab(t, rf"^seed {s}:(?:.*\n)+?\s+mirror misfit\s+(\S+)")
            for s in re.findall(r"^seed (\d+):", t, re.MULTILINE))),
    "ebgm_swaps": lambda t: (
        "AT&T, EBGM, unmoved mean client EER, start -> 3 swaps; compress's black-box "
        "default (SVM): " + ", ".join(
            f"seed {s} " + grab(t, rf"^Unmoved starts, seed {s} (?:.*\n)+?\s+start\s+(\S+)")
            + " -> " + grab(t, rf"^Unmoved starts, seed {s} (?:.*\n)+?\s+swaps 3\s+(\S+)")
            + "; " + grab(t, rf"^Unmoved starts, seed {s} (?:.*\n)+?\s+compress\s+(\S+)")
            + " (" + grab(t, rf"^Unmoved starts, seed {s} (?:.*\n)+?\s+svm\s+(\S+)") + ")"
            for s in re.findall(r"^Unmoved starts, seed (\d+)", t, re.MULTILINE))),
    "ebgm_balance": lambda t: _balance(t, grab(t, r"^chosen on seed \d+: (lam_sum \S+)")),
    "blackbox_small": lambda t: (
        "mean client EER of black-box galleries, 3 swaps whatever the impostors -> "
        "compress (no swap with one impostor person) (SVM): " + ", ".join(
            f"{m} {n} people " + _before_after(t, f"{m}: galleries of {n} people",
                                               "3 swaps", "compress")
            for m, n in re.findall(r"^(\w+): galleries of (\d+) people", t, re.MULTILINE))),
    "ebgm_office": lambda t: (
        "AT&T, EBGM, compress's black-box defaults by gallery size, mean client EER, "
        "--m 2 -> default m 5 (SVM): " + ", ".join(
            f"{n} people " + _before_after(t, f"Galleries of {n} people", "m 2", "default")
            for n in re.findall(r"^Galleries of (\d+) people", t, re.MULTILINE))),
    "ebgm_throughput": lambda t: (
        "200 x 200 batch: " + grab(t, r"200 x 200\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d+)")
        + " pairs/s wall, " + grab(t, r"200 x 200\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+(\d+)")
        + " pairs per CPU-second"),
    "external_serve": lambda t: (
        "program starts per client, one-shot vs --serve (L1, 50 clients): "
        f"{cell(t, 'L1 example', 'starts/client one-shot')} vs "
        f"{cell(t, 'L1 example', 'starts/client serve')}; speed-up "
        f"{cell(t, 'L1 example', 'speed-up')}"),
    "fta": lambda t: (
        "impostor claims failing to acquire (eigenface, roc): AT&T "
        + cell(t, "AT&T, 5 repetitions, 20 clients x 5 training images",
               "impostor FTA % (claims)") + ", sample_data "
        + cell(t, "sample_data (`synth --seed 0 --variation 0.55`), 5 repetitions",
               "impostor FTA % (claims)")),
    "identify": lambda t: (
        f"rank-1, AT&T: SSVM m = 2 {cell(t, 'AT&T, eigenface', 'rank-1 % SSVM m=2')} % vs "
        f"SVM {cell(t, 'AT&T, eigenface', 'rank-1 % SVM')} % with "
        f"{cell(t, 'AT&T, eigenface', 'ratio')} fewer evaluations per search; 10,000 "
        f"identities: {cell(t, '10,000', 'speed-up')} faster"),
    "lookalike_pairs": lambda t: "; ".join(
        f"{d}: pairs flagged at compress time accepted on unseen claims "
        f"{cell(t, d, '(a) precision: flagged pairs accepted on test')}, recall "
        f"{cell(t, d, '(a) recall: look-alike on test, flagged')}, meets the bar: "
        f"{cell(t, d, 'meets the bar')}" for d in ("att", "lfw")),
    "open_set": lambda t: (
        "strangers' searches returning someone, LFW dlib, all clients: "
        + cell(t, "lfw (dlib) all", "achieved FPIR % (mean ± sd)", where={
            "arm": "operating point"}) + " % at the 1:N operating point (target 1 %) vs "
        + cell(t, "lfw (dlib) all", "achieved FPIR % (mean ± sd)", where={
            "arm": "verification thresholds"}) + " % with the verification thresholds"),
    "open_set_strangers": lambda t: (
        "AT&T eigenface, 30 clients: FPIR the strangers met inside / below / above the "
        "interval info prints "
        + cell(t, "att (eigenface) all", "achieved inside / below / above the interval")
        + " splits; people identified in any split "
        + cell(t, "att (eigenface) all",
               "people identified in any split / strangers in any split")),
    "paper_att": _paper_att,
    "paper_att_ebgm": lambda t: (
        "AT&T, EBGM, m = 5: EER SSVM " + grab(t, r"^ssvm\s+EER\s+([\d.]+ %)") + " vs SVM "
        + grab(t, r"^svm\s+EER\s+([\d.]+ %)") + " (" + grab(t, r"^svm\s+EER.*?matches\s+([\d.]+)")
        + " matches per claim)"),
    "paper_lfw": _paper_lfw,
    "paper_lfw_dlibbox": _paper_lfw_dlibbox,
    "regression_distill": lambda t: (
        "age: ridge teacher MAE " + cell(t, "age", "ridge teacher MAE")
        + ", SRidge m = 10 " + cell(t, "age", "SRidge m = 10: MAE (vs teacher)",
                                     where={"settings (cumulative)": "+ n_init 3"})),
    "scale": _scale,
    "scale_accuracy": lambda t: (
        "impostor cap K = 600 vs uncapped, mean client EER: synthetic "
        + cell(t, "mean client EER, synthetic 400 identities, eigenface (2,400 training "
               "images, 100 clients x 3 seeds), --impostors sample, K = 600 vs all", "value")
        + "; LFW eigenface "
        + cell(t, "mean client EER, LFW, eigenface (1,695 training images, 158 clients x 3 "
               "seeds), --impostors sample, K = 600 vs all", "value")),
    "scale_parallel": lambda t: (
        "--jobs 2 vs 1: " + cell(t, "--jobs 2 vs --jobs 1, 200 clients of 200 identities",
                                 "value")
        + "; Dask: " + cell(t, "Dask LocalCluster (2 workers x 1 thread) vs serial", "value")),
    "scale_regimes": lambda t: (
        "uncapped 100 identities, fold refits vs --no-refit-matcher: CPU per client "
        + cell(t, "refit vs --no-refit-matcher, 100 identities: CPU per client", "value")
        + ", peak RSS "
        + cell(t, "refit vs --no-refit-matcher, 100 identities: peak RSS", "value")),
    "sample_difficulty": lambda t: _sample_difficulty(t),
    "small_galleries": lambda t: (
        "strangers' claims accepted at target FAR 1 % (znorm-global), AT&T: 3 clients "
        + cell(t, "3", "strangers' claims accepted % (mean ± sd)",
               where={"background": "0", "mode": "`znorm-global`"})
        + " %, 3 + 17 background people "
        + cell(t, "3", "strangers' claims accepted % (mean ± sd)",
               where={"background": "17", "mode": "`znorm-global`"})
        + " %, 20 clients "
        + cell(t, "20", "strangers' claims accepted % (mean ± sd)",
               where={"background": "0", "mode": "`znorm-global`"}) + " %"),
    "solvers": lambda t: (
        "varpro vs Algorithm 1 (m = 1, class init): "
        + grab(t, r"^\s+1 varpro\s+class\s+\S+\s+\S+\s+\d+\s+(\S+)")
        + "x the similarity evaluations"),
    "table1": lambda t: (
        "synth-age MAE (#prototypes): SRidge " + cell(t, "SRidge", "synth-age")
        + " vs Ridge " + cell(t, "Ridge", "synth-age")),
    "teacher_bound": lambda t: (
        "LFW eigenface teachers whose C has no free SV: "
        + grab(t, r"^lfw/libsvm\s+(\d+)") + " before, " + grab(t, r"^lfw/pass\s+(\d+)")
        + " now; SSVM m=2 mean client EER AT&T "
        + grab(t, r"^att/libsvm(?:\s+\S+){3}\s+(\S+)") + " -> "
        + grab(t, r"^att/pass(?:\s+\S+){3}\s+(\S+)") + " %, LFW "
        + grab(t, r"^lfw/libsvm(?:\s+\S+){3}\s+(\S+)") + " -> "
        + grab(t, r"^lfw/pass(?:\s+\S+){3}\s+(\S+)") + " %"),
    "teacher_att": lambda t: (
        "EER with C by plain CV accuracy vs the balanced rule (gamma paper): "
        + grab(t, r"^paper\s+plain accuracy(?:\s+\d+){5}\s+(\S+)") + " vs "
        + grab(t, r"^paper\s+balanced rule(?:\s+\d+){5}\s+(\S+)")),
    "template_privacy": lambda t: (
        "replay of plain prototypes accepted (AT&T): "
        + cell(t, "att / eigenface", "replay plain % (clients / prototypes)")
        + " %, protected " + cell(t, "att / eigenface", "replay protected %") + " %"),
    "toy_fig2": lambda t: (
        "sign agreement with the SVM at m = 2, median over draws: SSVM "
        + grab(t, r"^ssvm\s+\S+\s+(\S+)") + ", SVM-sel " + grab(t, r"^svm-sel\s+\S+\s+(\S+)")),
    "verify_latency": lambda t: (
        "verify start-up " + re.sub(r"\s+", " ", grab(
            t, r"this tree, 20 clients\s+(\d+ ms\s+\S+ floor)")) + " of Python's imports"
        + "; " + grab(t, r"(\d+ probes/s); [\d.]+ ms per extra probe")
        + " in one process"),
}


def headline(name, text):
    """The page's headline figures, or ``None`` when `HEADLINES` cannot read them."""
    try:
        return HEADLINES[name](text)
    except (KeyError, Missing, StopIteration):
        return None


def _measured(text):
    found = re.search(r"Commit `[^`]+`, (\d{4}-\d\d-\d\d)[^,]*, \d+ CPUs"
                      r"(?: \(load average ([\d.]+))?", text)
    if not found:
        return ""
    return found.group(1) + (f", load {found.group(2)}" if found.group(2) else
                             " (load not recorded)")


def index_text(pages):
    """The index page for the benchmark pages ``pages`` (their paths)."""
    rows = ["| benchmark | headline figures | measured |", "|---|---|---|"]
    for page in sorted(map(Path, pages), key=lambda p: p.name):
        if page.name == "index.md":
            continue
        text = page.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ") if text else page.stem
        figures = headline(page.stem, text) or "—"
        rows.append(f"| [{title}]({page.name}) | {figures.replace('|', '/')} | "
                    f"{_measured(text)} |")
    return "\n".join(rows)
