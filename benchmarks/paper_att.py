"""The paper's face-verification experiment on AT&T (Sect. IV-A, Fig. 4, eigenface RBF).

20 enrolled clients, 5 training images each, 5 repetitions; the full SVM against SSVM,
SVM-red and SVM-sel at m in {1, 2, 3, 5, 10} (and Nystroem landmarks at m = 2), all
trained from one SVM teacher per client and repetition, in one run. Prints the table,
writes it with the plot and the score files to benchmarks/out/paper_att/, and checks
the targets of the roc issue:

- SSVM m=2: mean EER <= 2.0 % and <= the full SVM's EER + 0.3 pp; FRR@FAR=1 % <= 11 %
- SSVM m=2 needs >= 25x fewer matches per claim than the full SVM
- SSVM m=2 beats SVM-red and SVM-sel at m=2 on EER
- the whole run finishes in under 10 minutes (reported, not asserted by a test)

Usage::

    OMP_NUM_THREADS=1 python benchmarks/paper_att.py [--jobs 2] [--repetitions 5]
"""

import argparse
import os
import sys
import time
from pathlib import Path

from _results import OUT as BENCH_OUT
from _results import text_table, write_page


def _parse(argv):
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faces", default=None, help="AT&T folder [ssgallery.datasets]")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--enrolled", type=int, default=20)
    parser.add_argument("--train-images", type=int, default=5)
    parser.add_argument("--m", default="1,2,3,5,10")
    parser.add_argument("--methods", default="svm,ssvm,svm-red,svm-sel")
    parser.add_argument("--no-nystrom", action="store_true", help="skip Nystroem at m=2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-o", "--out", default=str(BENCH_OUT / "paper_att"))
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse(argv)

    from ssgallery.biometrics.evaluation import evaluate
    from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
    from ssgallery.biometrics.report import format_table, plot_curves, write_report
    from ssgallery.cli.progress import reporting
    from ssgallery.datasets import att_faces_path
    from ssgallery.images.ingest import load_faces

    faces_dir = Path(args.faces) if args.faces else att_faces_path()
    if not faces_dir.is_dir():
        sys.exit(f"paper_att: AT&T faces not found at {faces_dir} (set SSGALLERY_ATT_FACES)")
    m_values = [int(v) for v in args.m.split(",")]
    methods = args.methods.split(",")
    if not args.no_nystrom:
        methods.append(("nystrom", 2))
    faces = load_faces(faces_dir, size=None)
    t0 = time.perf_counter()
    options = ProtocolOptions(methods=methods, m=m_values, n_enrolled=args.enrolled,
                              n_train=args.train_images, repetitions=args.repetitions,
                              seed=args.seed, n_jobs=args.jobs,
                              between=0.0)  # the paper's fit: its training images only
    with reporting(name="paper_att") as progress:
        tables = run_protocol(faces.images, faces.labels, options, probe_labels=faces.paths,
                              progress=progress)
    summaries = evaluate(tables)
    wall = time.perf_counter() - t0
    config = {"enrolled": args.enrolled, "train_images": args.train_images,
              "repetitions": args.repetitions, "seed": args.seed, "m": m_values,
              "methods": [m if isinstance(m, str) else f"{m[0]}@m={m[1]}" for m in methods],
              "jobs": args.jobs, "wall_seconds": round(wall, 1),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}
    files = write_report(args.out, tables, summaries, mode="protocol",
                         source="AT&T, eigenface RBF", config=config)
    # the paper's Fig. 4 (RBF): SVM, SSVM m=2, SVM-red m=2, SVM-sel m=10 (+ Nystroem m=2)
    fig4 = ["svm", "ssvm m=2", "svm-red m=2", "svm-sel m=10", "nystrom m=2"]
    plot_curves(Path(args.out, "fig4.png"), summaries, "AT&T, eigenface RBF (paper Fig. 4)",
                labels=fig4)
    table = format_table(summaries, wide=True)
    print(table)
    Path(args.out, "table.txt").write_text(table + "\n")
    footer = f"wall time {wall:.0f} s with {args.jobs} job(s)"
    print(f"\n{footer}; wrote {files['summary']}, "
          f"{files['curves']}, {files.get('plot', '(no plot)')}, fig4.png")
    rows = check_targets(summaries, wall)
    targets = "\n".join(f"  {'PASS' if ok else 'MISS'}  {name}  {value}"
                         for name, ok, value in rows)
    print("\ntargets\n" + targets)
    write_page("paper_att", "AT&T face verification, eigenface RBF (paper Fig. 4)",
               text_table(table), notes=NOTES, output=f"{table}\n\n{footer}\n\ntargets\n{targets}",
               figures=[Path(args.out, "fig4.png")])
    return 0 if all(ok for _, ok, _ in rows) else 1


NOTES = """\
AT&T (40 subjects x 10 images), eigenface RBF (PCA keeping 95 % of the variance,
gamma = 1/d); per repetition 20 enrolled clients with 5 training images each, their
other 5 images as genuine claims, every image of the other 20 subjects as an impostor
claim against every client. Every method is built from the same SVM teacher per client
and repetition. The columns are `roc --wide`'s, each named by its convention (the
[named conventions](../operating-points.md#named-conventions)): `matches` is the
similarity evaluations one verification costs (mean ± std over clients and
repetitions; the full SVM: its support vectors); `EER % [95% CI]` is the **mean of the
clients' own EERs** (each client's own threshold sweep; the headline convention of the
README) with its bootstrap interval over clients; `FRR@FAR=1%` and the `averaged-curve`
columns are read on the client-averaged FRR/FAR curve (vertical averaging, as the
paper draws its curves); the `global-threshold` columns pool every client's scores of a
repetition under one threshold; "—": a FAR below what the impostor claims can resolve.
`fit s/client` includes the shared SVM teacher.
"""


def check_targets(summaries, wall):
    """Each target of the roc issue as (name, met, measured) rows.

    EER targets are shown under both conventions ssgallery reports: the mean of the
    clients' own EERs (``eer_client_mean``, the headline) and the EER of the
    client-averaged curve (``eer_averaged_curve``).
    """
    by = {s["label"]: s for s in summaries}
    svm, ssvm = by.get("svm"), by.get("ssvm m=2")
    if svm is None or ssvm is None:
        return [("targets need svm and ssvm at m=2", True, "")]
    rows = []
    for key, name in (("eer_client_mean", "mean client EER"),
                      ("eer_averaged_curve", "averaged-curve EER")):
        rows += [
            (f"SSVM m=2 {name} <= 2.0 %", ssvm[key] <= 0.020, f"{100 * ssvm[key]:.2f} %"),
            (f"SSVM m=2 {name} <= SVM + 0.3 pp", ssvm[key] <= svm[key] + 0.003 + 1e-12,
             f"{100 * ssvm[key]:.2f} % vs {100 * svm[key]:.2f} %"),
        ]
        for other in ("svm-red m=2", "svm-sel m=2"):
            if other in by:
                rows.append((f"SSVM m=2 {name} < {other}", ssvm[key] < by[other][key],
                             f"{100 * ssvm[key]:.2f} % vs {100 * by[other][key]:.2f} %"))
    frr = ssvm["frr_at_far_1pct_averaged_curve"]  # None: FAR 1 % below the resolution
    rows += [
        ("SSVM m=2 FRR@FAR=1 % (averaged curve) <= 11 %", frr is not None and frr <= 0.11,
         "below the resolution" if frr is None else f"{100 * frr:.2f} %"),
        ("SVM matches / SSVM m=2 matches >= 25", svm["matches_mean"] / ssvm["matches_mean"] >= 25,
         f"{svm['matches_mean'] / ssvm['matches_mean']:.1f}x"),
        ("whole benchmark < 10 min", wall < 600, f"{wall:.0f} s"),
    ]
    return rows


if __name__ == "__main__":
    sys.exit(main())
