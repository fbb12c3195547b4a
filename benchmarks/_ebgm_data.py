"""What every EBGM benchmark shares (paper_att_ebgm.py, which re-exports these, and
ebgm_office, ebgm_swaps, ebgm_tail, ebgm_detect, blackbox_small): AT&T's faces
(`load_att`), comma lists of numbers (`int_list`), the cache options (`add_cache_flags`), the run's jets folder
(`jets_folder`) and, per repetition, the split and ``ssgallery-ebgm`` fitted on its
training images (`ebgm_repetitions`)."""

import shutil
import tempfile
from contextlib import contextmanager

import numpy as np
from _ebgm_guard import ebgm_command

from ssgallery.biometrics.protocol import make_splits
from ssgallery.matchers.external import ExternalMatcher


def load_att(root, subjects=40):
    from PIL import Image

    images, labels = [], []
    for s in range(1, subjects + 1):
        for k in range(1, 11):
            with Image.open(root / f"s{s}" / f"{k}.pgm") as img:
                images.append(np.asarray(img.convert("L"), dtype=float))
            labels.append(f"s{s}")
    return np.stack(images), np.array(labels)


def int_list(text):
    """A comma list of whole numbers (``"0,3"``: ``[0, 3]``), an argparse ``type``."""
    return [int(s) for s in text.split(",")]


def add_cache_flags(ap):
    """The EBGM benchmarks' ``--pair-cache`` and ``--jets-cache`` options."""
    ap.add_argument("--pair-cache", default=None, help="SQLite answer cache folder")
    ap.add_argument("--jets-cache", default=None,
                    help="ssgallery-ebgm's --cache-dir (Gabor responses; default a temporary "
                         "folder)")


@contextmanager
def jets_folder(args):
    """``args.jets_cache``, or a temporary folder for the run, removed after it."""
    if args.jets_cache:
        yield args.jets_cache
        return
    folder = tempfile.mkdtemp(prefix="ebgm-jets-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def ebgm_repetitions(args, images, labels, seed, jets):
    """Per repetition of the protocol (5 training images per client, ``args.repetitions``
    from ``seed``): the split, its training rows and ``ssgallery-ebgm``'s matcher fitted
    on them (answers cached in ``args.pair_cache``), closed after the repetition."""
    for split in make_splits(labels, n_train=5, repetitions=args.repetitions, seed=seed):
        tr = split.train_indices()
        matcher = ExternalMatcher(ebgm_command(jets), timeout_per_pair=0.05,
                                  cache_dir=args.pair_cache).fit(images[tr])
        try:
            yield split, tr, matcher
        finally:
            matcher.close()
