"""Benchmark result pages: each benchmark writes its own page of the documentation site.

NOTE TO BENCHMARK AUTHORS: end your script with one call of :func:`write_page`, e.g.::

    from _results import markdown_table, write_page
    write_page("my_bench", "What it measures", markdown_table(head, rows),
               notes="One paragraph: protocol, convention of each column.",
               output=printed_text, figures=[png_path])

or, for a script that prints its tables, keep what it prints as the page::

    if __name__ == "__main__":
        with printed() as out:
            main()
        write_page("my_bench", "What it measures", notes=docstring(__doc__),
                   output=out.getvalue())

It writes ``docs/benchmarks/<name>.md`` with the figures, the exact command that
produced them (from ``sys.argv`` and ``OMP_NUM_THREADS``), the git commit
(``git rev-parse --short HEAD``, ``-dirty`` when the tree has changes) and the date, and
rewrites ``docs/benchmarks/index.md`` listing every page. Commit the generated pages
(they are docs) and add new ones to the ``nav`` of ``mkdocs.yml``. Numbers quoted in the
README must come from one of these pages. Pages are plain markdown: no measured number
is typed by hand.

``$SSGALLERY_BENCH_PAGES`` (pages) and ``$SSGALLERY_BENCH_OUT`` (figures, caches, saved
results: `OUT`, default ``benchmarks/out``) send a run's files elsewhere;
tests/test_benchmarks_smoke.py runs every script on tiny sizes that way.
"""

import contextlib
import datetime
import io
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ssgallery.safeio import env_text

REPO = Path(__file__).resolve().parent.parent
# $SSGALLERY_BENCH_PAGES / $SSGALLERY_BENCH_OUT send the pages and the scripts' other
# outputs (figures, caches, saved results) elsewhere: the smoke test's temporary folder
PAGES = Path(env_text("SSGALLERY_BENCH_PAGES") or REPO / "docs" / "benchmarks")
OUT = Path(env_text("SSGALLERY_BENCH_OUT") or REPO / "benchmarks" / "out")
_MARK = "<!-- written by benchmarks/_results.py: rerun the command to update, do not edit -->"


def git_commit(repo=REPO):
    """Short commit id of ``repo``'s HEAD, with ``-dirty`` when tracked files changed
    (the generated pages under ``docs/benchmarks`` do not count)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                ":(exclude)docs/benchmarks")
    return commit + ("-dirty" if dirty else "")


def archive_tree(ref, where, repo=REPO):
    """The ``ssgallery`` package of commit ``ref`` (``git archive``) extracted into the new
    folder ``where``, to run with ``PYTHONPATH=where`` (a baseline for before/after
    figures); returns ``where``."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "ssgallery"],
                             check=True, capture_output=True).stdout
    where = Path(where)
    where.mkdir()
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def command_line(argv=None):
    """The command as typed from the repository root, with ``OMP_NUM_THREADS`` if set."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    try:
        argv[0] = str(script.relative_to(REPO))
    except ValueError:
        pass
    threads = os.environ.get("OMP_NUM_THREADS")
    prefix = f"OMP_NUM_THREADS={threads} " if threads else ""
    return prefix + "python " + shlex.join(argv)


def pct(value, digits=2):
    """A rate as a percentage for a table cell ("—" for None: unresolvable or not run)."""
    return "—" if value is None else f"{100 * value:.{digits}f}"


def markdown_table(head, rows):
    """A markdown table from a header and rows of cells (converted with ``str``)."""
    esc = lambda cell: str(cell).replace("|", "\\|")
    lines = ["| " + " | ".join(map(esc, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(esc, row)) + " |" for row in rows]
    return "\n".join(lines)


def text_table(text):
    """A markdown table from a fixed-width text table whose columns are separated by
    at least two spaces. The line of dashes under the header is skipped, and so are the
    lines after the rows that are not rows of the table (a note under roc's table):
    a row has a blank wherever the rule has one."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    rule = next((i for i, ln in enumerate(lines) if set(ln) <= {"-", " "}), None)
    if rule is not None:
        gaps = [i for i, ch in enumerate(lines[rule]) if ch == " "]
        rows = itertools.takewhile(
            lambda ln: all(i >= len(ln) or ln[i] == " " for i in gaps), lines[rule + 1:])
        lines = lines[:rule] + list(rows)
    cells = [re.split(r"\s{2,}", ln.strip()) for ln in lines]
    return markdown_table(cells[0], cells[1:])


class _Tee(io.TextIOBase):
    def __init__(self, stream):
        self.stream, self.text = stream, io.StringIO()

    def write(self, s):
        self.text.write(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()


@contextlib.contextmanager
def printed():
    """Copy what is printed to stdout inside the block into a StringIO (yielded)."""
    tee, saved = _Tee(sys.stdout), sys.stdout
    sys.stdout = tee
    try:
        yield tee.text
    finally:
        sys.stdout = saved


def docstring(doc):
    """A script's docstring without its first line, as a preformatted block (it is
    plain text, not markdown)."""
    body = doc.split("\n", 1)[1].strip("\n") if "\n" in doc else ""
    return f"```text\n{body}\n```" if body.strip() else ""


def save_results(name, data):
    """Write ``data`` as indented JSON to ``OUT/<name>/results.json`` (`OUT`:
    ``benchmarks/out`` or ``$SSGALLERY_BENCH_OUT``), making the folder; returns the path."""
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def write_page(name, title, table_markdown="", notes="", command=None, output=None,
               figures=()):
    """Write ``docs/benchmarks/<name>.md`` and refresh the index; returns the page path.

    ``table_markdown`` is the results table (see :func:`markdown_table`,
    :func:`text_table`); ``notes`` markdown under it (protocol, conventions);
    ``command`` defaults to :func:`command_line`; ``output`` is the script's printed
    text, shown verbatim; ``figures`` are image files copied beside the page
    (``<name>-<file name>``).
    """
    PAGES.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# {title}", "", _MARK, "",
             "```bash", command or command_line(), "```", "",
             (f"Commit `{git_commit()}`, {now}, {os.cpu_count()} CPUs "
              f"(load average {os.getloadavg()[0]:.1f} when written), "
              f"Python {platform.python_version()}."), "", table_markdown.strip(), ""]
    if notes:
        parts += [notes.strip(), ""]
    for fig in map(Path, figures):
        if fig.exists():
            target = PAGES / f"{name}-{fig.name}"
            shutil.copyfile(fig, target)
            parts += [f"![{title}]({target.name})", ""]
    if output:
        parts += ["Printed output:" if table_markdown.strip() else "", "",
                  "```text", output.strip(), "```", ""]
    page = PAGES / f"{name}.md"
    page.write_text("\n".join(parts))
    write_index()
    print(f"wrote {os.path.relpath(page, REPO)}")
    return page


def write_index():
    """``docs/benchmarks/index.md``: a table of every benchmark page with its headline
    figures, read from the pages (`_index`)."""
    from _index import INTRO, index_text

    text = ["# Benchmarks", "", _MARK, "", INTRO, "", index_text(PAGES.glob("*.md"))]
    (PAGES / "index.md").write_text("\n".join(text) + "\n")
