"""The seeded suite: what a refactor must not move, run before and after it.

A change meant to move no output (a function split, a module split, one helper for two
twins) is checked by running the same seeded commands with the code before and after,
and comparing every file they wrote and printed. The commands (`COMMANDS`) run the
command line as a program on ``sample_data/`` with ``OMP_NUM_THREADS=1``: enroll (and
``--add``), four compress runs (``--json``, modes, solvers, ``--m auto``, a signing key),
info of each gallery and of the store, identify in its five modes (closed set,
``--open-set``, ``--fpir``, ``--threshold``, ``--verification-thresholds``) with text,
``--json`` and ``--csv`` on two galleries, verify (text, ``--json``, ``--csv``,
``--claims``), and roc (the protocol, ``--wide`` with every method at m 1 and 2,
``--scores``, ``--gallery --probes``, ``--dev-scores``/``--eval-scores``). Each
command's stdout, stderr and exit status are files beside what it wrote. Usage::

    python tools/seeded_suite.py run OUT_A --rev main    # main's code (git archive)
    python tools/seeded_suite.py run OUT_B               # this working tree's code
    python tools/seeded_suite.py compare OUT_A OUT_B     # exit 1 when a file differs

``compare`` counts the files that are byte-identical and those equal once what differs
between two runs of the same code is masked (`masked`): a creation time, the output
folder's own name, JSON keys naming seconds (a calibration record's salt and the
people ids salted with it are compared: the salt is a digest of the store since 9cd665d),
roc's ``fit s/client``
column and, in HDF5 files, the ``created``/``digest``/``hmac`` attributes (every
dataset and other attribute is compared). Two runs of one commit give no differing file. About two
minutes on two idle cores.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FACES = REPO / "sample_data" / "faces"
PROBES = sorted(str(p) for p in (REPO / "sample_data" / "probes").glob("*.png"))
KEY = "key.bin"  # a signing key written in OUT for the run, removed after it
SOME = "c01,c02,c03,c04,c05,c06,c07,c08"
IDENTIFY_MODES = {"closed": [], "openset": ["--open-set"], "fpir": ["--fpir", "0.05"],
                  "threshold": ["--threshold", "2"],
                  "verification": ["--verification-thresholds"]}


def _commands():
    """(name, arguments) of every command, in order (later ones read what earlier wrote)."""
    bg = ["--background", "c17,c18,c19,c20"]
    out = [("enroll", ["enroll", str(FACES), "--store", "e.h5", *bg]),
           ("enroll_add_base", ["enroll", str(FACES), "--store", "e2.h5", "--clients",
                                SOME[:23], *bg]),
           ("enroll_add", ["enroll", str(FACES), "--store", "e2.h5", "--add", "--clients",
                           "c07,c08"]),
           ("compress1", ["compress", "--store", "e.h5", "-o", "g1.h5", "--m", "2", "--json",
                          "--clients", SOME]),
           ("compress2", ["compress", "--store", "e.h5", "-o", "g2.h5", "--m", "1",
                          "--threshold-mode", "client", "--json", "--clients", SOME[:15],
                          "--key-file", KEY]),
           ("compress3", ["compress", "--store", "e.h5", "-o", "g3.h5", "--solver", "paper",
                          "--m", "2", "--cv-folds", "0", "--json", "--clients", SOME[:11]]),
           ("compress4", ["compress", "--store", "e2.h5", "-o", "g4.h5", "--m", "auto",
                          "--threshold-mode", "shrink", "--json", "--clients", SOME[:19]])]
    for g in ("g1", "g3", "g4"):
        out += [(f"info_{g}", ["info", "--gallery", f"{g}.h5"]),
                (f"infoj_{g}", ["info", "--gallery", f"{g}.h5", "--json"])]
    out += [("info_g2", ["info", "--gallery", "g2.h5", "--key-file", KEY, "--json"]),
            ("info_store", ["info", "--store", "e.h5"])]
    for g in ("g1", "g4"):
        for mode, flags in IDENTIFY_MODES.items():
            for shown, extra in (("", []), ("j", ["--json"]), ("c", ["--csv"])):
                out.append((f"id{shown}_{g}_{mode}",
                            ["identify", *PROBES, "--gallery", f"{g}.h5", *flags, *extra]))
    for c in ("c01", "c03"):
        for shown, extra in (("", []), ("j", ["--json"]), ("c", ["--csv"])):
            out.append((f"ver{shown}_{c}",
                        ["verify", *PROBES, "--gallery", "g1.h5", "--claim", c, *extra]))
    scores = "rep1/scores"
    out += [("verk", ["verify", PROBES[2], "--gallery", "g2.h5", "--claim", "c02",
                      "--key-file", KEY, "--json"]),
            ("verclaims", ["verify", "--claims", "claims.txt", "--gallery", "g1.h5",
                           "--json"]),
            ("roc1", ["roc", str(FACES), "--repetitions", "2", "-o", "rep1", "--json"]),
            ("roc2", ["roc", "--store", "e.h5", "--repetitions", "1", "--enrolled", "6",
                      "--methods", ("svm,ssvm,ssvm-paper,svm-sel,svm-red,ps-r,ps-b,ps-s,"
                                    "ps-km,nystrom"), "--m", "1,2", "--no-plot", "--norm-folds", "0",
                      "-o", "rep2", "--wide"]),
            ("roc3", ["roc", "--scores", f"{scores}/*.txt", "-o", "rep3", "--no-plot",
                      "--json"]),
            ("roc4", ["roc", "--gallery", "g1.h5", "--probes", str(FACES), "-o", "rep4",
                      "--no-plot", "--json"]),
            ("roc5", ["roc", "--dev-scores", f"{scores}/ssvm-m2.r0.txt", "--dev-scores",
                      f"{scores}/svm.r0.txt", "--eval-scores", f"{scores}/ssvm-m2.r1.txt",
                      "--eval-scores", f"{scores}/svm.r1.txt", "-o", "rep5", "--no-plot",
                      "--json"])]
    return out


COMMANDS = _commands()


def run(out, src):
    """Run `COMMANDS` with the ``ssgallery`` package of ``src`` in the new folder ``out``."""
    out.mkdir(parents=True)
    (out / KEY).write_bytes(b"k" * 64)
    claims = ((PROBES[0], "c01"), (PROBES[6], "c02"), (PROBES[5], "c03"))  # unknown1 as c02
    (out / "claims.txt").write_text("".join(f"{p} {c}\n" for p, c in claims))
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1",
               SSGALLERY_PROGRESS_INTERVAL="600000")
    for n, (name, args) in enumerate(COMMANDS, 1):
        if any("*" in a for a in args):  # a shell glob of files an earlier command wrote
            args = [x for a in args for x in (sorted(str(p.relative_to(out)) for p in
                                                     out.glob(a)) if "*" in a else [a])]
        r = subprocess.run([sys.executable, "-m", "ssgallery", *args], cwd=out, env=env,
                           capture_output=True, check=False)
        tag = out / f"{n:03d}_{name}"
        Path(f"{tag}.out").write_bytes(r.stdout)
        Path(f"{tag}.err").write_bytes(r.stderr)
        Path(f"{tag}.rc").write_text(f"{r.returncode}\n")
    (out / KEY).unlink()


ISO_TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")


def _stable(value):
    """``value`` (parsed JSON) without what two runs of one commit differ in: keys naming
    seconds."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _json_text(value):
    """An attribute's value, a JSON object's text made `_stable`."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            return _stable(json.loads(value))
        except ValueError:
            pass
    return value


def _hdf5_content(path, folder):
    """Every dataset and attribute of an HDF5 file but created/digest/hmac, as text
    (``folder``'s own path masked)."""
    import h5py
    import numpy as np

    out = []

    def add(name, obj):
        for key, value in sorted(obj.attrs.items()):
            if key not in ("created", "digest", "hmac"):
                out.append(repr((name, key, _json_text(np.asarray(value).tolist()))))
        if isinstance(obj, h5py.Dataset):
            data = np.asarray(obj[()])
            out.append(repr((name, str(obj.dtype), obj.shape,
                             data.tolist() if data.dtype == object else data.tobytes())))

    with h5py.File(path, "r") as f:
        add("/", f)
        f.visititems(add)
    return [line.replace(str(folder), "<out>") for line in out]


def masked(x, y, a, b, suffix):
    """Why the bytes ``x`` (a file of folder ``a``) and ``y`` (of ``b``) are the same
    output once masked, or None when they are not."""
    if suffix == ".h5":
        return "HDF5 content" if _hdf5_content(x, a) == _hdf5_content(y, b) else None
    x, y = (ISO_TIME.sub(b"<created>", v.read_bytes().replace(str(f).encode(), b"<out>"))
            for v, f in ((x, a), (y, b)))
    if x == y:
        return "a creation time or the folder's name"
    try:
        same = _stable(json.loads(x)) == _stable(json.loads(y))
        return "JSON but seconds" if same else None
    except ValueError:
        pass
    lines = [[ln.rsplit(None, 1)[0] if ln.strip() else ln for ln in v.decode().splitlines()]
             for v in (x, y)]
    if b"fit s/client" in x and lines[0] == lines[1]:
        return "the fit s/client column"
    return None


def compare(a, b):
    """Print what differs between two runs' folders; returns the files that differ."""
    names = [{p.relative_to(f) for p in f.rglob("*") if p.is_file()} for f in (a, b)]
    alone = sorted(map(str, names[0] ^ names[1]))
    same, kinds, differ = 0, {}, list(alone)
    for name in sorted(names[0] & names[1]):
        x, y = a / name, b / name
        if x.read_bytes() == y.read_bytes():
            same += 1
            continue
        why = masked(x, y, a, b, name.suffix)
        if why:
            kinds[why] = kinds.get(why, 0) + 1
        else:
            differ.append(str(name))
    print(f"{len(names[0])} and {len(names[1])} files: {same} byte-identical, "
          f"{sum(kinds.values())} equal once masked "
          f"({', '.join(f'{k} {v}' for k, v in kinds.items()) or 'none'}), "
          f"{len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")
    return differ


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("run", help="run the commands into a new folder OUT")
    p.add_argument("out", type=Path)
    p.add_argument("--rev", default=None,
                   help="run this commit's code (git archive), not the working tree's")
    p = sub.add_parser("compare", help="compare two runs; exit 1 when a file differs")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.action == "compare":
        return 1 if compare(args.a.resolve(), args.b.resolve()) else 0
    if args.out.exists():
        parser.error(f"{args.out} exists: name a new folder")
    if args.rev is None:
        run(args.out.resolve(), REPO)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.rev, "ssgallery"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        run(args.out.resolve(), Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
