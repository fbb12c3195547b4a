"""A black box's compress defaults by gallery size: from two people to twenty (issue 21).

The protocol and matcher are those of ``benchmarks/ebgm_swaps.py`` (AT&T,
``ssgallery-ebgm`` through the external contract, 20 clients x 5 training images per
repetition, 5 genuine and 200 impostor claims per client, the impostors people never
enrolled). Each repetition's 20 clients are cut into disjoint galleries of ``--sizes``
people (the first 20 // N * N clients); every client is trained on its gallery's
training images only, as ``compress`` trains a store of those people, by the same
function (`ssgallery.app.client_fit.train_client`, on the gallery's Gram matrix):

- ``m 2``: ``CompressOptions(m=2)``, the black box's training at m = 2 (3 swaps of real
  images, no move; ``ssgallery compress --m 2``);
- ``default``: ``CompressOptions()``, every option at its default: for a black box m
  resolves to 5 (`ssgallery.app.options.resolve_training`);
- ``default, no swap``: the same with ``swap_rounds=0``, the start rule's images
  (``--swap-rounds 0``);
- ``m 8``: ``CompressOptions(m=8)``, the black box's training at m = 8 (``--m 8``): what
  3 more matches per claim buy.

Every arm has ``cv_folds=0``: the threshold CV sets thresholds, not scores, and the EER
needs no threshold. The SVM column is the teacher ``train_client`` fitted (C by CV).
EER: per client model, mean over client models; "worse > 5": models more than 5 points
worse than their SVM; FRR at FAR = 1 % below each table. The pairs among images are
read from the pair cache when given (the EBGM program is stateless per pair).

    OMP_NUM_THREADS=1 python benchmarks/ebgm_office.py --seed 0,3,4,5,6 --sizes 2,4,10,20 \\
        --pair-cache DIR --jets-cache DIR
"""

import argparse
from dataclasses import replace

import numpy as np
from _ebgm_data import int_list
from _results import docstring, printed, write_page
from ebgm_swaps import frr_line, rate_model
from ebgm_tail import paired, summary
from paper_att_ebgm import add_cache_flags, ebgm_repetitions, jets_folder, load_att

from ssgallery.app.client_fit import train_client
from ssgallery.app.options import CompressOptions
from ssgallery.datasets import att_faces_path

ARMS = {"m 2": CompressOptions(m=2, cv_folds=0), "default": CompressOptions(cv_folds=0),
        "default, no swap": CompressOptions(cv_folds=0, swap_rounds=0),
        "m 8": CompressOptions(m=8, cv_folds=0)}


def one_gallery(split, tr, labels, X, sim, matcher, gram, arms=None):
    """Every client model of one gallery (training rows ``tr``): row dicts. ``arms``:
    name -> options, or (options, whether train_client is given the images' people);
    default `ARMS`, with the people."""
    rows = []
    for client in np.unique(labels[tr]):
        y = np.where(labels[tr] == client, 1, -1)
        gen, imp = X[split.genuine[client]], X[split.impostors]
        row = {"client": client, "rep": split.repetition}
        for name, arm in (arms or ARMS).items():
            options, people = arm if isinstance(arm, tuple) else (arm, True)
            calls = matcher.n_calls_
            fit = train_client(X[tr], y, sim, replace(options, seed=split.repetition),
                               groups=labels[tr] if people else None,
                               bounds=matcher.bounds(), gram=gram)
            row[name + " runs"] = matcher.n_calls_ - calls
            row[name + " m"] = len(fit.distiller.beta_)
            row[name + " swaps"] = fit.distiller.swap_rounds
            rate_model(row, name, fit.distiller, gen, imp)
        rate_model(row, "svm", fit.svm, gen, imp)
        rows.append(row)
    return rows


def cut_galleries(split, every, labels, X, sim, matcher, sizes, out, arms=None):
    """The split's clients cut into disjoint galleries of each of ``sizes`` people (the
    first N // n * n); each gallery's rows (`one_gallery`) appended to ``out[n]``."""
    enrolled = list(split.enrolled)
    for n in sizes:
        for first in range(0, len(enrolled) - n + 1, n):
            tr = every[np.isin(labels[every], enrolled[first:first + n])]
            out[n] += one_gallery(split, tr, labels, X, sim, matcher, sim(X[tr], X[tr]), arms)


def run(args, images, labels, seed, jets):
    """{size: rows} over every repetition of ``seed``."""
    out = {n: [] for n in args.sizes}
    for split, every, matcher in ebgm_repetitions(args, images, labels, seed, jets):
        cut_galleries(split, every, labels, matcher.transform(images), matcher.similarity(),
                      matcher, args.sizes, out)
    return out


def report(rows, label):
    names = list(ARMS)
    summary(rows, names, label)
    frr_line(rows, names)
    runs = {k: int(sum(r[k + " runs"] for r in rows)) for k in names}
    ms = {k: sorted({r[k + " m"] for r in rows}) for k in names}
    print("  program runs in the fits: " + ", ".join(f"{k} {v}" for k, v in runs.items())
          + "; m: " + ", ".join(f"{k} {v}" for k, v in ms.items()))
    paired(rows, "default", "m 2")
    paired(rows, "default", "default, no swap")
    paired(rows, "m 8", "default")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--seed", type=int_list, default=[0],
                    help="protocol seed(s), a comma list: 0,3")
    ap.add_argument("--sizes", type=int_list,
                    default=[2, 4, 10, 20], help="people per gallery, a comma list")
    ap.add_argument("--subjects", type=int, default=40, help="AT&T's first N subjects")
    add_cache_flags(ap)
    args = ap.parse_args()
    images, labels = load_att(att_faces_path(), args.subjects)
    per_size = {n: [] for n in args.sizes}
    with jets_folder(args) as jets:
        for seed in args.seed:
            for n, rows in run(args, images, labels, seed, jets).items():
                per_size[n] += rows
    for n, rows in per_size.items():
        report(rows, f"Galleries of {n} people, seeds {','.join(map(str, args.seed))}")


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("ebgm_office", "EBGM on AT&T: a black box's defaults by gallery size",
               notes=docstring(__doc__), output=out.getvalue())
