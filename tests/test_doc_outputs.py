"""The command outputs shown in the docs are what the commands print now.

``tools/doc_outputs.py --check`` runs `make demo`'s commands (read from the Makefile)
and the few more the pages show, in a scratch folder, and compares every
``<!-- doc-output: NAME -->`` block of README.md and docs/ with what they printed,
masking only what varies between two runs (a file's creation time, training seconds).
When this fails, run ``python tools/doc_outputs.py`` and commit the pages it rewrote.
"""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import doc_outputs


def test_demo_commands_are_the_makefiles():
    commands = doc_outputs.demo_commands()
    assert [c.split()[1] for c in commands] == ["enroll", "compress", "verify", "info", "show",
                                                "roc"]
    assert commands[2] == "ssgallery verify ../sample_data/probes/*.png --claim c03"
    assert set(doc_outputs.SESSION) == {c.split()[1] for c in commands}


def test_tables_are_cut_to_their_first_rows():
    text = ("client  m  threshold\n------  -  ---------\nc01     2     0.7882\n"
            "c02     2    -0.3006\nc03     2     0.2115\ngallery.h5: 3 clients, 2 prototypes\n")
    assert doc_outputs.shorten(text, rows=1).splitlines() == [
        "client  m  threshold", "------  -  ---------", "c01     2     0.7882", "...",
        "gallery.h5: 3 clients, 2 prototypes"]
    assert doc_outputs.shorten(text, rows=5) == text.rstrip("\n")  # nothing cut: no "..."
    assert doc_outputs.shorten(text, lines="^c0", head=2).splitlines() == [
        "c01     2     0.7882", "c02     2    -0.3006", "..."]


def test_only_what_varies_is_masked():
    a = "gallery g.h5: 20 clients, created 2026-11-26T16:30:06+00:00 by ssgallery 0.1.0"
    b = a.replace("16:30:06", "09:01:00")
    assert doc_outputs.masked(a) == doc_outputs.masked(b)
    assert doc_outputs.masked(a) != doc_outputs.masked(a.replace("20 clients", "21 clients"))
    wide = "svm      —  31.4 ± 12.5    9.80 [5.75, 14.11]       29.00          0.19"
    assert doc_outputs.masked(wide) == doc_outputs.masked(wide[:-4] + "1.07")
    assert doc_outputs.masked(wide) != doc_outputs.masked(wide.replace("29.00", "29.50"))


def test_fit_seconds_are_masked_where_failure_to_acquire_columns_follow_them():
    """roc --wide adds FTA columns after the fit seconds when a set has failures to
    acquire (the sample set at variation 0.55: 14 % of impostor probes): the seconds
    are masked by their header's column, the FTA figures stay checked."""
    head = ("method   m  FRR@FAR=1%  fit s/client  FTA genuine %  FTA impostor %\n"
            "-------  -  ----------  ------------  -------------  --------------\n")
    row = "svm      —        2.00          0.12           0.00           14.00\n"
    table = head + row + "—: FAR 0.1% is below the resolution\n"
    assert doc_outputs.masked(table) == doc_outputs.masked(table.replace(" 0.12", " 1.07"))
    assert doc_outputs.masked(table) != doc_outputs.masked(table.replace("14.00", "14.50"))
    assert doc_outputs.masked(table) != doc_outputs.masked(table.replace(" 2.00", " 2.50"))


def test_every_marked_block_is_known():
    names = set()
    for page in doc_outputs.pages():
        names |= {m.group("name") for m in doc_outputs.MARK.finditer(page.read_text("utf-8"))}
    assert names == {"session"} | set(doc_outputs.EXTRA)


def test_doc_outputs_are_current():
    res = subprocess.run([sys.executable, str(REPO / "tools" / "doc_outputs.py"), "--check"],
                         capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-6000:]
    assert not re.search(r"Traceback", res.stderr)


def test_the_recorded_terminal_is_checked_bars_aside(tmp_path):
    long = "thresholds: " + "x" * 120
    raw = {"ssgallery compress --m 2": f"client  m\n------  -\nc01     2\n{long}\n"}
    screen = ["$ ssgallery compress --m 2",
              "training clients  [####################]  20/20  1.74 clients/s",
              "client  m", "------  -", "c01     2", long[:100], long[100:], "$", "",
              "# while it ran (the bars as they were drawn, with the rate and ETA):",
              "training clients  [####----------------]  4/20  00:00:05  1.6 clients/s"]
    path = tmp_path / "terminal.txt"
    path.write_text("\n".join(screen) + "\n")
    assert doc_outputs.terminal_problems(raw, path) == []
    raw["ssgallery compress --m 2"] = raw["ssgallery compress --m 2"].replace("c01", "c02")
    problem, = doc_outputs.terminal_problems(raw, path)
    assert "-c01     2" in problem and "+c02     2" in problem
    assert doc_outputs.terminal_problems({}, path) == [
        "'ssgallery compress --m 2' is not one of make demo's commands"]
