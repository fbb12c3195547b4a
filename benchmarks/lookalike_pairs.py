"""Look-alike pairs at compress time: do they predict what unseen claims meet?

compress's threshold calibration claims every impostor person it holds (the other
clients, the background people of ``enroll --background``) against every client on
held-out scores: for each pair (client c, impostor person p) it has p's held-out claims
against c, k of them accepted out of n at c's stored threshold. A pair accepted often
is a person the matcher confuses with that client. This page measures whether such a
pair, **flagged** at compress time, predicts what claims never seen at compress time
meet:

- (a) **the pair**: p's unseen images claimed against c (verification at c's stored
  threshold): at least one accepted ("accepted on test"); "look-alike on test": the
  flag's own rule applied to those test counts;
- (b) **the client**: c accepts strangers (people never enrolled, not even as
  background) at more than twice the target with at least ``--min-accepts`` stranger
  claims accepted (an over-acceptor, benchmarks/client_far.py's `over`); a client is
  "named" when at least one of its pairs is flagged;
- why: the same stored images of p that the held-out count claimed, scored by c's
  final model (trained on every impostor, p's images among them) at its threshold
  ("deployed model's accepts");
- (c) **1:N**: p's unseen images searched among all clients (``identify --open-set``'s
  own code path at the gallery's operating point, target FPIR 1 %) and returned as c:
  for a client p a wrong identification, for a background person a false positive
  identification.

**The flag** (one rule, fixed before measuring): ``k >= 2`` and the lower end of the
95 % Clopper-Pearson interval of ``k / n`` (`ssgallery.biometrics.intervals.
clopper_pearson`, the one interval implementation) above the target FAR F. A pair is
one person, so its claims are one cluster and the binomial interval is the pair's own.

**The bar** (fixed before measuring): the tool names pairs only if, on both real data
sets (AT&T with eigenface, LFW with dlib), pooled over runs, (a)'s precision is at
least 50 % (at least half of the flagged pairs have one of p's unseen claims accepted
by c), its recall at least 25 % (of the pairs look-alike on test, flagged at compress
time) and flagged pairs are accepted on test at least 5 times as often as pairs not
flagged. (b) and (c) are reported for what the documentation may say, with no bar.

Per run (seed = run): ``--clients`` people enrolled with 5 images (their other images
are the unseen test claims), ``--background`` people with half of their images (at most
10) in the store as background and the other half (at most 10) unseen, every other
person a stranger (all images unseen); compressed with compress's defaults (the library
function behind the command, seed = run). synth: the sample-data generator, 40
identities x 10 images of seed 1 + run; att: AT&T (eigenface); lfw: LFW people with at
least 6 images (dlib). Pairs are counted only for clients whose held-out count is not
fitted on its own scores (as compress counts them).

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/lookalike_pairs.py \
        [--datasets att,lfw,synth] [--repetitions att:5,lfw:3,synth:5] [--page]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _lookalike_tables as tables
import _results
from calibration import _link, face_subjects

MATCHER = {"att": "eigenface", "lfw": "dlib", "synth": "eigenface"}
SIZES = {"att": (20, 6), "synth": (20, 6), "lfw": (40, 60)}  # clients, background


def split(subjects, n_clients, n_background, rng, work):
    """work/train (clients' 5 images), work/background (half of a background person's
    images, at most 10), work/probes (every image never in the store: the clients'
    others, the background people's other half, at most 10, every stranger's).
    Returns (clients, background) names."""
    names = sorted(subjects)
    chosen = rng.permutation(names)
    clients = sorted(str(s) for s in chosen[:n_clients])
    background = sorted(str(s) for s in chosen[n_clients:n_clients + n_background])
    for s in names:
        files = [subjects[s][i] for i in rng.permutation(len(subjects[s]))]
        if s in clients:
            _link(work / "train", s, files[:5])
            _link(work / "probes", s, files[5:])
        elif s in background:
            half = len(files) // 2
            _link(work / "background", s, files[:min(half, 10)])
            _link(work / "probes", s, files[half:][:10])
        else:
            _link(work / "probes", s, files)
    return clients, background


def _subjects(dataset, work, run):
    from ssgallery.datasets import att_faces_path, lfw_path

    if dataset == "synth":
        from ssgallery.images.synth import write_sample_data

        write_sample_data(work / "synth", identities=40, images=10, seed=1 + run, probes=0)
        return face_subjects(work / "synth" / "faces", 6)
    return face_subjects(Path(att_faces_path() if dataset == "att" else lfw_path()), 6)


def _flag(k, n, far):
    from ssgallery.biometrics.intervals import clopper_pearson

    return k >= 2 and clopper_pearson(k, n)[0] > far


def _heldout_pairs(summary, labels, order):
    """{(client, person): [k, n]} of compress's own held-out accepts: each client's
    impostor scores normalised leaving their person out (`ssgallery.biometrics.
    calibration.cross_normalised`) against the global T `calibrate_thresholds` sets
    (znorm-global, compress's default), and the raw thresholds it gives."""
    from ssgallery.biometrics.calibration import calibrate_thresholds, cross_normalised

    held = [summary.heldout[c] for c in order]
    who = [labels[np.asarray(h["impostor_row"], dtype=int)] for h in held]
    t, info = calibrate_thresholds([h["impostor"] for h in held],
                                   [r["normalization"] for r in summary.clients],
                                   summary.target_far, "znorm-global", people=who)
    pairs = {}
    for c, h, w in zip(order, held, who):
        acc = cross_normalised(np.asarray(h["impostor"], dtype=float), w) \
            >= info["global_threshold"]
        for p in np.unique(w):
            mine = w == p
            pairs[(c, str(p))] = [int(acc[mine].sum()), int(mine.sum())]
    assert sum(v[0] for v in pairs.values()) == info["accepted"], "not compress's count"
    return pairs, t


def _searches(gallery, probes):
    """{(client returned, person searched): searches} of identify --open-set."""
    from ssgallery.app.identify import identify

    files = sorted(str(p) for d in probes.iterdir() for p in d.iterdir())
    results, _, _ = identify(gallery, files, top=1, open_set=True, warn=lambda m: None)
    out = {}
    for f, r in zip(files, results):
        if r.identified is not None:
            key = (str(r.identified), Path(f).parent.name)
            out[key] = out.get(key, 0) + 1
    return out, {p: sum(Path(f).parent.name == p for f in files)
                 for p in {Path(f).parent.name for f in files}}


def run_one(dataset, run, args):
    """One run's pairs (held-out and test counts, 1:N returns) and clients (stranger
    FAR), see the module docstring."""
    from ssgallery.app.compress import CompressOptions, compress
    from ssgallery.app.enroll import enroll
    from ssgallery.app.roc import score_gallery
    from ssgallery.formats.store import load_store

    with tempfile.TemporaryDirectory(prefix="ssg-pairs-") as tmp:
        work = Path(tmp)
        n_clients, n_background = args.sizes[dataset]
        clients, background = split(_subjects(dataset, work, run), n_clients, n_background,
                                    np.random.default_rng(run), work)
        enroll(work / "train", work / "e.h5", matcher=MATCHER[dataset], warn=lambda m: None,
               background=work / "background" if background else None)
        summary = compress(work / "e.h5", work / "g.h5", CompressOptions(seed=run))
        table = score_gallery(work / "g.h5", work / "probes", warn=lambda m: None)
        (work / "seen").mkdir()  # every stored image (the training faces)
        for d in ("train", "background"):
            for s in (work / d).iterdir() if (work / d).is_dir() else ():
                (work / "seen" / s.name).symlink_to(s)
        seen = score_gallery(work / "g.h5", work / "seen", warn=lambda m: None)
        returned, searched = _searches(work / "g.h5", work / "probes")
        labels = np.asarray(load_store(work / "e.h5", images=False).labels).astype(str)
    order = [r["client"] for r in summary.clients]
    held, t = _heldout_pairs(summary, labels, order)
    assert np.allclose(t, [table.clients[c]["threshold"] for c in order]), "not compress's"
    far, known = summary.target_far, {*clients, *background}
    skip = set(summary.not_held_out or ())
    pairs, rows = [], []
    for c, tc in zip(order, t):
        mine = table.claimed == c
        acc = table.score >= tc  # NaN (failure to acquire): rejected
        stranger = mine & ~np.isin(table.real, list(known))
        rows.append({"client": c, "k": int(acc[stranger].sum()), "n": int(stranger.sum())})
        if c in skip:
            continue
        for p in sorted(known - {c}):
            k, n = held.get((c, p), (0, 0))
            test = mine & (table.real == p)
            kt, nt = int(acc[test].sum()), int(test.sum())
            fit = seen.score[(seen.claimed == c) & (seen.real == p)] >= tc
            pairs.append({"client": c, "person": p, "kind": "client" if p in clients
                          else "background", "k": k, "n": n, "flag": _flag(k, n, far),
                          "fit_k": int(fit.sum()), "test_k": kt, "test_n": nt, "test_flag": _flag(kt, nt, far),
                          "returned": returned.get((c, p), 0),
                          "searches": searched.get(p, 0)})
    return {"dataset": dataset, "run": run, "target_far": far, "clients": rows,
            "pairs": pairs, "strangers": len(set(table.real.tolist()) - known),
            "held_out": [sum(v[0] for v in held.values()), sum(v[1] for v in held.values())],
            "recorded": [(summary.calibration or {}).get(k) for k in ("accepted", "impostors")],
            "commit": _results.git_commit()}


def _repetitions(text, names):
    if ":" not in text:
        return dict.fromkeys(names, int(text))
    given = {k: int(v) for k, v in (part.split(":") for part in text.split(","))}
    return {name: given.get(name, 1) for name in names}


def _dlib_cache(path, save=False):
    from ssgallery.matchers import deep

    if save:
        deep.save_cache(path)
    elif path.exists():
        print(f"{deep.load_cache(path)} cached dlib descriptors", file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="att,lfw,synth")
    parser.add_argument("--repetitions", default="att:5,lfw:3,synth:5",
                        help="runs per data set: a number, or name:k,...")
    parser.add_argument("--sizes", default=None,
                        help="name:clients+background,... [att:20+6,synth:20+6,lfw:40+60]")
    parser.add_argument("--min-accepts", type=int, default=5)
    parser.add_argument("--dlib-cache", default=None,
                        help="dlib descriptor cache read and updated "
                             "[benchmarks/out/lookalike_pairs/dlib_descriptors.npz]")
    parser.add_argument("--page", action="store_true",
                        help="write docs/benchmarks/lookalike_pairs.md")
    args = parser.parse_args(argv)
    args.sizes = dict(SIZES) | {k: tuple(map(int, v.split("+"))) for k, v in (
        part.split(":") for part in (args.sizes or "").split(",") if part)}
    out = _results.OUT / "lookalike_pairs"
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.dlib_cache or out / "dlib_descriptors.npz")
    names = [d for d in args.datasets.split(",") if d]
    counts, runs = _repetitions(args.repetitions, names), []
    for dataset in names:
        if MATCHER[dataset] == "dlib":
            _dlib_cache(cache)
        for run in range(counts[dataset]):
            runs.append(run_one(dataset, run, args))
            print(tables.run_line(runs[-1], args.min_accepts), file=sys.stderr, flush=True)
        if MATCHER[dataset] == "dlib":
            _dlib_cache(cache, save=True)
    (out / "results.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = tables.summary_lines(runs, args.min_accepts)
    print("\n".join(lines))
    if args.page:
        _results.write_page("lookalike_pairs", "Look-alike pairs at compress time",
                            tables.page_tables(runs, args.min_accepts),
                            notes="\n".join(lines) + "\n\n" + _results.docstring(__doc__))
    return runs


if __name__ == "__main__":
    main()
