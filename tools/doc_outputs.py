"""The command outputs shown in the docs, written from what the commands print.

Every docs block that shows what a command prints sits between two markers::

    <!-- doc-output: NAME -->
    ```console
    $ ssgallery ...
    ...
    ```
    <!-- /doc-output -->

This script runs `make demo`'s commands (read from the Makefile's ``demo`` target, so
the session in the docs is the demo's) in a scratch folder beside ``sample_data/``,
then the few more commands the pages show (`EXTRA`), with ``OMP_NUM_THREADS=1`` and no
progress lines, and writes every block from what they printed (stdout and stderr in
the order printed; long tables shortened to their first rows and "..."). Usage::

    python tools/doc_outputs.py              # rewrite the blocks of README.md and docs/
    python tools/doc_outputs.py --check      # exit 1 with a diff when a block is stale
    python tools/doc_outputs.py --keep DIR   # also keep the demo folder (DIR/demo_out)

``--check`` (tests/test_doc_outputs.py runs it in CI) compares after masking only what
must vary between two runs (`VOLATILE`: a file's creation time, training seconds). It
also checks the terminal session recorded by ``tools/record_terminal.sh``
(docs/sessions/terminal.txt): the lines it shows, progress bars aside, must be what the
same commands print now.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MARK = re.compile(r"(<!-- doc-output: (?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)"
                  r"(<!-- /doc-output -->)", re.DOTALL)
# what differs between two runs of the same commands on the same code, masked by --check
VOLATILE = [
    (re.compile(r"created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-]\d\d:\d\d"), "created <time>"),
    (re.compile(r"(?m)(  +)\d+\.\d\d$"), r"\1<fit s>"),  # roc --wide's last column
    # the scratch folder, named in full where a gallery's header names its store
    (re.compile(r"/\S*/demo_out/"), "<scratch>/demo_out/"),
]

# The Makefile's demo commands, in order: the comment shown beside each and how its
# output is shortened (rows: table rows kept; lines: regex of the lines kept).
SESSION = {
    "enroll": {"comment": "faces/<client>/*.png -> enrollment.h5 (PCA fitted)"},
    "compress": {"comment": "per client: SVM -> 2 virtual prototypes -> gallery.h5",
                 "rows": 3},
    "verify": {"comment": "2 matches per probe", "status": True},
    "info": {"comment": "the gallery, its calibration, bytes per client", "rows": 3},
    "show": {"comment": "the prototypes rendered as images, with their beta"},
    "roc": {"comment": "the paper's protocol vs baselines"},
}

# blocks shown as ``text`` (scrolled sideways on the site: a table wider than a page);
# ``console`` blocks wrap their long lines as a terminal does (docs/stylesheets/wide.css)
SCROLL = {"roc-wide"}

MIXED_CLAIMS = ("../sample_data/probes/c03_genuine_1.png c03\n"
                "../sample_data/probes/c01_genuine_2.png c03\n"
                "../sample_data/probes/c02_genuine_1.png c99\n")

# name -> the commands run after the demo, in its folder, each with how its output is
# shortened (``echo $?`` shows the previous command's exit status)
EXTRA = {
    "claims": [("cat mixed.txt", {}), ("ssgallery verify --claims mixed.txt", {}),
               ("echo $?", {})],
    "verify-one": [("ssgallery verify ../sample_data/probes/c03_genuine_1.png --claim c03", {}),
                   ("ssgallery verify ../sample_data/probes/c03_genuine_1.png --claim c99", {})],
    "info-calibration": [("ssgallery info", {
        "lines": r"^(thresholds|expected FRR|1:N search|ssgallery: warning)"})],
    "roc-wide": [("ssgallery roc --scores report/scores/*.txt --wide -o wide",
                  {"lines": r"^(?!wrote to)"})],
    "roc-training-probes": [
        ("ssgallery roc --gallery gallery.h5 --probes ../sample_data/faces -o training_report",
         {"lines": r"^(ssgallery: warning|identification |method |-------|gallery )"})],
    "small-gallery": [  # one line: tests/test_doc_examples.py runs each in a fresh folder
        (("ssgallery enroll ../sample_data/faces --clients c01,c02,c03 --store few.h5 -q && "
          "ssgallery compress --store few.h5 -o few_gallery.h5 --m 2 -q"),
         {"lines": r"^ssgallery: warning: the thresholds rest"})],
    "identify": [("ssgallery identify ../sample_data/probes/*.png --top 3 --open-set",
                  {"head": 14}),
                 ("echo $?", {})],
    "identify-stranger": [("ssgallery identify ../sample_data/probes/unknown*.png --open-set",
                           {})],
}


# ----------------------------------------------------------------------- running

def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSGALLERY_")}
    return env | {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "OMP_NUM_THREADS": "1",
                  "PYTHONUNBUFFERED": "1", "COLUMNS": "100",
                  "LC_ALL": "C.UTF-8",  # the shell sorts probes/*.png alike everywhere
                  "SSGALLERY_PROGRESS_INTERVAL": "86400"}  # no progress lines


def demo_commands(makefile=REPO / "Makefile"):
    """The ``ssgallery ...`` commands of the Makefile's demo target, in order."""
    text = makefile.read_text(encoding="utf-8")
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.MULTILINE).group(1)
    return [m.group(1).strip() for m in re.finditer(r"\.\./\$\(BIN\)/(ssgallery [^;\n]*)",
                                                     recipe)]


def run(command, folder, status=None):
    """(output, exit status) of ``command`` in bash in ``folder``; stdout and stderr
    in the order printed. ``echo $?`` prints ``status``, the previous command's."""
    if command == "echo $?":
        return f"{status}\n", 0
    res = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=folder, env=_env(),
                         stdout=subprocess.PIPE, text=True, timeout=1800, check=False)
    if res.returncode not in (0, 1, 2, 3) or "Traceback" in res.stdout:
        raise SystemExit(f"doc_outputs: '{command}' failed ({res.returncode}):\n{res.stdout}")
    return res.stdout, res.returncode


# ----------------------------------------------------------------------- shortening

def _gaps(rule):
    return [i for i, ch in enumerate(rule) if ch == " "]


def _is_row(line, rule):
    gaps = _gaps(rule)
    return bool(line.strip()) and not line.startswith(" ") and all(
        i >= len(line) or line[i] == " " for i in gaps)


def shorten(text, rows=None, lines=None, head=None):
    """``text`` with each table cut to its first ``rows`` rows and "...", only the
    lines matching ``lines``, or the first ``head`` lines and "..."."""
    out = text.rstrip("\n").splitlines()
    if lines is not None:
        out = [ln for ln in out if re.search(lines, ln)]
    if head is not None and len(out) > head:
        out = out[:head] + ["..."]
    if rows is not None:
        cut, i = [], 0
        while i < len(out):
            cut.append(out[i])
            if re.fullmatch(r"-+(  -+)*", out[i]):
                j = i + 1
                while j < len(out) and _is_row(out[j], out[i]):
                    j += 1
                cut += out[i + 1:min(j, i + 1 + rows)] + (["..."] if j - i - 1 > rows else [])
                i = j
                continue
            i += 1
        out = cut
    return "\n".join(out)


def _prompt(command, comment=None):
    return f"$ {command}  # {comment}" if comment else f"$ {command}"


# ----------------------------------------------------------------------- the blocks

def session(folder, raw=None):
    """The getting-started session: every demo command with its (shortened) output;
    ``raw`` gets each command's whole output."""
    parts = []
    for command in demo_commands():
        name = command.split()[1]
        spec = SESSION.get(name, {})
        text, status = run(command, folder)
        if raw is not None:
            raw[command] = text
        block = [_prompt(command, spec.get("comment")),
                 shorten(text, rows=spec.get("rows"))]
        if spec.get("status"):
            block += [_prompt("echo $?", "0 every claim accepted, 1 some rejected, 2 error"),
                      str(status)]
        parts.append("\n".join(b for b in block if b))
    return "\n\n".join(parts)


def extra(name, folder):
    parts, status = [], 0
    for command, spec in EXTRA[name]:
        text, status = run(command, folder, status)
        parts += [_prompt(command), shorten(text, **spec)]
    return "\n".join(p for p in parts if p)


def blocks(folder, raw=None):
    """{name: text of the block} from a run of the demo in ``folder``."""
    out = {"session": session(folder, raw)}
    (folder / "mixed.txt").write_text(MIXED_CLAIMS, encoding="utf-8")
    for name in EXTRA:
        out[name] = extra(name, folder)
    return out


def make_blocks(keep=None, raw=None):
    with tempfile.TemporaryDirectory(prefix="doc_outputs_") as tmp:
        root = Path(keep) if keep else Path(tmp)
        folder = root / "demo_out"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        if not (root / "sample_data").exists():
            (root / "sample_data").symlink_to(REPO / "sample_data", target_is_directory=True)
        return blocks(folder, raw)


# ----------------------------------------------------------------------- the recording

TERMINAL = REPO / "docs" / "sessions" / "terminal.txt"  # tools/record_terminal.sh
BAR = re.compile(r"  \[[#-]+\]  ")  # a progress bar's line (click's)


def terminal_problems(raw, path=TERMINAL, columns=100):
    """How the recorded terminal session differs from what its commands print now,
    bars aside (their rates vary): [] when it shows the same lines, wrapped at
    ``columns`` as the terminal wrapped them."""
    name = os.path.relpath(path, REPO)
    if not path.exists():
        return [f"{name} is missing"]
    shown, command = {}, None
    for line in path.read_text(encoding="utf-8").split("\n\n# while it ran")[0].splitlines():
        if line.rstrip() == "$":  # the prompt after the last command
            command = None
        elif line.startswith("$ "):
            command = line[2:].strip()
            shown[command] = []
        elif command and not BAR.search(line):
            shown[command].append(line.rstrip())
    problems = []
    for command, lines in shown.items():
        if command not in raw:
            problems.append(f"'{command}' is not one of make demo's commands")
            continue
        want = [chunk.rstrip() for line in raw[command].splitlines()
                for chunk in ([line[i:i + columns] for i in range(0, len(line), columns)]
                              or [""])]
        if masked("\n".join(lines)) != masked("\n".join(want)):
            problems.append("".join(difflib.unified_diff(
                [ln + "\n" for ln in lines], [ln + "\n" for ln in want],
                f"{name}: {command}", "(as it prints now)")))
    return problems


# ----------------------------------------------------------------------- the pages

def pages():
    return [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))


def rewrite(text, made, seen):
    def one(m):
        name = m.group("name")
        if name not in made:
            raise SystemExit(f"doc_outputs: no block named '{name}' (known: {sorted(made)})")
        seen.add(name)
        fence = "text" if name in SCROLL else "console"
        return f"{m.group(1)}```{fence}\n{made[name]}\n```\n{m.group(4)}"

    return MARK.sub(one, text)


FIT_SECONDS = "fit s/client"  # roc --wide's training-seconds column


def _masked_line(line, span):
    """One line with `VOLATILE` masked; under a ``roc --wide`` header (``span``: its fit
    seconds column) that column instead, which is not the last one when failure-to-acquire
    columns follow it (a set with FTAs), so that the figures after it stay checked."""
    if span and re.fullmatch(r" *\d+\.\d\d", line[span[0]:span[1]]) \
            and line[span[1]:span[1] + 1] in ("", " ", "\n"):
        return line[:span[0]] + "<fit s>".rjust(span[1] - span[0]) + line[span[1]:]
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return line


def masked(text):
    out, span = [], None
    for line in text.splitlines(keepends=True):
        if FIT_SECONDS in line:
            start = line.index(FIT_SECONDS)
            span = (start, start + len(FIT_SECONDS))
        elif not line.strip() or not line[:1].strip() or line.startswith("—"):
            span = None  # the table ended
        out.append(_masked_line(line, span))
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare, write nothing; exit 1 when a block is stale")
    parser.add_argument("--keep", metavar="DIR", help="run the demo in DIR/demo_out and keep it")
    args = parser.parse_args(argv)
    raw = {}
    made = make_blocks(args.keep, raw)
    seen, stale = set(), []
    for page in pages():
        old = page.read_text(encoding="utf-8")
        new = rewrite(old, made, seen)
        if masked(new) == masked(old):
            continue
        if args.check:
            stale.append("".join(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True),
                f"{page.relative_to(REPO)} (in the docs)", "(as the commands print it now)")))
        else:
            page.write_text(new, encoding="utf-8")
            print(f"doc_outputs: rewrote {page.relative_to(REPO)}")
    unused = sorted(set(made) - seen)
    if unused:
        raise SystemExit(f"doc_outputs: blocks no page shows: {unused}")
    recording = terminal_problems(raw)
    if recording:  # tmux may be missing here: never rewritten by this script
        print("".join(recording) + "\ndoc_outputs: the recorded terminal session is stale; "
              "run tools/record_terminal.sh (needs tmux) and commit it", file=sys.stderr)
    if stale:
        print("".join(stale) + "\ndoc_outputs: the blocks above are stale; run "
              "'python tools/doc_outputs.py' and commit the pages", file=sys.stderr)
    return 1 if stale or (recording and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
