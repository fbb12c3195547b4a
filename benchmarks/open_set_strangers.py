"""Open-set 1:N search, stranger by stranger: who is identified, how often, as whom?

An FPIR of 1 % is a rate over the strangers' searches: it can be one stranger identified
in every search, or a hundred strangers once each. Per data set (``synth``: the
sample-data generator, 40 people of 7 images; ``att``: AT&T with eigenface; ``lfw``: LFW
with dlib; ``lfw-eigenface``: LFW with eigenface), gallery size (``--sizes``) and split,
the splits of benchmarks/open_set.py's stage ``fpir`` (the same seeds: its first
repetitions are that page's, `_open_set_fpir.run_fpir`): the chosen people enrolled
with ``--train-images`` images each and compressed with every default (target FPIR 1 %),
every image of every other person searched through ``identify --open-set``'s own code
path, at the gallery's operating point.

First table: the achieved FPIR (mean over splits; the pooled count), how many of a
split's strangers were identified at least once, how many people were identified in
any split of all who were strangers in one, how much of each split's false positives
its most-identified stranger made (pooled), how many of the people identified were
identified again in another split where they were strangers (recurrence), and the
worst strangers by name: searches returned of their searches over the splits, in how
many of the splits where they were strangers, and the clients they were returned as.

Second table: does the interval ``info`` and ``identify`` print (``expected FPIR x %
(95 % Clopper-Pearson a-b % by probe person ...)``, compress's held-out searches) hold
the FPIR the split's strangers met? Inside, below, above, split by split; of the splits
above, how many had one stranger making at least half of the false positives, and how
many fall inside once that one stranger is left out. Third table: the splits above the
interval, with their strangers.

The interval is a confidence interval for the rate over strangers in general, estimated
from the held-out searches of the people compress saw; the FPIR a handful of strangers
meet is a sample of that rate, and a single look-alike among them moves it by several
points. The lines under the tables say what a user should expect.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/open_set_strangers.py
        [--datasets synth,att,lfw,lfw-eigenface] [--sizes 20,all]
        [--repetitions att:50,synth:10,lfw:3,lfw-eigenface:3] [--page]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results
from _open_set_fpir import MATCHERS, run_fpir
from _open_set_strangers import (
    COVER_HEAD,
    MISS_HEAD,
    STRANGER_HEAD,
    cover_rows,
    expect_line,
    first_mean,
    miss_rows,
    stranger_rows,
)
from calibration import face_subjects
from open_set import _dlib_cache, _faces_dir, with_out


def _repetitions(text, names):
    """``--repetitions``: one number for every data set, or ``name:k,...`` (a data set
    not named: 5)."""
    if ":" not in text:
        return dict.fromkeys(names, int(text))
    given = {k: int(v) for k, v in (part.split(":") for part in text.split(","))}
    return {name: given.get(name, 5) for name in names}


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="synth,att,lfw,lfw-eigenface")
    parser.add_argument("--sizes", default="20,all")
    parser.add_argument("--holdout", type=float, default=0.25,
                        help="'all': the fraction of the people never enrolled [0.25]")
    parser.add_argument("--repetitions", default="att:50,synth:10,lfw:3,lfw-eigenface:3",
                        help="splits per data set and size: a number, or name:k,...")
    parser.add_argument("--train-images", type=int, default=5)
    parser.add_argument("--target-fpir", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dlib-cache", default=None,
                        help="dlib descriptor cache read and updated "
                             "[OUT/open_set/dlib.npz, open_set.py's]")
    parser.add_argument("--page", action="store_true",
                        help="write docs/benchmarks/open_set_strangers.md")
    return with_out(parser.parse_args(argv))


def run(args):
    """Every data set's and size's splits: ``{key: [run_fpir's result, ...]}``."""
    names = args.datasets.split(",")
    counts, results = _repetitions(args.repetitions, names), {}
    for name in names:
        _dlib_cache(name, args)
        faces = _faces_dir(name.split("-")[0], args.out)
        subjects = face_subjects(faces, args.train_images + 1)
        for size in args.sizes.split(","):
            key, t0 = f"{name.split('-')[0]} ({MATCHERS[name]}) {size}", time.perf_counter()
            reps = []
            for rep in range(counts[name]):
                reps.append(run_fpir(name, size, rep, subjects, args))
                op = reps[-1]["operating point"]
                print(f"{key} split {rep}: {op['false_positives']} / {op['non_mated']}",
                      file=sys.stderr, flush=True)
            results[key] = {"runs": reps, "seconds": time.perf_counter() - t0,
                            "commit": _results.git_commit()}
        _dlib_cache(name, args, save=True)
    return results


def write(results):
    keys = list(results)
    reps = {k: results[k]["runs"] for k in keys}
    tables = [
        _results.markdown_table(STRANGER_HEAD, [r for k in keys
                                                for r in stranger_rows(k, reps[k])]),
        "Does the printed interval hold the FPIR the strangers met, split by split?\n\n"
        + _results.markdown_table(COVER_HEAD, [r for k in keys
                                               for r in cover_rows(k, reps[k])]),
        "The splits above the interval (the first 8 of each data set and size):\n\n"
        + _results.markdown_table(MISS_HEAD, [r for k in keys
                                              for r in miss_rows(k, reps[k])])]
    notes = ("**What to expect.**\n\n" + "\n".join(expect_line(k, reps[k]) for k in keys)
             + "\n\n**Runs.**\n\n"
             + "\n".join(f"- `{k}`: {len(reps[k])} splits at `{results[k]['commit']}`, "
                         f"{results[k]['seconds']:.0f} s; "
                         f"mean achieved FPIR of the first 3 splits {first_mean(reps[k], 3)} "
                         f"%, of the first 5 {first_mean(reps[k], 5)} % (open_set.md's "
                         "repetitions: the same seeds)" for k in keys)
             + "\n\n" + _results.docstring(__doc__))
    _results.write_page("open_set_strangers",
                        "Open-set 1:N search, stranger by stranger", "\n\n".join(tables),
                        notes=notes)


def main(argv=None):
    args = _parse(argv)
    results = run(args)
    (args.out / "strangers.json").write_text(json.dumps(results, default=float) + "\n")
    for key, r in results.items():
        print(" | ".join(stranger_rows(key, r["runs"])[0]))
    if args.page:
        write(results)


if __name__ == "__main__":
    main()
