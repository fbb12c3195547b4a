"""The learner's defaults against alternatives on every data set (issue 10 item 3).

SSVM (the super-sparse distiller) against its own SVM teacher, mean client EER, at m = 2
and m = 3, on AT&T (eigenface), the synthetic sample data (eigenface), LFW (eigenface and
dlib), with the paper's protocol (``run_protocol`` + ``evaluate``; every variant is
distilled from the same SVM teacher per client and repetition). Variants: the ridge
penalty lam absolute (the old default) or relative to the similarity scale
(``lam_scale="gram"``) at several values, the initialisation and the number of starts.
Each cell is SSVM minus SVM in percentage points (lower is better; <= 0.3 is the
target); the SVM row is its own mean client EER.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/defaults.py [--jobs 2] [--repetitions 3]
        [--sets att:eigenface,sample:eigenface,lfw:eigenface,lfw:dlib] [--variants a,b]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from _results import OUT as BENCH_OUT
from _results import git_commit, markdown_table, write_page
from paper_lfw import OUT as LFW_OUT
from paper_lfw import format_text, load_lfw, matcher_factory

# name -> (description, ssvm options); the row whose options are the library's defaults
# is marked "(default)"
VARIANTS = {
    "abs-1e-4": ("lam 1e-4 absolute, 1 start (before issue 10)",
                 {"lam": 1e-4, "lam_scale": "none", "n_init": 1}),
    "abs-1e-6x3": ("lam 1e-6 absolute, 3 starts", {"lam": 1e-6, "lam_scale": "none",
                                                   "n_init": 3}),
    "rel-2e-2": ("lam 2e-2 relative", {"lam": 2e-2, "lam_scale": "gram", "n_init": 1}),
    "rel-2e-3": ("lam 2e-3 relative", {"lam": 2e-3, "lam_scale": "gram", "n_init": 1}),
    "rel-2e-4": ("lam 2e-4 relative", {"lam": 2e-4, "lam_scale": "gram", "n_init": 1}),
    "rel-2e-3x3": ("lam 2e-3 relative, 3 starts", {"lam": 2e-3, "lam_scale": "gram",
                                                   "n_init": 3}),
    "rel-2e-4x3": ("lam 2e-4 relative, 3 starts", {"lam": 2e-4, "lam_scale": "gram",
                                                   "n_init": 3}),
    "rel-2e-3-gen": ("lam 2e-3 relative, init genuine", {"lam": 2e-3, "lam_scale": "gram",
                                                         "n_init": 1, "init": "genuine"}),
}
SETS = "att:eigenface,sample:eigenface,lfw:eigenface,lfw:dlib"
OUT = BENCH_OUT / "defaults"


def load_set(name):
    """images, labels of a data set by name: att, sample or lfw."""
    from ssgallery.datasets import att_faces_path, sample_faces_path
    from ssgallery.images.ingest import load_faces

    if name == "lfw":
        images, labels, _ = load_lfw(None)
        return images, labels
    path = {"att": att_faces_path, "sample": sample_faces_path}[name]()
    if not path.is_dir():
        sys.exit(f"defaults: {name} faces not found at {path}")
    faces = load_faces(path, size=None)
    return faces.images, np.asarray(faces.labels)


def is_default(options):
    """Whether ssvm options (lam, lam_scale, n_init, init) are the library's defaults."""
    from ssgallery.learn import defaults

    lib = {"lam": defaults.DEFAULT_LAM, "lam_scale": defaults.DEFAULT_LAM_SCALE,
           "n_init": defaults.DEFAULT_N_INIT, "init": "auto"}
    return all(options.get(k, "auto" if k == "init" else None) == v for k, v in lib.items())


def faces_digest(images, labels):
    """SHA-256 (hex) of a data set's images and labels: a cached set is reused only for
    the same faces (sample_data was redrawn once under an unchanged name)."""
    from ssgallery.formats.integrity import array_digest

    return array_digest(np.asarray(images)) + array_digest(np.asarray(labels).astype(str))


def cached_set(data, matcher, variants, args, cache):
    """run_set's result, read from OUT/<set>.json when a run with the same variants,
    repetitions and seed on the same faces (`faces_digest`) is there (``--reuse``), else
    run and written there."""
    path = OUT / f"{data}-{matcher}-r{args.repetitions}-s{args.seed}.json"
    wanted = {v: VARIANTS[v][1] for v in variants}
    images, labels = load_set(data)
    faces = faces_digest(images, labels)
    if args.reuse and path.exists():
        saved = json.loads(path.read_text())
        if saved.get("faces") == faces and all(saved["options"].get(v) == o
                                               for v, o in wanted.items()):
            deltas = {v: {int(m): d for m, d in saved["deltas"][v].items()} for v in variants}
            return deltas, saved["svm"], saved["wall"], saved["commit"]
        print(f"{path.name}: other variants or other faces; measuring again", file=sys.stderr)
    deltas, svm, wall = run_set((images, labels), matcher, variants, args, cache)
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"options": wanted, "faces": faces, "deltas": deltas,
                                "svm": svm, "wall": wall, "commit": git_commit()}, indent=1))
    return deltas, svm, wall, git_commit()


def run_set(faces, matcher, variants, args, cache):
    """{variant: {m: SSVM - SVM mean client EER}}, SVM mean client EER, wall seconds;
    ``faces``: (images, labels) of the set."""
    from ssgallery.biometrics.evaluation import evaluate
    from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol

    images, labels = faces
    if matcher == "dlib" and cache.exists():
        from ssgallery.matchers import deep

        deep.load_cache(cache)
    options = {v: {"method": "ssvm", **VARIANTS[v][1]} for v in variants}
    t0 = time.perf_counter()
    protocol = ProtocolOptions(methods=["svm"] + variants, m=[2, 3], n_train=5,
                               repetitions=args.repetitions, seed=args.seed,
                               n_jobs=args.jobs, method_options=options,
                               between=0.0)  # the learner's settings, on the paper's fit
    tables = run_protocol(images, labels, protocol, matcher_factory=matcher_factory(matcher))
    wall = time.perf_counter() - t0
    by = {(s["method"], s["m"]): s["eer_client_mean"] for s in evaluate(tables, n_boot=0)}
    svm = by[("svm", None)]
    return {v: {m: by[(v, m)] - svm for m in (2, 3)} for v in variants}, svm, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=SETS, help="data:matcher,... [%(default)s]")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", default=str(LFW_OUT / "dlib_descriptors.npz"))
    ap.add_argument("--reuse", action="store_true",
                    help="take a data set's figures from out/defaults/ when a run with the "
                         "same variants, repetitions and seed on the same faces is there "
                         "(the page names the commit each set was measured at)")
    ap.add_argument("--no-page", action="store_true")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    sets = [s.split(":") for s in args.sets.split(",")]
    results, walls = {}, []
    for data, matcher in sets:
        print(f"{data} with {matcher} ...", file=sys.stderr, flush=True)
        res = cached_set(data, matcher, variants, args, Path(args.cache))
        results[f"{data} {matcher}"] = res
        walls.append(f"{data} {matcher} {res[2]:.0f} s at {res[3]}")
    head = ["variant"] + [f"{k} m={m}" for k in results for m in (2, 3)] + ["worst", "mean"]
    rows = [["svm (mean client EER %)"] + [f"{100 * r[1]:.2f}" for r in results.values()
                                           for _ in (2, 3)] + ["", ""]]
    for v in variants:
        deltas = [100 * r[0][v][m] for r in results.values() for m in (2, 3)]
        name = f"{v} (default)" if is_default(VARIANTS[v][1]) else v
        rows.append([name] + [f"{d:+.2f}" for d in deltas]
                    + [f"{max(deltas):+.2f}", f"{np.mean(deltas):+.2f}"])
    text = format_text(head, rows)
    load = os.getloadavg()
    legend = "\n".join(f"  {v}: {VARIANTS[v][0]}" for v in variants)
    footer = (f"{args.repetitions} repetitions; wall and commit per set: " + ", ".join(walls)
              + f"; load average {load[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{text}\n\n{legend}\n\n{footer}")
    if not args.no_page:
        write_page("defaults", "Learner defaults against alternatives (SSVM - SVM, pp)",
                   markdown_table(head, rows), notes=NOTES + "\n" + legend.replace("  ", "- "),
                   output=f"{text}\n\n{legend}\n\n{footer}")
    return results


NOTES = """\
Cells: SSVM mean client EER minus its own SVM teacher's, in percentage points, at
m = 2 and m = 3 (the paper's protocol: half of the people enrolled with 5 training
images each; mean of the clients' own EERs, averaged over repetitions). The first row
is the SVM's own mean client EER in %. `worst` and `mean` summarise a variant over
every column. Data: AT&T (40 x 10), the synthetic sample data (`sample_data/faces`),
LFW (158 people); matchers with their defaults. lam relative (`lam_scale="gram"`)
multiplies lam by the mean diagonal of the weighted, centred similarity Gram of the
training points (`ssgallery.learn.supersparse.similarity_scale`, about 0.05 for
eigenface RBF on AT&T, so relative 2e-3 is the old absolute 1e-4 there). With
`--reuse` a set's figures come from an earlier run on the same faces (the same images
and labels: `faces_digest`) with the same variants, repetitions and seed: the last
printed line names the commit each set was measured at.
Variants:
"""


if __name__ == "__main__":
    main()
