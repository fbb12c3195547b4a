"""The SVM teacher at the C bound: a C at which no support vector is free, on AT&T and LFW.

With the teacher's class weights (each class's C times the other class's prior) every
alpha at its bound satisfies sum_i alpha_i y_i = 0, so at a small C the SVM often has
every training image at its bound. Its intercept is then anywhere in an interval
(libsvm takes its middle, or an end when rounding leaves one alpha just below its
bound), and the CV's balanced accuracy at that C is the balanced accuracy of an
arbitrary intercept. Per set, the paper's protocol (Sect. IV-A: 5 training images per
client; the paper's fit, between 0; eigenface RBF, gamma = 1/d), side by side in one run:

- "libsvm": the teacher as it was: the C the CV ranks first, libsvm's intercept;
- "pass": the teacher now: a C whose SVM has no free SV is passed over for the next C
  of the same ranking (its first choice kept when every C is bounded, with the middle
  of the KKT interval as intercept, as in every fit with no free SV).

Prints, per set and rule, the teachers whose chosen C has no free SV and those that
passed over a C, the mean client EER (each client's own threshold sweep) of the SVM and
of SSVM m = 2, the C picks that changed, and which clients' EERs changed, by name
(r<repetition>:<client>, EER before -> after).

    OMP_NUM_THREADS=1 python benchmarks/teacher_bound.py
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _results import docstring, printed, write_page

RULES = ("libsvm", "pass")


def teachers(images, labels, options, rule):
    """Per (repetition, client) the protocol's teacher under ``rule``: (C_, n_free_,
    C_passed_), fitted as `run_protocol` fits it (the same splits, matcher, seed)."""
    from ssgallery.biometrics.protocol import default_matcher_factory, make_splits
    from ssgallery.learn.teacher import SimilaritySVM

    out = {}
    for split in make_splits(labels, options.n_enrolled, options.n_train,
                             options.repetitions, options.seed):
        train = split.train_indices()
        matcher = default_matcher_factory().fit(images[train])
        X, sim = matcher.transform(images[train]), matcher.similarity()
        gram = sim(X, X)
        for c in split.enrolled:
            y = np.where(labels[train] == c, 1, -1)
            t = SimilaritySVM(similarity=sim, at_bound=rule,
                              random_state=options.seed * 1000 + split.repetition).fit(X, y, gram)
            out[f"r{split.repetition}:{c}"] = (t.C_, t.n_free_, t.C_passed_)
    return out


def client_eers(tables):
    """{(method label, 'r<rep>:<client>'): EER %} from `run_protocol`'s tables: each
    client's own EER, `ssgallery.biometrics.evaluation.client_eers` of each table (one
    table per method and repetition: its claims digest names nothing more here)."""
    from ssgallery.biometrics.evaluation import client_eers as own_eers

    return {(t.label, f"r{rep}:{c}"): 100 * eer
            for t in tables for (rep, c, _), eer in own_eers([t]).items()}


def changes(before, after, label):
    """One line: how many of ``label``'s client EERs moved, the largest by name."""
    keys = [k for k in before if k[0] == label]
    moved = sorted(((after[k] - before[k], k[1]) for k in keys
                    if abs(after[k] - before[k]) > 1e-9), reverse=True)
    worse = [(d, k) for d, k in moved if d > 0]
    better = [(d, k) for d, k in reversed(moved) if d < 0]
    fmt = lambda items: ", ".join(f"{k} {before[(label, k)]:.1f} -> {after[(label, k)]:.1f}"
                                  for _, k in items[:4]) or "none"
    return (f"  {label}: {len(moved)} of {len(keys)} client EERs changed, {len(worse)} worse "
            f"({sum(d > 5 for d, _ in worse)} by more than 5 points), {len(better)} better; "
            f"worse: {fmt(worse)}; better: {fmt(better)}")


def run_set(name, folder, args):
    """Teachers and protocol of one face set under both rules; prints its block."""
    from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
    from ssgallery.images.ingest import load_faces

    faces = load_faces(folder, size=None)
    images, labels = faces.images, np.asarray(faces.labels)
    reps = args.repetitions if name == "att" else args.lfw_repetitions
    base = {"methods": ("svm", "ssvm"), "m": (2,), "n_enrolled": args.enrolled.get(name),
            "repetitions": reps, "seed": args.seed, "between": 0.0, "identification": False}
    eers, fits = {}, {}
    for rule in RULES:
        options = ProtocolOptions(**base, method_options={"svm": {"at_bound": rule}})
        fits[rule] = teachers(images, labels, options, rule)
        eers[rule] = client_eers(run_protocol(images, labels, options))
    n = len(fits["libsvm"])
    print(f"{name}: {reps} repetition(s), {n} clients x 5 training images")
    print(f"{'set/rule':<12}{'no free SV':>12}{'C passed over':>15}{'SVM EER %':>11}"
          f"{'SSVM m=2 EER %':>16}")
    for rule in RULES:
        bounded = sum(f[1] == 0 for f in fits[rule].values())
        passed = sum(bool(f[2]) for f in fits[rule].values())
        mean = {lab: np.mean([v for (k, _), v in eers[rule].items() if k == lab])
                for lab in ("svm", "ssvm m=2")}
        print(f"{name + '/' + rule:<12}{bounded:>12d}{passed:>15d}{mean['svm']:>11.2f}"
              f"{mean['ssvm m=2']:>16.2f}")
    picks = {}
    for key, (c_old, _, _) in fits["libsvm"].items():
        c_new = fits["pass"][key][0]
        if c_new != c_old:
            picks[(c_old, c_new)] = picks.get((c_old, c_new), 0) + 1
    print("C changed (libsvm -> pass): " + (", ".join(
        f"{a:g} -> {b:g}: {k}" for (a, b), k in sorted(picks.items())) or "none"))
    for label in ("svm", "ssvm m=2"):
        print(changes(eers["libsvm"], eers["pass"], label))
    print()


def main(argv=None):
    from ssgallery.datasets import att_faces_path, lfw_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--att", default=str(att_faces_path()), help="AT&T folder")
    ap.add_argument("--lfw", default=str(lfw_path()), help="LFW folder ('' to skip)")
    ap.add_argument("--repetitions", type=int, default=5, help="AT&T repetitions")
    ap.add_argument("--lfw-repetitions", type=int, default=5)
    ap.add_argument("--att-enrolled", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.enrolled = {"att": args.att_enrolled, "lfw": None}  # LFW: half of the people
    t0 = time.perf_counter()
    for name, folder in (("att", args.att), ("lfw", args.lfw)):
        if not folder:
            continue
        if not Path(folder).is_dir():
            sys.exit(f"teacher_bound.py: error: {name} faces not found at {folder}")
        run_set(name, folder, args)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("teacher_bound", "The SVM teacher at the C bound (AT&T and LFW, eigenface)",
               notes=docstring(__doc__), output=out.getvalue())
