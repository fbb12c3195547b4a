"""Failure to acquire of the eigenface matcher in roc's protocol: genuine and impostor claims refused.

Each row runs docs/security.md's command, `ssgallery roc FACES --methods svm,ssvm --m 2
--repetitions 5 --no-plot --no-identification` (the program, in a fresh folder), on a
face set: AT&T (half of the 40 subjects enrolled with 5 training images per
repetition), sample_data/faces (`synth --seed 0 --variation 0.55`) and `synth --seed 0`
(variation 1: sample_data before 2f21ea4), and reads the report's summary.json:
`fta_genuine` (genuine claims whose probe failed to acquire: a false rejection at every
threshold) and `fta_impostor` (impostor claims: a correct rejection, never an accept),
over the 5 repetitions, with the claim counts (`n_genuine`, `n_impostor`; the same for
svm and ssvm, whose probes are the same). Every probe is a face, so both should be 0.

`--baseline REF` runs the same commands with the ``ssgallery`` package of commit REF
(`_results.archive_tree`): 5cd4b9b is main before 644eeb4, whose limits were calibrated
on held-out folds of images instead of people (docs/security.md, "Probes must be
faces").

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/fta.py [--sets att,sample,synth-v1] \
        [--baseline 5cd4b9b]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import OUT, REPO, archive_tree, docstring, markdown_table, pct, write_page

ROC = ["roc", "--methods", "svm,ssvm", "--m", "2", "--repetitions", "5", "--no-plot",
       "--no-identification"]  # --repetitions N replaces the 5 (the smoke test's 1)
SETS = {  # name: (label, face folder as docs/security.md's command names it)
    "att": ("AT&T, 5 repetitions, 20 clients x 5 training images", "ATT_DIR"),
    "sample": ("sample_data (`synth --seed 0 --variation 0.55`), 5 repetitions",
               "sample_data/faces"),
    "synth-v1": (("`synth synth_v1 --seed 0` (variation 1, sample_data before 2f21ea4), "
                  "5 repetitions"), "synth_v1/faces"),
}


def _ssgallery(args, cwd, tree=None):
    """``python -m ssgallery ARGS`` in ``cwd`` (with the package of ``tree`` first on the
    path when given); stops the script with its stderr when it fails."""
    env = dict(os.environ, **({"PYTHONPATH": str(tree)} if tree else {}))
    res = subprocess.run([sys.executable, "-m", "ssgallery", *map(str, args)], cwd=cwd,
                         env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"ssgallery {' '.join(map(str, args))}: exit {res.returncode}\n{res.stderr}")
    return res


def faces_of(name, work):
    """The face folder of set ``name`` (synth-v1 is drawn into ``work``)."""
    if name == "att":
        from ssgallery.datasets import att_faces_path

        return Path(att_faces_path())
    if name == "sample":
        return REPO / "sample_data" / "faces"
    _ssgallery(["synth", work / "synth_v1", "--seed", "0", "--variation", "1", "-q"], work)
    return work / "synth_v1" / "faces"


def measure(faces, work, tree=None):
    """{fta_genuine, fta_impostor, n_genuine, n_impostor} of the roc command on
    ``faces`` (``tree``: another commit's package)."""
    out = Path(tempfile.mkdtemp(prefix="roc-", dir=work))
    _ssgallery([*ROC[:1], faces, *ROC[1:], "-o", out / "report"], out, tree)
    methods = json.loads((out / "report" / "summary.json").read_text())["methods"]
    keys = ("fta_genuine", "fta_impostor", "n_genuine", "n_impostor")
    figures = [{k: m[k] for k in keys} for m in methods]
    if any(f != figures[0] for f in figures):
        sys.exit(f"methods disagree on the claims' FTA: {figures}")
    return figures[0]


def cell(f, kind):
    n = f[f"n_{kind}"]
    return f"{pct(f[f'fta_{kind}'])} % ({round(f[f'fta_{kind}'] * n)} / {n})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="att,sample,synth-v1")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--baseline", default=None, metavar="REF",
                        help="also run the commands with the ssgallery package of commit REF")
    args = parser.parse_args()
    ROC[ROC.index("--repetitions") + 1] = str(args.repetitions)
    head = ["data", "command", "genuine FTA % (claims)", "impostor FTA % (claims)"]
    if args.baseline:
        head += [f"genuine FTA % at {args.baseline}", f"impostor FTA % at {args.baseline}"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ssg-fta-", dir=OUT if OUT.is_dir() else None) \
            as tmp:
        work = Path(tmp)
        old = archive_tree(args.baseline, work / "baseline") if args.baseline else None
        for name in [s for s in args.sets.split(",") if s]:
            label, shown = SETS[name]
            faces = faces_of(name, work)
            now = measure(faces, work)
            row = [label, f"`ssgallery {ROC[0]} {shown} {' '.join(ROC[1:])}`",
                   cell(now, "genuine"), cell(now, "impostor")]
            if old is not None:
                before = measure(faces, work, old)
                row += [cell(before, "genuine"), cell(before, "impostor")]
            print(f"{name}: {row[2:]}", file=sys.stderr, flush=True)
            rows.append(row)
    write_page("fta", "Failure to acquire in roc's protocol (eigenface)",
               markdown_table(head, rows), notes=docstring(__doc__))


if __name__ == "__main__":
    main()
