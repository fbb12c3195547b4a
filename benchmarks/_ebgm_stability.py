"""Suspect 8 of ``benchmarks/ebgm_tail.py``: how stable the teacher itself is.

Issue 21's tail target asks that no client model be more than 5 points of EER worse
than its SVM on the client's test claims (5 genuine, 200 impostor). With 5 genuine
claims one misranked genuine image moves a client's EER by up to 20 points, so the
target is also a question of how much a good model's test EER moves when its training
changes a little. The reference here is the SVM itself: refitted with its own C on the
training images less one of the client's five (each of the five in turn), scored on the
same claims. No matcher run: every similarity is in the repetition's matrix.
"""

import numpy as np

from ssgallery.learn.teacher import SimilaritySVM

DROPS = 5
"""Genuine training images dropped, one at a time."""


def teacher_stability(svm, B, y, Xt, row, client_eer):
    """``svm drop genuine k`` (k < DROPS): the test EER of the SVM refitted without the
    client's k-th genuine training image (its C kept), into ``row``."""
    pos = np.flatnonzero(y > 0)
    for k, h in enumerate(pos[:DROPS]):
        keep = np.ones(len(y), bool)
        keep[h] = False
        fit = SimilaritySVM(similarity=svm.similarity_, C=svm.C_).fit(
            Xt[keep], y[keep], B.train[np.ix_(keep, keep)])
        cols = np.flatnonzero(keep)[fit.support_]
        row[f"svm drop genuine {k}"] = client_eer(B.gen[:, cols] @ fit.dual_coef_,
                                                  B.imp[:, cols] @ fit.dual_coef_)


def stability_report(rows, seed, bad=5.0):
    """Per dropped image: mean EER and client models more than ``bad`` points worse
    than the full SVM; then the mean count, and the clients with at least one."""
    keys = [k for k in rows[0] if k.startswith("svm drop genuine ")]
    if not keys:
        return
    svm = np.array([r["svm"] for r in rows])
    d = np.array([[r[k] for k in keys] for r in rows]) - svm[:, None]
    print(f"\nSuspect 8: the SVM refitted without one genuine training image, seed {seed} "
          f"({len(rows)} client models; SVM {svm.mean():.2f}%)")
    for j, k in enumerate(keys):
        print(f"  {k:28s} {svm.mean() + d[:, j].mean():8.2f}% {int((d[:, j] > bad).sum()):10d}"
              f" worse > {bad:g}, {int((d[:, j] < -bad).sum())} better by > {bad:g}")
    worst = ", ".join(f"r{r['rep']}:{r['client']} {g:+.1f}"
                      for r, g in sorted(zip(rows, d.max(1)), key=lambda p: -p[1])[:5])
    print(f"  one image less: {np.mean((d > bad).sum(0)):.1f} of {len(rows)} client models "
          f"more than {bad:g} points worse than the full SVM on average; "
          f"{int((d > bad).any(1).sum())} with at least one such drop; worst: {worst}")
