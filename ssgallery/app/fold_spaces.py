"""Matcher spaces for the threshold CV: the store's matcher refitted without the people
a fold holds out.

A matcher that learns from images (eigenface's PCA basis) is fitted at enroll on every
stored image, so the impostors that a client's threshold CV holds out are inside the
basis, whereas the impostors met at verification time are not. Thresholds set on such
held-out scores accept more unseen people than the target promises. Here, for each fold
of a client's threshold CV, the matcher is refitted on every stored image except those
of the fold's held-out impostor subjects and the samples are mapped into that space
(`ssgallery.app.client_training.train_client`, ``fold_spaces``).

Clients share their folds (one seeded order of the store's subjects,
`subject_order` and `ssgallery.app.client_training.threshold_folds`), so a
fold's refit serves every client that is not itself held out in it; the last few refits
are cached. A refit is the matcher's `ssgallery.matchers.refits` (eigenface: from the
images' Gram matrix, computed once: no pixel is read again). Matchers whose ``fit``
does not learn from the images (a pretrained descriptor, an external program) are
never refitted.
"""

from collections import OrderedDict

import numpy as np

KEEP = 16  # refitted spaces cached (the shared folds plus the latest clients' own)


def learns_from_images(matcher):
    """Whether refitting ``matcher`` on other images changes its space."""
    return bool(getattr(matcher, "learns_from_images", True))


def subject_order(subjects, seed):
    """One seeded order of every subject of a store, shape (s,), shared by all clients."""
    return np.random.default_rng(int(seed)).permutation(np.asarray(subjects).astype(str))


class FoldSpaces:
    """The store's matcher refitted without given subjects, cached.

    Parameters
    ----------
    store : EnrollmentStore
        Its images (n, H, W) are read once, its matcher class and configuration refitted.
    keep : int
        Refitted spaces kept in memory.

    Attributes
    ----------
    n_fits_ : int
        Refits done so far (one per distinct set of held-out subjects still cached).
    """

    def __init__(self, store, keep=KEEP):
        from ssgallery.matchers import get_matcher_class
        from ssgallery.matchers.refits import subset_refits

        self.labels = np.asarray(store.labels).astype(str)
        self.refits = subset_refits(get_matcher_class(store.matcher_name),
                                    dict(store.matcher_config),
                                    store.images[np.arange(len(self.labels))])
        self.keep = keep
        self.n_fits_ = 0
        self._cache = OrderedDict()

    def space(self, held_out):
        """``(X, similarity, bounds)`` of the matcher fitted without the images of the
        subjects ``held_out`` (a frozenset); X has shape (n, d) over every stored image."""
        if held_out not in self._cache:
            self._cache[held_out] = self.refits.space(~np.isin(self.labels, sorted(held_out)))
            self.n_fits_ += 1
            if len(self._cache) > self.keep:
                self._cache.popitem(last=False)
        self._cache.move_to_end(held_out)
        return self._cache[held_out]

    def for_client(self, rows, y, groups, folds):
        """Per fold j, ``(X[rows], similarity, bounds)`` of the matcher refitted without
        fold j's held-out impostor subjects.

        Parameters
        ----------
        rows : ndarray of shape (k,), int
            The client's training rows in the store.
        y, groups, folds : ndarray of shape (k,)
            Labels (+1/-1), subjects and threshold-CV folds of those rows.
        """
        groups = np.asarray(groups).astype(str)
        out = []
        for j in range(int(folds.max()) + 1):
            held = frozenset(groups[(folds == j) & (np.asarray(y) < 0)].tolist())
            X, similarity, bounds = self.space(held)
            out.append((X[rows], similarity, bounds))
        return out
