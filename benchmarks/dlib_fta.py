"""Failure to acquire with the dlib matcher: genuine probes refused against non-faces let in.

The dlib matcher's quality is the HOG detector's score of the face it used (detections
down to ``deep.DETECT_FLOOR``), or ``deep.FALLBACK_QUALITY`` when nothing was detected
and the whole image was taken as the face; ``is_face`` is quality >= a threshold learned
at ``fit`` from the training images' qualities. Candidate rules for that threshold:

- ``quantile 1 %``: min(0, the 1 % quantile of the training qualities) (the rule
  before this benchmark);
- ``minimum``: min(0, the lowest training quality);
- ``minimum - 0.25``: a margin below it;
- ``dlib's 0``: 0, dlib's own detection threshold (fallbacks pass only when more than
  half of the training images are fallbacks);
- ``any detection``: ``deep.quality_threshold``, the library's rule: every detection
  passes, a fallback fails unless more than half of the training images are fallbacks;
- ``accept all``: no failure to acquire (for reference).

Protocol: the library's ``make_splits`` (half of the people enrolled with 5 training
images each; seed 0). Genuine FTA = genuine claim images refused / genuine claim images;
impostor FTA = impostor images refused / impostor images (an image refused is refused
against every client). Non-faces: the test suite's corpus (``tests/helpers.py
write_non_faces``: black, white, three greys, uniform and Gaussian noise, 2x2 PGMs, a
6000x6000 blank), read at the data set's image size as ``verify`` reads probes;
``accepted`` counts non-face images let in, summed over repetitions. Qualities are
read from ``--cache`` when ``benchmarks/paper_lfw.py`` has saved it, else computed
(detector only, no descriptor).

    OMP_NUM_THREADS=1 python benchmarks/dlib_fta.py [--repetitions 5]
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from _results import docstring, printed, write_page
from paper_lfw import OUT, load_lfw

from ssgallery.biometrics.protocol import make_splits
from ssgallery.datasets import att_faces_path
from ssgallery.images.ingest import load_faces, load_image_list
from ssgallery.matchers import deep

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import write_non_faces  # the test suite's non-face corpus


def _fallback_share_rule(cut):
    return lambda q: deep.FALLBACK_QUALITY if deep.quality_threshold(q) < deep.DETECT_FLOOR \
        else cut


RULES = {
    "quantile 1 %": lambda q: min(0.0, float(np.quantile(q, 0.01))),
    "minimum": lambda q: min(0.0, float(np.min(q))),
    "minimum - 0.25": lambda q: min(0.0, float(np.min(q)) - 0.25),
    "dlib's 0": _fallback_share_rule(0.0),
    "any detection": deep.quality_threshold,
    "accept all": lambda q: -np.inf,
}


def qualities(images):
    """Detector quality of images (n, H, W), shape (n,), through the matcher's cache."""
    return deep.DlibMatcher().describe(images, descriptors=False)[1]


def non_face_qualities(folder, shape):
    """Qualities of the non-face corpus read at ``shape`` (H, W) like verify's probes."""
    paths = write_non_faces(str(folder))
    images = load_image_list(list(paths.values()), size=shape[::-1], warn=lambda m: None)
    return qualities(images)


def measure(name, labels, q, q_non, repetitions, n_people=None):
    """Print one table: per rule, genuine and impostor FTA and non-faces accepted."""
    splits = make_splits(labels, n_train=5, repetitions=repetitions, seed=0)
    counts = {rule: np.zeros(6, dtype=int) for rule in RULES}
    for split in splits:
        q_train = q[split.train_indices()]
        genuine = np.concatenate([split.genuine[c] for c in split.enrolled])
        for rule, threshold_of in RULES.items():
            t = threshold_of(q_train)
            counts[rule] += [np.sum(q[genuine] < t), len(genuine),
                             np.sum(q[split.impostors] < t), len(split.impostors),
                             np.sum(q_non >= t), len(q_non)]
    n_fall = int(np.sum(q <= deep.FALLBACK_QUALITY))
    print(f"{name}: {len(set(labels.tolist()))} people, {len(q)} images, {n_fall} without "
          f"a detection, {int(np.sum((q > deep.FALLBACK_QUALITY) & (q < 0)))} detected "
          f"below 0; {repetitions} repetition(s)")
    print(f"  {'rule':<16}{'genuine FTA':>18}{'impostor FTA':>20}{'non-faces accepted':>20}")
    for rule, (gf, gn, i_f, i_n, na, nn) in counts.items():
        print(f"  {rule:<16}{gf:>6d}/{gn:<5d}{100 * gf / gn:5.2f} %"
              f"{i_f:>7d}/{i_n:<6d}{100 * i_f / i_n:5.2f} %{na:>12d}/{nn:<7d}")
    print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--cache", default=str(OUT / "dlib_descriptors.npz"),
                    help="paper_lfw.py's descriptor cache ('' for none)")
    ap.add_argument("--no-att", action="store_true", help="LFW only")
    ap.add_argument("--people", type=int, default=None,
                    help="only LFW's first N people (a quick check; not the figures)")
    args = ap.parse_args(argv)
    if args.cache and Path(args.cache).exists():
        print(f"(qualities cached: {deep.load_cache(args.cache)} images from "
              f"{Path(args.cache).name})\n", file=sys.stderr)

    images, labels, _ = load_lfw(None, args.people)
    q = qualities(images)
    with tempfile.TemporaryDirectory() as tmp:
        q_non = non_face_qualities(Path(tmp) / "lfw", images.shape[1:])
        few = np.isin(labels, sorted(set(labels.tolist()))[:20])
        measure("LFW, first 20 people (tests/test_paper_lfw.py)", labels[few], q[few],
                q_non, 1)
        measure("LFW", labels, q, q_non, args.repetitions)
        if not args.no_att and att_faces_path().is_dir():
            faces = load_faces(att_faces_path(), size=None)
            q_att = qualities(faces.images)
            q_non = non_face_qualities(Path(tmp) / "att", faces.images.shape[1:])
            measure("AT&T", np.asarray(faces.labels), q_att, q_non, args.repetitions)


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("dlib_fta", "dlib matcher: failure to acquire by threshold rule",
               notes=docstring(__doc__), output=out.getvalue())
