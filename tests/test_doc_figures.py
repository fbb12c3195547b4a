"""Figures the docs quote from a benchmark page are the page's.

Numbers in the README and docs come from the pages under docs/benchmarks/
(docs/contributing.md); a page is rewritten whenever its script runs, a sentence that
quotes it is not. Each test reads a page's table and puts its figures into the phrases
that quote them: a re-run that moves a figure fails here until the sentence says what
the page shows (d112fe1 does the same for the FRR note's figures).
"""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _text(name):
    """A docs page with its line breaks and runs of spaces as single spaces."""
    return " ".join((DOCS / name).read_text("utf-8").split())


def _calibration():
    """docs/benchmarks/calibration.md's table: (data set, target FAR, mode) -> the row's
    cells by column name (a "mean ± sd" cell gives its mean, and its sd under the column's
    name + " sd")."""
    lines = (DOCS / "benchmarks" / "calibration.md").read_text("utf-8").splitlines()
    table = [ln for ln in lines if ln.startswith("| ")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[1:]:
        cells = dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True))
        key = (cells[head[0]], cells["target FAR"], cells["mode"].strip("`"))
        rows[key] = {name: cell.split(" ± ")[0] for name, cell in cells.items()}
        rows[key].update({name + " sd": cell.split(" ± ")[1] for name, cell in cells.items()
                          if " ± " in cell})
    return rows


FAR, FRR, EXPECTED = "achieved FAR % (mean ± sd)", "FRR %", "expected FAR %"

# docs page, phrase with {} for each figure, then the figures' (set, target, mode, column)
CALIBRATION_QUOTES = [
    ("operating-points.md",
     "at F = 1 % on AT&T (eigenface) {} % of unseen impostors are accepted",
     [("att", "1.0 %", "znorm-global", FAR)]),
    ("operating-points.md",
     "`client` {} %, `shrink` {} %, per-client thresholds without the refits {} %), at {} % FRR",
     [("att", "1.0 %", m, FAR) for m in ("client", "shrink", "client-v0")]
     + [("att", "1.0 %", "znorm-global", FRR)]),
    ("operating-points.md", "against {} %; on LFW (dlib)", [("att", "1.0 %", "client-v0", FRR)]),
    ("operating-points.md",
     ("on LFW (dlib) {} % at F = 1 % and {} % at F = 0.1 % (`client` {} %, `shrink` {} %), at "
     "{} % and {} % FRR"),
     [("lfw", "1.0 %", "znorm-global", FAR), ("lfw", "0.1 %", "znorm-global", FAR),
      ("lfw", "0.1 %", "client", FAR), ("lfw", "0.1 %", "shrink", FAR),
      ("lfw", "1.0 %", "znorm-global", FRR), ("lfw", "0.1 %", "znorm-global", FRR)]),
    ("operating-points.md",
     "one repetition) {} % at F = 0.1 % (`client` {} %), at a high FRR ({} %)",
     [("synth400", "0.1 %", "znorm-global", FAR), ("synth400", "0.1 %", "client", FAR),
      ("synth400", "0.1 %", "znorm-global", FRR)]),
    ("operating-points.md", "(`client`'s is {} % at 1 % on AT&T)",
     [("att", "1.0 %", "client", EXPECTED)]),
    ("operating-points.md", "0.1 % on both sets measured there (`shrink` {} % on LFW)",
     [("lfw", "0.1 %", "shrink", FAR)]),
    ("scale.md",
     ("[calibration page](benchmarks/calibration.md) measures {} +- {} % (`client` {} %, "
     "without refits {} %)"),
     [("att", "1.0 %", "znorm-global", FAR), ("att", "1.0 %", "znorm-global", FAR + " sd"),
      ("att", "1.0 %", "client", FAR), ("att", "1.0 %", "client-v0", FAR)]),
]


@pytest.mark.parametrize("page, phrase, figures", CALIBRATION_QUOTES,
                         ids=[f"{q[0][:-3]}-{i}" for i, q in enumerate(CALIBRATION_QUOTES)])
def test_the_calibration_page_s_figures_are_quoted_as_measured(page, phrase, figures):
    rows = _calibration()
    values = [rows[key[:3]][key[3]] for key in figures]
    shown = [f"{float(v):.0f}" if v in ("0.00", "0.0") else v for v in values]
    assert phrase.format(*shown) in _text(page), phrase.format(*values)


def _twoway():
    """docs/benchmarks/strangers_twoway.md's lines under its table, per data set: the runs
    inside each interval and its mean width (``p`` by impostor person, ``pc`` by person
    and client), and the two-way design effects of its runs."""
    page = (DOCS / "benchmarks" / "strangers_twoway.md").read_text("utf-8")
    out = {}
    for name, p_in, p_w, pc_in, pc_w in re.findall(
            r"^- (\w+): the measured FAR inside the interval by impostor person (\d+) of 10 "
            r"\([^;]*; mean width ([\d.]+) points\), by person and client (\d+) of 10 "
            r"\([^;]*; mean width ([\d.]+) points\)", page, re.MULTILINE):
        out[name] = {"p_in": p_in, "p_w": p_w, "pc_in": pc_in, "pc_w": pc_w}
    rows = [ln.strip("|").split("|") for ln in page.splitlines()
            if ln.startswith(("| synth", "| att"))]
    out["d_one"] = sum(re.search(r"\(([\d.]+)\)", r[5]).group(1) == "1.00" for r in rows)
    out["runs"] = len(rows)
    return out


def test_operating_points_quotes_the_two_way_interval_page():
    """docs/operating-points.md's sentence on clustering by client too quotes
    docs/benchmarks/strangers_twoway.md: the mean widths, the runs whose two-way design
    effect is 1.00, and the runs each interval holds."""
    w = _twoway()
    s, a = w["synth"], w["att"]
    assert s["pc_in"] == s["p_in"]  # "for both"
    phrase = (f"(mean width {s['pc_w']} against {s['p_w']} points on the synthetic galleries, "
              f"{a['pc_w']} against {a['p_w']} on AT&T; design effect 1.00 in {w['d_one']} of "
              f"{w['runs']} runs) and holds the strangers' FAR no more often ({s['pc_in']} of "
              f"10 synthetic runs for both, {a['pc_in']} of 10 AT&T runs against {a['p_in']} "
              f"of 10)")
    assert phrase in _text("operating-points.md"), phrase


def test_the_held_out_frr_page_s_pooled_at_t_row_is_quoted_as_measured():
    """docs/operating-points.md and docs/getting-started.md quote
    docs/benchmarks/frr_heldout.md's pooled AT&T row: compress's expected FRR, the shipped
    models' on new images, the fold models' on new images and on the held-out images out
    of the basis (the FRR note of compress and info is tied to the same row by
    tests/test_operating_cost.py)."""
    page = (DOCS / "benchmarks" / "frr_heldout.md").read_text("utf-8")
    row = next(ln for ln in page.splitlines() if ln.startswith("| att | all |"))
    cells = [c.strip().split()[0] for c in row.strip("|").split("|")]
    expected, out_of_basis, fold_new, shipped = cells[2], cells[3], cells[4], cells[7]
    assert (f"compress's expected FRR was {expected} %, the shipped models rejected "
            f"{shipped} % of the new images. The fold models themselves rejected only "
            f"{fold_new} % of the new images, and {out_of_basis} % of the very images they "
            f"held out") in _text("operating-points.md"), row
    assert (f"{expected} % expected where they rejected {shipped} % of the clients' new "
            f"images") in _text("getting-started.md"), row


def _lookalike_rows():
    """docs/benchmarks/lookalike_pairs.md's summary table: data set -> cells by column."""
    lines = (DOCS / "benchmarks" / "lookalike_pairs.md").read_text("utf-8").splitlines()
    table = [ln for ln in lines if ln.startswith("| ")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[1:]:
        if line.startswith("| data set"):  # the per-run table
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(head, cells, strict=True))
    return rows


def test_operating_points_quotes_the_look_alike_pairs_page():
    """docs/operating-points.md's paragraph on look-alike pairs quotes
    docs/benchmarks/lookalike_pairs.md: flagged pairs accepted again on new images, the
    deployed model's accepts of the images the fold models accepted, and the clients named
    that were over-acceptors."""
    rows = _lookalike_rows()
    got = lambda d, col: rows[d][col].split(" (")[0].replace(" / ", " of ")
    acc, fit = "(a) precision: flagged pairs accepted on test", (
        "flagged: held-out accepts / deployed model's accepts of the same images")
    named = "(b) clients named that are over-acceptors"
    held = {d: rows[d][fit].split(" / ")[0] for d in rows}
    deployed = {d: rows[d][fit].split(" / ")[1].split(" of ") for d in rows}
    phrases = [
        (f"accepted again: {got('att', acc)} flagged pairs on AT&T (eigenface, "
        f"{rows['att']['runs']} runs), {got('lfw', acc)} on LFW (dlib, {rows['lfw']['runs']} "
        f"runs), {got('synth', acc)} on the synthetic galleries"),
        (f"it accepted {deployed['att'][0]} of the {deployed['att'][1]} images of AT&T's "
        f"flagged pairs that the fold models had accepted {held['att']} times, and "
        f"{deployed['lfw'][0]} of {deployed['lfw'][1]} ({held['lfw']}) on LFW"),
        (f"over-acceptor on strangers in {got('att', named)} cases on AT&T and "
        f"{got('lfw', named)} on LFW")]
    text = _text("operating-points.md")
    for phrase in phrases:
        assert phrase in text, phrase
    assert all(rows[d]["meets the bar"] == "no" for d in ("att", "lfw"))  # "below the half"


def test_scale_quotes_the_calibration_page_s_synth400_compress_time():
    """docs/scale.md's job-timeout paragraph quotes docs/benchmarks/calibration.md's
    synth400 compress time per repetition (its 100 clients): the page's line, not a
    figure typed once (it said 51 s after the page measured 54)."""
    page = (DOCS / "benchmarks" / "calibration.md").read_text("utf-8")
    line = next(ln for ln in page.splitlines() if ln.startswith("- **synth400**"))
    clients = re.search(r"(\d+) clients", line).group(1)
    seconds = re.search(r"compress (\d+) s per repetition", line).group(1)
    phrase = (f"measured ({seconds} s for the {clients} clients of synth400, "
              "[calibration](benchmarks/calibration.md))")
    assert phrase in _text("scale.md"), line
