"""Can compress tell which EBGM client models are much worse than their SVM? (issue 21)

Issue 21 asks ``compress`` to name, in a warning, the clients whose distilled model is
still much worse than their SVM teacher, and allows a fallback the summary reports. A
warning or a fallback is only as good as the signal behind it, known at training time:
this page measures signals against the truth on the test claims.

Protocol, matcher and model: those of ``benchmarks/paper_att_ebgm.py`` (AT&T,
``ssgallery-ebgm`` through the external contract, 20 clients x 5 training images per
repetition), each client trained exactly as ``ssgallery compress`` trains it
(`ssgallery.app.client_fit.train_client`, ``CompressOptions(m=5)``: a black box's
default training, swaps of real training images, and the threshold CV). A client model is
**bad** when its test EER (5 genuine, 200 impostor claims) is more than 5 points above
its own SVM's (issue 21's tail).

The signals, per client, higher meaning "more likely bad":

- ``held-out gap``: the ``teacher_gap`` ``compress`` already measures (share of misranked
  held-out (genuine, impostor) pairs of the threshold CV, distilled model minus SVM;
  `ssgallery.app.client_fit.teacher_agreement`); ``compress`` warns above 0.05.
- ``mirror misfit``: 1 - the Pearson correlation between the SVM's scores and the
  distilled model's on the left-right mirror images of the 100 training images. A mirror
  image is a face no model was fitted on, and the SVM scores it: it asks whether the
  distilled model follows its teacher off the training images (the issue's "teacher-vs-
  distilled agreement on held-out data"), with no label and no test claim. It costs one
  mirror image x training image block per repetition (shared by the clients) and m
  matches per mirror image per client.
- ``mirror gap``: the misranking of the mirrored genuine against the mirrored impostor
  training images, distilled model minus SVM (the held-out gap's twin on mirror images).
- ``held-out misranking``: the distilled model's own share of misranked held-out pairs in
  the threshold CV (``misranking`` beside ``teacher_gap``): a hard client, not only a
  distilled model worse than its teacher.
- ``isolation``: from the Gram matrix alone (no extra match): over the client's
  training images, the most impostor training images that are more similar to one of
  them than its most similar other genuine image.
- ``genuine spread``: minus the median similarity between the client's own training
  images.

Reported per protocol seed: each signal's ROC AUC for telling bad from fine client
models (0.5: no better than chance), how many bad models are among the k most
suspicious, and what a fallback to the client's SVM (its support vectors and dual
coefficients: the teacher exactly, #SVs matches for that client) would give when the
mirror misfit is above ``--misfit`` (a rule read off the first seed, where it looked
best, and checked on the others): mean client EER, client models still more than 5
points worse, and mean matches per claim.

Then a **detector across seeds**: a logistic regression on all six signals
(standardised, classes balanced), fitted on the client models of the other protocol
seeds and scored on this one (leave one seed out: no seed's truth is used to flag its
own models). The ``--flag-share`` most suspicious models of each seed fall back to their
SVM. Beside it, a **perfect detector** (the fallback on exactly the bad models, which no
signal known at training time gives): the most any detector with an SVM fallback can
reach.

``--pair-cache DIR`` keeps the program's answers in an SQLite cache (ExternalMatcher
``cache_dir``): a rerun gives the same figures and sends only new pairs.
"""

import argparse

import numpy as np
from _ebgm_data import int_list
from _ebgm_mirror import mirror_images
from _results import docstring, printed, write_page
from paper_att_ebgm import add_cache_flags, ebgm_command, jets_folder, load_att
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ssgallery.app.client_fit import train_client
from ssgallery.app.options import CompressOptions
from ssgallery.biometrics.metrics import eer
from ssgallery.biometrics.protocol import make_splits
from ssgallery.datasets import att_faces_path
from ssgallery.learn.guard import misranking
from ssgallery.matchers.external import ExternalMatcher

SIGNALS = ("held-out gap", "mirror misfit", "mirror gap", "held-out misranking",
           "isolation", "genuine spread")
TAIL = 5.0  # issue 21: more than 5 points worse than the client's SVM


def one_client(X, y, sim, matcher, gram, groups, Km, Xm, gen, imp, m):
    """One client's test EERs (SVM, distilled) and its signals."""
    fit = train_client(X, y, sim, CompressOptions(m=m), groups=groups,
                       bounds=matcher.bounds(), gram=gram)
    svm, dist = fit.svm, fit.distiller
    row = {"svm": 100 * eer(svm.decision_function(imp), svm.decision_function(gen)),
           "ssvm": 100 * eer(dist.decision_function(imp), dist.decision_function(gen)),
           "n_sv": int(svm.n_support_total_)}
    t_svm = Km[:, svm.support_] @ svm.dual_coef_ + svm.intercept_  # the SVM on the mirrors
    t_dist = dist.decision_function(Xm)
    g, i = y > 0, y < 0
    row["held-out gap"] = fit.cv.get("teacher_gap")
    row["mirror misfit"] = 1.0 - float(np.corrcoef(t_svm, t_dist)[0, 1])
    row["mirror gap"] = misranking(t_dist[g], t_dist[i]) - misranking(t_svm[g], t_svm[i])
    row["held-out misranking"] = fit.cv.get("misranking")
    row.update(gram_signals(gram, g, i))
    return row


def gram_signals(gram, g, i):
    """``isolation`` and ``genuine spread`` of one client, from the training Gram matrix
    (rows: probes) and its genuine/impostor masks ``g``, ``i``."""
    own = gram[np.ix_(g, g)].astype(float)
    np.fill_diagonal(own, -np.inf)
    nearest_own = own.max(axis=1)
    closer = gram[np.ix_(g, i)] > nearest_own[:, None]
    return {"isolation": float(closer.sum(axis=1).max()),
            "genuine spread": -float(np.median(own[np.isfinite(own)]))}


def run_seed(args, images, labels, seed, jets):
    """Every client model of ``args.repetitions`` repetitions of one protocol seed."""
    rows = []
    for split in make_splits(labels, n_train=5, repetitions=args.repetitions, seed=seed):
        tr = split.train_indices()
        matcher = ExternalMatcher(ebgm_command(jets), timeout_per_pair=0.05,
                                  cache_dir=args.pair_cache).fit(images[tr])
        try:
            sim, X = matcher.similarity(), matcher.transform(images[tr])
            gram = sim(X, X)
            Xm = matcher.transform(mirror_images(images[tr]))
            Km = sim(Xm, X)  # mirror image x training image, shared by the clients
            imp = matcher.transform(images[split.impostors])
            for client in split.enrolled[: args.clients]:
                y = np.where(labels[tr] == client, 1, -1)
                gen = matcher.transform(images[split.genuine[client]])
                row = one_client(X, y, sim, matcher, gram, labels[tr], Km, Xm, gen, imp,
                                 args.m)
                row["who"] = f"r{split.repetition}:{client}"
                rows.append(row)
        finally:
            matcher.close()
    return rows


def auc(score, bad):
    """ROC AUC of ``score`` for telling ``bad`` from the rest (ties count one half);
    NaN when either class is empty."""
    return 1.0 - misranking(score[bad], score[~bad])


def signal_matrix(rows):
    """(n_models, n_signals); nothing held out counts as the signal's least suspicious."""
    S = np.array([[np.nan if r[n] is None else r[n] for n in SIGNALS] for r in rows], float)
    return np.where(np.isnan(S), np.nanmin(S, axis=0), S)


def is_bad(rows):
    """(n_models,) bool: more than ``TAIL`` points worse than the client's SVM."""
    return np.array([r["ssvm"] - r["svm"] > TAIL for r in rows])


def fallback_line(label, rows, flagged, m):
    """Mean client EER, models still bad and matches per claim when ``flagged`` models
    fall back to their SVM."""
    svm = np.array([r["svm"] for r in rows])
    kept = np.where(flagged, svm, [r["ssvm"] for r in rows])
    matches = np.where(flagged, [r["n_sv"] for r in rows], m)
    print(f"  {label}: {int(flagged.sum())} flagged ({int((flagged & is_bad(rows)).sum())} "
          f"bad); mean EER {kept.mean():.2f} % ({kept.mean() - svm.mean():+.2f} against the "
          f"SVM), still worse > {TAIL:g}: {int((kept - svm > TAIL).sum())}, mean matches "
          f"per claim {matches.mean():.1f}")


def across_seeds(by_seed, args):
    """The leave-one-seed-out detector and the perfect detector, per seed."""
    if len(by_seed) < 2:
        return
    print(f"\nDetector across seeds (logistic regression on the {len(SIGNALS)} signals, "
          f"fitted on the other seeds), fallback to the SVM for the {args.flag_share:.0%} "
          "most suspicious models of each seed")
    for seed, rows in by_seed.items():
        others = [r for s, rs in by_seed.items() if s != seed for r in rs]
        if len(set(is_bad(others))) < 2:
            print(f"seed {seed}: no detector (the other seeds hold models of one kind only)")
            continue
        detector = make_pipeline(StandardScaler(), LogisticRegression(
            C=0.3, class_weight="balanced", max_iter=1000))
        detector.fit(signal_matrix(others), is_bad(others))
        p = detector.predict_proba(signal_matrix(rows))[:, 1]
        flagged = np.zeros(len(rows), bool)
        flagged[np.argsort(-p, kind="stable")[: round(args.flag_share * len(rows))]] = True
        bad = is_bad(rows)
        print(f"seed {seed}: detector AUC {auc(p, bad):.2f}")
        fallback_line("detector", rows, flagged, args.m)
        fallback_line("perfect detector", rows, bad, args.m)


def report(rows, args, seed):
    svm = np.array([r["svm"] for r in rows])
    ssvm = np.array([r["ssvm"] for r in rows])
    bad = is_bad(rows)
    print(f"\nseed {seed}: {len(rows)} client models, SVM {svm.mean():.2f} %, compress "
          f"{ssvm.mean():.2f} %, bad (more than {TAIL:g} points worse) {int(bad.sum())}: "
          + ", ".join(r["who"] for r, b in zip(rows, bad) if b))
    ks = [k for k in (5, 10, 20) if k <= len(rows)]
    print(f"  {'signal':20s} {'AUC':>5s} " + " ".join(f"{'bad in top ' + str(k):>12s}"
                                                       for k in ks))
    for name, s in zip(SIGNALS, signal_matrix(rows).T):
        top = np.argsort(-s, kind="stable")
        print(f"  {name:20s} {auc(s, bad):5.2f} "
              + " ".join(f"{int(bad[top[:k]].sum()):12d}" for k in ks))
    misfit = np.array([r["mirror misfit"] for r in rows])
    fallback_line(f"fallback to the SVM when mirror misfit > {args.misfit:g}", rows,
                  misfit > args.misfit, args.m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--seed", type=int_list, default=[0],
                    help="protocol seed(s), a comma list: 0,3,4")
    ap.add_argument("--subjects", type=int, default=40, help="AT&T's first N subjects")
    ap.add_argument("--clients", type=int, default=None, help="only the first N per repetition")
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--misfit", type=float, default=0.15,
                    help="the fallback rule: mirror misfit above this")
    ap.add_argument("--flag-share", type=float, default=0.15,
                    help="the detector across seeds flags this share of each seed's models")
    add_cache_flags(ap)
    args = ap.parse_args()
    images, labels = load_att(att_faces_path(), args.subjects)
    print(f"AT&T + ssgallery-ebgm, {args.repetitions} repetition(s) per seed, m = {args.m}, "
          f"compress's training (train_client, CompressOptions(m={args.m}))", flush=True)
    by_seed = {}
    with jets_folder(args) as jets:
        for seed in args.seed:
            by_seed[seed] = run_seed(args, images, labels, seed, jets)
            report(by_seed[seed], args, seed)
    across_seeds(by_seed, args)


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("ebgm_detect", "EBGM on AT&T: can compress tell a failed client model?",
               notes=docstring(__doc__), output=out.getvalue())
