"""Mirror images as distillation points, with the start chosen on them (issue 21).

A start made of training images fits those images through their self-similarity, so
the training Omega of Eq. 2 (eq:objective) cannot rank starts (``benchmarks/
ebgm_tail.py``, suspect 3). A left-right mirror image of a training face is a
genuine-like (or impostor-like) point that no start is made of: `mirrored_fit` trains
the distiller on the training images and their mirror images (the SVM, unchanged,
scores both) and starts it from the least-Omega unmoved start on both
(`ssgallery.learn.initial.least_omega_start`, beta by Eq. 4 (eq:beta)) among
``n_starts`` starts drawn from the training images only (`candidate_starts`: the rule's,
the other class-aware rule's, random ones with a random split between the classes).
Used by ``benchmarks/paper_att_ebgm.py`` (the ``ssvm mirrored`` arm) and
``benchmarks/ebgm_tail.py`` (suspect 9).
"""

import numpy as np

from ssgallery.learn.initial import candidate_starts, least_omega_start, similarity_scale
from ssgallery.learn.supersparse import SuperSparseDistiller, balanced_weights


def mirror_images(images):
    """Left-right mirror images, shape (n, H, W)."""
    return np.ascontiguousarray(images[:, :, ::-1])


def mirrored_fit(svm, Xt, Xm, y, params, n_starts, seed):
    """The distiller (``params``: its options, teacher and similarity aside) fitted on
    ``Xt`` and its mirror images ``Xm`` (same labels), started from the least-Omega start
    of `candidate_starts` on ``Xt``'s rows. Returns the fitted distiller."""
    X, labels = np.vstack([Xt, Xm]), np.concatenate([y, y])
    dist = SuperSparseDistiller(teacher=svm, prefit=True, similarity=svm.similarity_,
                                random_state=seed, **params)
    _, targets, u, _ = dist.teacher_targets(X, labels)
    u = u / u.sum()
    lam = dist.lam * (similarity_scale(X, u, svm.similarity_) if dist.lam_scale == "gram"
                      else 1.0)
    starts = candidate_starts(Xt, y, balanced_weights(y), dist.n_prototypes, dist.init,
                              np.random.default_rng(seed), n_starts)
    Z0, _ = least_omega_start(X, targets, u, starts, svm.similarity_, lam)
    # SuperSparseDistiller.fit from this start (a black box: no points between the classes)
    dist.teacher_ = svm
    dist.regressor_ = dist.make_regressor(prototypes_init=Z0).fit(X, targets, sample_weight=u)
    return dist
