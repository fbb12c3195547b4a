"""Choosing a distiller's start on held-out data (issue 21; docs/method.md, "Robust
training for black-box matchers").

With a black-box matcher the model at its starting prototypes, real training images,
is already about as good or as bad as after Algorithm 1's sweeps
(benchmarks/ebgm_tail.py), and the training Omega of Eq. 2 (eq:objective) cannot tell a
good start from a bad one: a prototype placed on a training image fits that image
through its self-similarity. `heldout_start` compares the start rules on images held
out of the fit instead, for free: every similarity a start of real images needs is in
the Gram matrix S(X, X) of the training images, so no matcher runs. A diagnostic, not
used by ``compress``: on EBGM with five genuine images per client the choice it makes
does not carry over to new images reliably (benchmarks/ebgm_tail.py, suspect 6).
"""

import numpy as np

from ssgallery.learn.guard import misranking
from ssgallery.learn.initial import start_indices
from ssgallery.learn.solvers import beta_step
from ssgallery.learn.supersparse import balanced_weights

START_RULES = ("genuine", "class")
"""The candidate rules, in order of preference on a tie (`initial_prototypes`)."""


def heldout_start(X, y, gram, folds, fit_teacher, m, lam, rules=START_RULES,
                  random_state=0):
    """The start rule whose unmoved model ranks held-out images best.

    For each fold j: the teacher refitted on the other folds (``fit_teacher``) gives the
    targets; each rule's m starting prototypes are chosen among the other folds' images
    (`start_indices`), beta and b by Eq. 4 (eq:beta) with the class-balanced weights;
    that model scores fold j's images, all through ``gram`` (no matcher run). The rule
    of least share of misranked held-out (genuine, impostor) pairs
    (`ssgallery.learn.guard.misranking`) wins, ties going to the earlier rule.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The training samples (where the rules pick their medoids).
    y : ndarray of shape (n,)
        > 0 genuine, <= 0 impostor.
    gram : ndarray of shape (n, n)
        S(X, X): ``gram[i, k] = s(x_i, x_k)``.
    folds : ndarray of shape (n,) of int
        Fold of each sample, 0..k-1 (`ssgallery.biometrics.heldout.threshold_folds`:
        impostors held out by subject).
    fit_teacher : callable (train mask (n,) of bool) -> ndarray of shape (n,)
        The teacher refitted on the masked samples, its decision values on all n.
    m : int
        Prototypes.
    lam : float
        Absolute ridge penalty on beta (the distiller's ``lam_``; see `gram_scale`).
    rules : sequence of str
        `initial_prototypes` rules (``"genuine"``, ``"class"``).
    random_state : int

    Returns
    -------
    rule : str
    misrankings : dict
        ``{rule: held-out misranking}``.
    """
    y = np.asarray(y)
    held = {r: ([], []) for r in rules}
    for j in range(int(folds.max()) + 1):
        train, test = folds != j, folds == j
        targets = fit_teacher(train)
        rows = np.flatnonzero(train)
        u = balanced_weights(y[rows])
        for r in rules:
            rng = np.random.default_rng(random_state)
            P = rows[start_indices(X[rows], y[rows], u, m, r, rng)]
            beta, b = beta_step(gram[np.ix_(rows, P)], targets[rows], u, lam)
            scores = gram[np.ix_(test, P)] @ beta + b
            held[r][0].append(scores[y[test] > 0])
            held[r][1].append(scores[y[test] <= 0])
    mis = {r: misranking(np.concatenate(g), np.concatenate(i)) for r, (g, i) in held.items()}
    return min(rules, key=lambda r: (mis[r], rules.index(r))), mis
