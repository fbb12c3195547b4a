"""How the SVM teacher's choices behave on AT&T (issue 2, item 3).

Protocol (the library's ``make_splits``, Sect. IV-A): per repetition, 20 of the 40
subjects are enrolled clients with 5 training images each (100 training images); each
client's 5 other images are genuine claims, the 200 images of the 20 other subjects are impostor claims against
every client. Eigenface features (PCA keeping 95 % variance, fitted on the training
images). One-vs-all SVM per client (5 genuine vs 95 impostors).

Prints, side by side in one run:
1. how often each C is picked by plain CV accuracy (ties -> smallest C, what
   GridSearchCV does) and by the teacher's balanced rule (balanced accuracy, ties by
   AUC, then larger C), and the EER each choice gives;
2. EER and mean #SVs of the full SVM for gamma = "paper" (1/d), "median", "cv".

    OMP_NUM_THREADS=1 python benchmarks/teacher_att.py --repetitions 2
"""

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _results import docstring, printed, write_page

from ssgallery.biometrics.metrics import average_eer, roc_curve
from ssgallery.biometrics.protocol import make_splits
from ssgallery.datasets import att_faces_path
from ssgallery.images.ingest import load_faces
from ssgallery.learn.teacher import SimilaritySVM, select_index, select_index_plain
from ssgallery.matchers.eigenface import EigenfaceMatcher


def features(train_images, other_images, kind="eigenface"):
    """Eigenface features: the project's matcher (unit-RMS scaled PCA), or ``kind="pca"``
    PCA(0.95) on pixels/255 (unscaled coefficients)."""
    if kind == "eigenface":
        mat = EigenfaceMatcher().fit(train_images)
        return mat.transform(train_images), mat.transform(other_images), "EigenfaceMatcher"
    from sklearn.decomposition import PCA

    def flat(a):
        return a.reshape(len(a), -1) / 255.0

    pca = PCA(n_components=0.95, svd_solver="full").fit(flat(train_images))
    return (pca.transform(flat(train_images)), pca.transform(flat(other_images)),
            "PCA(0.95) on pixels/255")


def averaged_eer(genuine_list, impostor_list):
    """EER of the FRR-vs-FAR curve averaged over clients (the library's convention)."""
    return average_eer([roc_curve(i, g)[:2] for g, i in zip(genuine_list, impostor_list)])


def study(args, images, labels):
    """Every enrolled client's SVMs in every repetition, with each gamma: the C each rule
    picks by 5-fold CV and the test scores at that C (``paper`` and ``median`` gamma), and
    the full SVM's test scores, #SV and gamma_ (every gamma)."""
    grid = None
    rules_ = [(g, r) for g in ("paper", "median") for r in ("plain accuracy", "balanced rule")]
    picks = {k: [] for k in rules_}
    degenerate = dict.fromkeys(rules_, 0)
    scores_c = {k: ([], []) for k in rules_}
    gammas = ("paper", "median", "cv")
    res_g = {g: ([], [], [], []) for g in gammas}  # genuine, impostor, #SV, gamma_
    for sp in make_splits(labels, n_train=5, repetitions=args.repetitions, seed=0):
        enrolled, tr = sp.enrolled, sp.train_indices()
        test = np.concatenate([*(sp.genuine[c] for c in enrolled), sp.impostors])
        Xtr, Xte, how = features(images[tr], images[test], args.features)
        ytr_lab, yte_lab = labels[tr], labels[test]
        for c in enrolled:
            y = np.where(ytr_lab == c, 1, -1)
            g_mask = yte_lab == c
            i_mask = ~np.isin(yte_lab, enrolled)
            for gname in gammas:
                svm = SimilaritySVM(gamma=gname).fit(Xtr, y)
                f = svm.decision_function(Xte)
                res_g[gname][0].append(f[g_mask])
                res_g[gname][1].append(f[i_mask])
                res_g[gname][2].append(svm.n_support_total_)
                res_g[gname][3].append(svm.gamma_)
                if gname in ("paper", "median"):  # C selection study
                    cs = svm.cv_scores_
                    grid = cs["C"]
                    rules = {"plain accuracy": select_index_plain(cs["accuracy"][0]),
                             "balanced rule": select_index(cs["balanced_accuracy"][0],
                                                           cs["roc_auc"][0])}
                    for rule, k in rules.items():
                        key = (gname, rule)
                        picks[key].append(grid[k])
                        degenerate[key] += cs["balanced_accuracy"][0][k] <= 0.5 + 1e-9
                        f2 = (svm if rule == "balanced rule" else
                              SimilaritySVM(gamma=gname, C=grid[k]).fit(Xtr, y)).decision_function(Xte)
                        scores_c[key][0].append(f2[g_mask])
                        scores_c[key][1].append(f2[i_mask])
    return SimpleNamespace(grid=grid, picks=picks, degenerate=degenerate, scores_c=scores_c,
                           gammas=gammas, res_g=res_g, how=how, d=Xtr.shape[1])


def report(args, found):
    """The two tables of `study`'s ``found``: the C picked per (gamma, rule) with the EER
    at it, and the full SVM by gamma."""
    grid, picks, degenerate, scores_c = (found.grid, found.picks, found.degenerate,
                                         found.scores_c)
    gammas, res_g, how = found.gammas, found.res_g, found.how
    n = len(picks[("median", "plain accuracy")])
    print(f"AT&T, {args.repetitions} repetition(s) x 20 clients = {n} one-vs-all SVMs "
          f"(5 genuine vs 95 impostors each); features: {how}, d = {found.d}")
    print()
    print("C picked by 5-fold CV:")
    print(f"{'gamma':<8}{'rule':<16}" + "".join(f"{'C=' + format(c, 'g'):>9}" for c in grid)
          + f"{'EER':>9}{'BA=0.5':>8}")
    for (gname, rule), chosen in picks.items():
        cnt = [np.sum(np.isclose(chosen, c)) for c in grid]
        e = averaged_eer(*scores_c[(gname, rule)])
        print(f"{gname:<8}{rule:<16}" + "".join(f"{k:>9d}" for k in cnt)
              + f"{100 * e:>8.2f}%{degenerate[(gname, rule)]:>8d}")
    print("(BA=0.5: picks whose CV balanced accuracy is 0.5, i.e. a one-class classifier)")
    print()
    print("Full SVM by gamma (C by the balanced rule):")
    print(f"{'gamma':<8}{'mean gamma_':>14}{'mean #SV':>10}{'EER':>9}")
    for gname in gammas:
        gl, il, nsv, gv = res_g[gname]
        e = averaged_eer(gl, il)
        print(f"{gname:<8}{np.mean(gv):>14.4g}{np.mean(nsv):>10.1f}{100 * e:>8.2f}%")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--data", default=str(att_faces_path()))
    ap.add_argument("--features", choices=("eigenface", "pca"), default="eigenface",
                    help="eigenface: the project's matcher; pca: PCA(0.95) on pixels/255")
    args = ap.parse_args(argv)
    if not Path(args.data).is_dir():
        sys.exit(f"teacher_att.py: error: AT&T faces not found at {args.data}")
    faces = load_faces(args.data, size=None)
    images, labels = faces.images, np.asarray(faces.labels)
    t0 = time.perf_counter()
    report(args, study(args, images, labels))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("teacher_att", "The SVM teacher's choices of C and gamma on AT&T",
               notes=docstring(__doc__), output=out.getvalue())
