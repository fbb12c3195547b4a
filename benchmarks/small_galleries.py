"""Small galleries: does the target FAR hold when the thresholds rest on few impostor people?

compress sets every client's threshold on its held-out impostor scores, the store's
other subjects: a gallery of N clients and no background sets them on N people. Per
regime (N clients, K background people) and repetition, benchmarks/calibration.py's
leave-subjects-out protocol on AT&T (eigenface, m = 2, 5 training images per client,
seeded split): N subjects enrolled as clients, K of the others enrolled as background
(`enroll --background`: impostor-only, never counted as strangers), every image of the
remaining subjects (never seen by enroll or compress) claimed against every client.
One compress per repetition gives the held-out impostor scores; each threshold mode's
thresholds are computed from them (as compress does for the mode it is given) and
applied to the gallery's scores of the strangers' claims. At target FAR 1 %:
"strangers' claims accepted": mean over clients, then mean +- sd over repetitions;
"accepted / claims": pooled over clients and repetitions; FRR: the clients' other
images rejected (mean +- sd); "expected FAR": compress's own held-out estimate, what
`info` prints (mean over repetitions). The 20-client regime without background is
calibration.py's AT&T row (half of the 40 subjects).

docs/operating-points.md (small galleries) and the warning of
`ssgallery.cli.operating.few_people_warning` cite this page.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/small_galleries.py \
        [--regimes 3,5,10,3+17,5+15,20] [--repetitions 5]
"""

import argparse
import sys
from argparse import Namespace

import _results
import calibration

TARGET = 0.01
HEAD = ["clients", "background", "mode", "strangers' claims accepted % (mean ± sd)",
        "accepted / claims", "FRR % (mean ± sd)", "expected FAR % (`info`)"]


def regimes(text):
    """[(clients, background)] from ``"3,5,3+17"``."""
    out = []
    for part in (p for p in text.split(",") if p):
        clients, _, background = part.partition("+")
        out.append((int(clients), int(background or 0)))
    return out


def run_regime(subjects, clients, background, args):
    """The aggregated rows (`calibration.aggregate`) and the repetitions of a regime."""
    run = Namespace(enrolled=clients, background=background, m=args.m, seed=args.seed,
                    train_images=args.train_images)
    reps = []
    for rep in range(args.repetitions):
        reps.append(calibration.run_repetition(subjects, "eigenface", (TARGET,), run, rep,
                                               v0=False))
        print(f"{clients}+{background} repetition {rep}: " + ", ".join(
            f"{k} FAR {_results.pct(v['far'])}% FRR {_results.pct(v['frr'])}%"
            for k, v in reps[-1]["results"].items()), file=sys.stderr, flush=True)
    return {"clients": clients, "background": background,
            "rows": calibration.aggregate(reps), "repetitions": reps}


def table_rows(results):
    pct = _results.pct
    return [[res["clients"], res["background"], f"`{r['mode']}`",
             f"{pct(r['far'])} ± {pct(r['far_sd'])}",
             f"{r['accepted']} / {r['impostor_claims']}",
             f"{pct(r['frr'])} ± {pct(r['frr_sd'])}", pct(r["expected_far"])]
            for res in results for r in res["rows"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", default="3,5,10,3+17,5+15,20",
                        help="clients[+background people], comma-separated "
                             "[3,5,10,3+17,5+15,20]")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--train-images", type=int, default=5)
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    faces = calibration._faces_dir("att", None)
    subjects = calibration.face_subjects(faces, args.train_images + 1)
    results = [run_regime(subjects, n, k, args) for n, k in regimes(args.regimes)]
    _results.save_results("small_galleries", results)
    notes = (f"AT&T ({len(subjects)} subjects), target FAR {_results.pct(TARGET, 0)} %, "
             f"{args.repetitions} repetition(s) per regime, m = {args.m}, "
             f"{args.train_images} training images per client.\n\n"
             + _results.docstring(__doc__))
    _results.write_page("small_galleries",
                        "Small galleries: the target FAR on few impostor people",
                        _results.markdown_table(HEAD, table_rows(results)), notes=notes)


if __name__ == "__main__":
    main()
