"""Black-box galleries of two and three people: swaps need impostors of two people (issue 21).

A black box's default training keeps m = 5 real training images, improved by 3 swaps
of a prototype for a training image, each lowering the unmoved training objective of
Eq. 2 (eq:objective) most (`ssgallery.learn.initial.swap_start`). In a gallery of two
people every client's impostors are one person, and the swaps then fit that person.
Since `ssgallery.learn.defaults.swap_rounds_for`, a client whose impostors are fewer
than two people gets no swap. This page measures the rule on two black boxes, each
through the external contract:

- ``ebgm``: ``ssgallery-ebgm`` on AT&T, the protocol of ``benchmarks/ebgm_office.py``
  (per repetition 20 clients x 5 training images, 5 genuine and 200 impostor claims per
  client, the impostors people never enrolled; ``--seed`` protocol seeds x
  ``--repetitions``);
- ``dlib``: ``ssgallery-dlibbox`` (dlib descriptors, scores only) on LFW, the protocol of
  ``benchmarks/paper_lfw_dlibbox.py`` (half of the 158 people enrolled with 5 training
  images, their other images genuine claims, every image of the others an impostor
  claim), one repetition per seed of ``--dlib-seed``.

Each repetition's clients are cut into disjoint galleries of ``--sizes`` people; every
client is trained on its gallery's training images only, by the function ``compress``
trains with (`ssgallery.app.client_fit.train_client`, on the gallery's Gram matrix,
``cv_folds=0``: the EER needs no threshold), m = 5 and every other option at its
default:

- ``compress``: as ``compress`` trains it (the people of each image given: no swap for a
  client whose impostors are one person);
- ``3 swaps``: the 3 swaps whatever the impostors (the people not given to
  ``train_client``, so the rule cannot apply: the training before it);
- ``no swap``: ``swap_rounds=0``, the start rule's images.

EER per client model (mean over client models; "worse > 5": client models more than 5
points worse than their SVM), the FRR at FAR = 1 % below each table, then the client
models on which ``compress`` and ``3 swaps`` differ.

    OMP_NUM_THREADS=1 python benchmarks/blackbox_small.py --seed 0,3,4,5,6 --sizes 2,3 \\
        --pair-cache DIR --jets-cache DIR
"""

import argparse
import os
import tempfile

import numpy as np
from _ebgm_data import int_list
from _results import docstring, printed, write_page
from ebgm_office import cut_galleries
from ebgm_swaps import frr_line
from ebgm_tail import paired, summary
from paper_att_ebgm import add_cache_flags, ebgm_repetitions, jets_folder, load_att

from ssgallery.app.options import CompressOptions
from ssgallery.biometrics.protocol import make_splits
from ssgallery.datasets import att_faces_path

ARMS = {"compress": (CompressOptions(m=5, cv_folds=0), True),
        "3 swaps": (CompressOptions(m=5, cv_folds=0, swap_rounds=3), False),
        "no swap": (CompressOptions(m=5, cv_folds=0, swap_rounds=0), True)}
"""name -> (options, people given to train_client)"""


def run_ebgm(args, out):
    images, labels = load_att(att_faces_path(), args.subjects)
    with jets_folder(args) as jets:
        for seed in args.seed:
            for split, every, matcher in ebgm_repetitions(args, images, labels, seed, jets):
                cut_galleries(split, every, labels, matcher.transform(images),
                              matcher.similarity(), matcher, args.sizes, out, ARMS)


def run_dlib(args, out):
    from paper_lfw import load_lfw
    from paper_lfw_dlibbox import program

    from ssgallery.matchers.external import ExternalMatcher

    images, labels, _ = load_lfw(args.faces, args.people)
    folder = args.descriptor_cache or tempfile.mkdtemp(prefix="dlibbox-")
    os.makedirs(folder, exist_ok=True)
    for seed in args.dlib_seed:
        for split in make_splits(labels, n_train=5, repetitions=1, seed=seed):
            every = split.train_indices()
            cache = os.path.join(args.pair_cache, "dlibbox") if args.pair_cache else None
            matcher = ExternalMatcher(program(folder), timeout_per_pair=0.05,
                                      cache_dir=cache).fit(images[every])
            try:
                X, sim = matcher.transform(images), matcher.similarity()
                claims = np.concatenate([every, split.impostors, *split.genuine.values()])
                sim(X[np.unique(claims)], X[every])  # every real pair, one program run
                cut_galleries(split, every, labels, X, sim, matcher, args.sizes, out, ARMS)
            finally:
                matcher.close()


def report(rows, label):
    names = list(ARMS)
    summary(rows, names, label)
    frr_line(rows, names)
    made = {k: sorted({int(r[k + " swaps"]) for r in rows}) for k in names}
    print("  swap rounds made: " + ", ".join(f"{k} {v}" for k, v in made.items()))
    paired(rows, "compress", "3 swaps")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matchers", default="ebgm,dlib", help="a comma list: ebgm,dlib")
    ap.add_argument("--repetitions", type=int, default=5, help="EBGM repetitions per seed")
    ap.add_argument("--seed", type=int_list, default=[0],
                    help="EBGM protocol seed(s), a comma list: 0,3")
    ap.add_argument("--dlib-seed", type=int_list,
                    default=[0], help="LFW protocol seed(s), one repetition each")
    ap.add_argument("--sizes", type=int_list,
                    default=[2, 3], help="people per gallery, a comma list")
    ap.add_argument("--subjects", type=int, default=40, help="AT&T's first N subjects")
    ap.add_argument("--faces", default=None, help="LFW folder [ssgallery.datasets.lfw_path]")
    ap.add_argument("--people", type=int, default=None, help="LFW: only the first N people")
    ap.add_argument("--descriptor-cache", default=None,
                    help="ssgallery-dlibbox's --cache-dir (default a temporary folder)")
    add_cache_flags(ap)
    args = ap.parse_args()
    for name, run in (("ebgm", run_ebgm), ("dlib", run_dlib)):
        if name not in args.matchers.split(","):
            continue
        out = {n: [] for n in args.sizes}
        run(args, out)
        seeds = args.seed if name == "ebgm" else args.dlib_seed
        for n, rows in out.items():
            report(rows, f"{name}: galleries of {n} people, seeds "
                         f"{','.join(map(str, seeds))}")


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("blackbox_small", "Black-box galleries of two and three people: when to swap",
               notes=docstring(__doc__), output=out.getvalue())
