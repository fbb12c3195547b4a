"""Every command example of the docs and of the ``--help`` texts runs.

The examples are collected from the code blocks of README.md and docs/*.md (the
benchmark pages and the generated reference excepted) and from the "Examples:" and
"Typical session" sections of every command's help. Each runs in bash, in a fresh copy
of a workspace that holds the files the examples name, made from the sample data
(``faces/`` = sample_data/faces c01-c08, ``probes/`` = sample_data/probes flat and by
subject, ``enrollment.h5``, ``gallery.h5``, ``site.h5``, score files, claims files...).
An example must end with a documented status: 0, 1 (verify: a claim rejected;
identify: a probe unknown) or 3 (a failure to acquire); where the docs show the error
it prints (a ``ssgallery: error:`` line after the command), status 2 and that line.

An example that cannot run here (a matcher program, a Dask cluster, real data, a key at
a fixed path) is listed in `EXCLUDED` with the reason; a new example that is in neither
fails `test_every_example_is_run_or_excluded` until it is made to run or listed.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.cli import main

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
BIN = Path(sys.executable).parent
COMMAND = re.compile(r"^(?:\$ )?((?:(?:cut|cat|echo) [^|]*\| )?ssgallery "
                     r"(?:enroll|compress|verify|identify|info|show|synth|roc)\b.*)$")

EXCLUDED = {
    ("help enroll", ('ssgallery enroll faces/ --matcher external --matcher-cmd "my-matcher '
     '--model net.bin"')): "needs a matcher program (tests/test_external.py runs one)",
    ("help enroll", "ssgallery enroll faces/ --privacy-key-file /etc/ssgallery/privacy.key"):
        "needs a key file at a fixed path (tests/test_encryption.py)",
    ("help compress", 'ssgallery compress --matcher-cmd "my-matcher --model net.bin"'):
        "needs a matcher program and its store (tests/test_black_box_workflow.py runs one)",
    ("help compress", ("ssgallery compress --privacy-key-file /etc/ssgallery/privacy.key "
     "--protect-templates")): "needs a key file at a fixed path (tests/test_encryption.py)",
    ("help info", "ssgallery info --gallery site.h5 --key-file /etc/ssgallery/sign.key"):
        "needs a key file at a fixed path (tests/test_info_signature.py)",
    ("help synth", "ssgallery synth huge --identities 10000 --images 6 --jobs 2"):
        "renders 60,000 images (minutes)",
    ("docs/external-matcher.md", ('ssgallery enroll faces/ --matcher external --matcher-cmd '
     '"python3 /opt/mad.py"')): "needs the matcher program /opt/mad.py",
    ("docs/external-matcher.md", "ssgallery compress"):
        "part of the /opt/mad.py session",
    ("docs/external-matcher.md", "ssgallery verify probe.png --claim c03"):
        "part of the /opt/mad.py session",
    ("docs/guide.md", "ssgallery enroll faces"): "the error shown needs a broken faces/ "
        "(tests/test_cli_errors.py)",
    ("docs/guide.md", "ssgallery enroll faces --strict"): "the error shown needs a face of "
        "another size (tests/test_cli_errors.py)",
    ("docs/guide.md", "ssgallery enroll empty"): "the error shown needs an empty folder "
        "(tests/test_cli_errors.py)",
    ("docs/guide.md", ("ssgallery roc [FACES_DIR] [--m 1,2,5] [--methods svm,ssvm,svm-red,"
     "svm-sel] [-o report/]")): "a synopsis",
    ("docs/guide.md", "ssgallery roc --scores FILE..."): "a synopsis",
    ("docs/guide.md", "ssgallery roc --gallery gallery.h5 --probes DIR"): "a synopsis",
    ("docs/guide.md", "ssgallery enroll lfw_faces/ --matcher dlib"): "needs LFW (real data)",
    ("docs/guide.md", "ssgallery compress --m 2"): "part of the LFW session",
    ("docs/guide.md", "ssgallery verify probe.png --claim Some_Person"):
        "part of the LFW session",
    ("docs/scale.md", "ssgallery compress --scheduler tcp://HOST:8786"): "needs a Dask cluster",
    ("docs/scale.md", ("ssgallery compress --store enrollment.h5 -o gallery.h5 --scheduler "
     "tcp://SCHEDULER_HOST:8786")): "needs a Dask cluster",
    ("docs/scale.md", "ssgallery compress --scheduler tcp://127.0.0.1:8786"):
        "needs a Dask cluster (tests/test_scale.py starts one)",
    ("docs/scale.md", "ssgallery synth big --identities 10000 --images 6 --jobs 2"):
        "renders 60,000 images (minutes)",
}
# compress, roc's protocol and synth train or render for tens of seconds: marked slow
SLOW = re.compile(r"ssgallery (synth|compress|roc(?! --(scores|dev-scores|gallery)))\b")


# ----------------------------------------------------------------------- collecting

def _doc_pages():
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def _code_lines(text):
    """(index, line) of the lines of fenced and indented code blocks of a markdown text."""
    fence, indented, blank = False, False, True
    for i, line in enumerate(text.splitlines()):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif fence:
            yield i, line
        elif line.startswith("    ") and (blank or indented):
            indented = True
            yield i, line[4:]
        elif line.strip():
            indented = False
        blank = not line.strip()


def _strip_comment(command):
    return re.split(r"\s{2,}#|\s+#\s", command)[0].strip()


def _expected(lines, k):
    """(status, stderr line) a console block shows after the command on line ``k``: an
    error line (status 2), or ``$ echo $?`` and the status (None: not shown)."""
    j = k + 1
    while j < len(lines) and not lines[j].startswith("$ "):
        if lines[j].startswith("ssgallery: error:"):
            return 2, lines[j]
        j += 1
    if j + 1 < len(lines) and lines[j].startswith("$ echo $?") \
            and re.fullmatch(r"\d+", lines[j + 1].strip()):
        return int(lines[j + 1]), None
    return None, None


def doc_examples():
    """[(source, command, expected status or None, expected stderr line or None)]."""
    out = []
    for page in _doc_pages():
        text = page.read_text(encoding="utf-8")
        code = list(_code_lines(text))
        lines = [line for _, line in code]
        for k, line in enumerate(lines):
            found = COMMAND.match(line.strip())
            if found:
                status, err = _expected(lines, k) if line.startswith("$ ") else (None, None)
                out.append((os.fspath(page.relative_to(REPO)), _strip_comment(found.group(1)),
                            status, err))
    return out


def help_examples():
    """The example lines of every command's --help and of the group's."""
    out = []
    for name, cmd in [("", main)] + sorted(main.commands.items()):
        lines = (cmd.help or "").splitlines()
        for line in lines:
            found = COMMAND.match(line.strip())
            if found:
                out.append((f"help {name}".strip(), _strip_comment(found.group(1)), None, None))
    return out


ALL = doc_examples() + help_examples()
RUN = [e for e in ALL if (e[0], e[1]) not in EXCLUDED]


def test_every_example_is_run_or_excluded():
    found = {(source, command) for source, command, _, _ in ALL}
    assert len(RUN) >= 40, len(RUN)
    assert not set(EXCLUDED) - found, f"stale exclusions: {sorted(set(EXCLUDED) - found)}"


# ----------------------------------------------------------------------- the workspace

def _score_table(seed, shift, method, m=None):
    from ssgallery.biometrics.scores import Scores

    rng = np.random.default_rng(seed)
    claimed, real, score = [], [], []
    for c in ("c01", "c02", "c03"):
        for s in rng.normal(2.0 + shift, 1.0, 10):
            claimed.append(c), real.append(c), score.append(s)
        for i, s in enumerate(rng.normal(0.0, 1.0, 120)):
            claimed.append(c), real.append(f"c{4 + i % 5:02d}"), score.append(s)
    return Scores(method, m, 0, np.array(claimed), np.array(real),
                  np.array([f"p{i}" for i in range(len(score))]), np.array(score))


def _link_subjects(src, dst, names):
    dst.mkdir(parents=True)
    for name in names:
        (dst / name).symlink_to(src / name, target_is_directory=True)


def _probes(dst):
    """Flat probe files (``probes/*.png``) and the same by subject (``roc --probes``)."""
    dst.mkdir()
    for p in sorted((SAMPLE / "probes").glob("*.png")):
        shutil.copy(p, dst / p.name)
        subject = p.name.split("_")[0]
        (dst / subject).mkdir(exist_ok=True)
        shutil.copy(p, dst / subject / p.name)


def _scores(ws):
    from ssgallery.biometrics.scores import format_scores, write_scores

    (ws / "report" / "scores").mkdir(parents=True)
    write_scores(ws / "report" / "scores" / "ssvm-m2.r0.txt", _score_table(0, 0.0, "ssvm", 2))
    write_scores(ws / "report" / "scores" / "svm.r0.txt", _score_table(1, 0.2, "svm"))
    (ws / "dev.txt").write_text(format_scores(_score_table(2, 0.0, "x")))
    (ws / "eval.txt").write_text(format_scores(_score_table(3, -0.3, "x")))
    for side, seed in (("dev", 4), ("eval", 6)):
        (ws / side).mkdir()
        for k, method in enumerate(("pca", "lda")):
            (ws / side / f"{method}.txt").write_text(
                format_scores(_score_table(seed + k, 0.5 * k, method)))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The files the examples name; examples run in copies under ``runs/``, whose
    ``../sample_data`` is the repository's."""
    root = tmp_path_factory.mktemp("examples")
    ws = root / "ws"
    faces = [f"c{i:02d}" for i in range(1, 9)]
    _link_subjects(SAMPLE / "faces", ws / "faces", faces)
    _link_subjects(SAMPLE / "faces", ws / "new_faces", faces + ["c09", "c10"])
    _link_subjects(SAMPLE / "faces", ws / "impostors", ["c11", "c12"])
    _probes(ws / "probes")
    shutil.copy(SAMPLE / "probes" / "c03_genuine_1.png", ws / "probe.png")
    flat = sorted(f"probes/{p.name}" for p in (ws / "probes").glob("*.png"))
    (ws / "probes.txt").write_text("\n".join(flat) + "\n")
    genuine = [p for p in flat if "_genuine_" in p]
    (ws / "claims.txt").write_text("".join(f"{p} {p.split('/')[1][:3]}\n" for p in genuine))
    (ws / "mixed.txt").write_text("../sample_data/probes/c03_genuine_1.png c03\n"
                                  "../sample_data/probes/c01_genuine_2.png c03\n"
                                  "../sample_data/probes/c02_genuine_1.png c99\n")
    (ws / "today.csv").write_text("".join(f"{p},c03,2026-11-26\n" for p in flat))
    _scores(ws)
    runner = CliRunner()
    for args in (["enroll", str(ws / "faces"), "--store", str(ws / "enrollment.h5"), "-q"],
                 ["compress", "--store", str(ws / "enrollment.h5"), "-o",
                  str(ws / "gallery.h5"), "-q"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 0, res.output
    shutil.copy(ws / "gallery.h5", ws / "site.h5")
    (root / "runs").mkdir()
    (root / "runs" / "sample_data").symlink_to(SAMPLE, target_is_directory=True)
    return ws


def _run(workspace, command):
    folder = workspace.parent / "runs" / f"run{len(os.listdir(workspace.parent / 'runs'))}"
    shutil.copytree(workspace, folder, symlinks=True)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               OMP_NUM_THREADS="1")
    return subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.mark.parametrize(
    "source,command,status,error",
    [pytest.param(*e, marks=[pytest.mark.slow] if SLOW.search(e[1]) else [],
                  id=f"{e[0]}: {e[1]}") for e in RUN])
def test_example_runs(workspace, source, command, status, error):
    res = _run(workspace, command)
    where = f"{source}: {command}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    if error is not None:  # the message, up to what depends on the gallery's size
        assert res.returncode == status, where
        assert res.stderr.splitlines()[0].split(" (")[0] == error.split(" (")[0], where
        return
    if status is not None:  # the status the docs show
        assert res.returncode == status, where
    else:
        assert res.returncode in (0, 1, 3), where
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, where
