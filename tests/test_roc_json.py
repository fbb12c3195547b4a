"""``roc --json`` prints summary.json as roc wrote it, read back after the rename: that read
is input like any other (a regular file, bounded, a JSON object of roc's), since whoever
can write the report folder can swap the file in between. A real process, the swap made
by an audit hook at roc's open of the file (no code of ssgallery replaced)."""

import json
import os
import subprocess
import sys

import pytest

SWAP = """
import sys
sys.path.insert(0, {tests!r})
from helpers import opens_of
from ssgallery.cli import main
out, scores, other = sys.argv[1:4]
with opens_of(out + "/summary.json", swap_in=other):
    main(["roc", "--scores", scores, "-o", out, "--no-plot", "-q", "--json"],
         prog_name="ssgallery")
"""


@pytest.mark.parametrize(("swapped", "problem"), [
    ("fifo", "report summary is a FIFO (named pipe), expected a regular file"),
    ("other", "changed since roc wrote it (not a summary written by ssgallery roc)"),
    ("junk", "changed since roc wrote it (Expecting value: line 1 column 1 (char 0))")])
def test_roc_json_reads_its_summary_back_as_input(tmp_path, swapped, problem):
    """On main the read back was a blocking open(): a FIFO swapped in for summary.json hung
    'roc --json' until killed (here: 20 s), and another JSON object was printed as the
    report (exit 0). Now one line naming the file, exit 2."""
    scores = tmp_path / "s.txt"
    scores.write_text("a a p1 0.9\na b p2 0.1\nb b p3 0.8\nb a p4 0.2\n")
    other = tmp_path / "swapped"
    if swapped == "fifo":
        os.mkfifo(other)
    else:
        other.write_text(json.dumps({"tool": "other"}) if swapped == "other" else "junk")
    out = tmp_path / "out"
    code = SWAP.format(tests=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", code, str(out), str(scores), str(other)],
                          capture_output=True, text=True, timeout=20, check=False,
                          cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == f"ssgallery: error: {out}/summary.json: {problem}\n"
