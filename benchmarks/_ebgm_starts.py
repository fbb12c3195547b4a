"""benchmarks/ebgm_tail.py's models that need no program run: a client's start-only
models, cut from the repetition's EBGM similarity matrix (`Blocks`): one start unmoved
(`start_only`), the SVM's genuine part and cohort (`decomposition`, suspect 7's
`cohort_models`), random starts (`random_starts`), the start rules and the held-out
choice among them (suspect 6, `held_out_choice`, with `matcher_medoids`)."""

import numpy as np

from ssgallery.biometrics.heldout import threshold_folds
from ssgallery.biometrics.metrics import eer
from ssgallery.learn.solvers import beta_step
from ssgallery.learn.starts import START_RULES, heldout_start
from ssgallery.learn.supersparse import start_indices
from ssgallery.learn.teacher import SimilaritySVM

LAM_ABS = 5e-7  # beta-steps of the start-only models: the distiller's lambda 1e-5 x its scale


def client_eer(scores_gen, scores_imp):
    return 100 * eer(scores_imp, scores_gen)


def linear_eer(Sg, Si, beta):
    return client_eer(Sg @ beta, Si @ beta)


class Blocks:
    """One client's similarities to the training images, cut from the repetition's
    matrix (no program run): ``train`` (n, n), ``gen`` (5, n), ``imp`` (200, n)."""

    def __init__(self, K, rows_train, rows_gen, rows_imp):
        self.train, self.gen, self.imp = K[rows_train], K[rows_gen], K[rows_imp]


def start_only(B, t, u, P):
    """EER and training Omega of the model on real training images ``P`` (no move)."""
    S = B.train[:, P]
    beta, b = beta_step(S, t, u, LAM_ABS)
    omega = float(u @ (S @ beta + b - t) ** 2)
    return linear_eer(B.gen[:, P], B.imp[:, P], beta), omega


def decomposition(svm, B, y, t, u):
    """EERs of the SVM's genuine part, genuine part - cohort, 5 genuine prototypes."""
    Sg, Si = B.gen, B.imp
    a = np.zeros(len(y))
    a[svm.support_] = svm.dual_coef_
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    part = linear_eer(Sg[:, pos], Si[:, pos], a[pos])
    w = a[pos].sum()
    cohort = client_eer(Sg[:, pos] @ a[pos] - w * Sg[:, neg].mean(1),
                        Si[:, pos] @ a[pos] - w * Si[:, neg].mean(1))
    beta, _ = beta_step(B.train[:, pos], t, u, LAM_ABS)
    return {"svm genuine part": part, "genuine part - cohort": cohort,
            "5 genuine": linear_eer(Sg[:, pos], Si[:, pos], beta)}


def random_starts(B, y, t, u, n, rng):
    """(least-Omega EER, oracle EER) over n random real-image starts."""
    found = []
    for _ in range(n):
        k = int(rng.integers(1, 5))
        P = np.concatenate([rng.choice(np.flatnonzero(y > 0), k, replace=False),
                            rng.choice(np.flatnonzero(y < 0), 5 - k, replace=False)])
        found.append(start_only(B, t, u, P))
    return min(found, key=lambda f: f[1])[0], min(f[0] for f in found)


def matcher_medoids(G, idx, k):
    """k of the rows ``idx`` covering them best under the similarity: greedy facility
    location maximising the mean over idx of max_j s(x_i, z_j) (``G`` = S(X, X))."""
    S = G[np.ix_(idx, idx)]
    chosen, cover = [], np.full(len(idx), -np.inf)
    for _ in range(min(k, len(idx))):
        gain = np.maximum(cover[:, None], S).mean(0)
        gain[chosen] = -np.inf
        chosen.append(int(np.argmax(gain)))
        cover = np.maximum(cover, S[:, chosen[-1]])
    return list(idx[chosen])


COHORTS = (1, 3, 10)
"""Suspect 7's shared cohort sizes."""


def cohort_models(svm, B, y, t, u, P, row):
    """Suspect 7: lead (b) in a budget of m + c matches. The repetition's training
    images ranked once by coverage under the matcher (`matcher_medoids` over all of
    them: one list shared by every client); a client's cohort is the first c of that list
    that are not its own images. ``svm genuine - cohort c``: the SVM's genuine terms
    minus their weight times the mean similarity to the cohort (no fit; 5 + c matches);
    ``k genuine + cohort c``: k genuine images (the genuine rule's k = m - 1 medoids, or
    all 5) and the cohort mean as one more column, beta and b by Eq. 4 (eq:beta)."""
    n = len(y)
    order = matcher_medoids(B.train, np.arange(n), min(n, max(COHORTS) + 5))
    a = np.zeros(n)
    a[svm.support_] = svm.dual_coef_
    pos = np.flatnonzero(y > 0)
    w = a[pos].sum()
    gens = {f"{len(P) - 1} genuine": [p for p in P if y[p] > 0], f"{len(pos)} genuine": pos}
    for c in COHORTS:
        C = [i for i in order if y[i] < 0][:c]
        if len(C) < c:
            continue

        def svm_part(S, C=C):
            return S[:, pos] @ a[pos] - w * S[:, C].mean(1)

        row[f"svm genuine - cohort {c}"] = client_eer(svm_part(B.gen), svm_part(B.imp))
        for name, G in gens.items():
            def feats(S, G=G, C=C):
                return np.column_stack([S[:, G], S[:, C].mean(1)])

            beta, _ = beta_step(feats(B.train), t, u, LAM_ABS)
            row[f"{name} + cohort {c}"] = linear_eer(feats(B.gen), feats(B.imp), beta)


HYBRID = "genuine rule, matcher imp."


def medoid_start(G, y, m):
    """Rows of the ``matcher medoids 4+1`` start: m - 1 genuine + 1 impostor images by
    `matcher_medoids` within each class."""
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    k_pos = min(m - 1, len(pos))
    return matcher_medoids(G, pos, k_pos) + matcher_medoids(G, neg, m - k_pos)


def held_out_choice(svm, B, y, groups, t, u, m, Xt, row):
    """Suspect 6: each start rule unmoved, and the rule `heldout_start` picks on the
    threshold CV's held-out training images (the SVM refitted per fold with its C)."""
    def fit_teacher(train):
        fold = SimilaritySVM(similarity=svm.similarity_, C=svm.C_)
        fold.fit(Xt[train], y[train], B.train[np.ix_(train, train)])
        sv = np.flatnonzero(train)[fold.support_]
        return B.train[:, sv] @ fold.dual_coef_ + fold.intercept_

    row["matcher medoids 4+1"] = start_only(B, t, u, medoid_start(B.train, y, m))[0]
    P = start_indices(Xt, y, u, m, "genuine", np.random.default_rng(0))
    P = [p for p in P if y[p] > 0] + matcher_medoids(B.train, np.flatnonzero(y < 0), 1)
    row[HYBRID] = start_only(B, t, u, P)[0]
    folds = threshold_folds(y, groups, 5, 0)
    for rule in START_RULES:
        P = start_indices(Xt, y, u, m, rule, np.random.default_rng(0))
        row[f"{rule} rule"] = start_only(B, t, u, P)[0]
    if folds is None:  # too few people to hold any out
        row["chosen"], row["held-out choice"] = START_RULES[0], row[f"{START_RULES[0]} rule"]
        return
    rule, mis = heldout_start(Xt, y, B.train, folds, fit_teacher, m, LAM_ABS)
    row["chosen"], row["held-out choice"] = rule, row[f"{rule} rule"]
    row.update({f"{r} held-out misranking": v for r, v in mis.items()})
