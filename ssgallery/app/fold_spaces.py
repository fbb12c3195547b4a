"""Matcher spaces for the threshold CV: the store's matcher refitted without the people
a fold holds out.

A matcher that learns from images (eigenface's PCA basis) is fitted at enroll on every
stored image, so the impostors that a client's threshold CV holds out are inside the
basis, whereas the impostors met at verification time are not. Thresholds set on such
held-out scores accept more unseen people than the target promises. Here, for each fold
of a client's threshold CV, the matcher is refitted on every stored image except those
of the fold's held-out impostor subjects and the samples are mapped into that space
(`ssgallery.app.client_fit.train_client`, ``fold_spaces``).

Clients share their folds (one seeded order of the store's subjects,
`subject_order` and `ssgallery.biometrics.heldout.threshold_folds`), so a
fold's refit serves every client that is not itself held out in it: compress refits
each such shared fold once (`FoldSpaces.share`) and sends them once to every worker; a
client's own fold (its fold's people but the client) is refitted where the client
trains (`FoldSpaces.for_client`). A refit is the matcher's `ssgallery.matchers.refits`
(eigenface: from the images' Gram matrix, computed once: no pixel is read again).
Matchers whose ``fit`` does not learn from the images (a pretrained descriptor, an
external program) are never refitted.
"""

from collections import Counter

import numpy as np


def learns_from_images(matcher):
    """Whether refitting ``matcher`` on other images changes its space."""
    return bool(getattr(matcher, "learns_from_images", True))


def subject_order(subjects, seed):
    """One seeded order of every subject of a store, shape (s,), shared by all clients."""
    return np.random.default_rng(int(seed)).permutation(np.asarray(subjects).astype(str))


def held_out(y, groups, folds):
    """Per fold j, the frozenset of fold j's held-out impostor subjects.

    Parameters
    ----------
    y, groups, folds : ndarray of shape (n,)
        Labels (+1/-1), subjects and threshold-CV folds of a client's training rows.
    """
    groups, neg = np.asarray(groups).astype(str), np.asarray(y) < 0
    return [frozenset(groups[(folds == j) & neg].tolist()) for j in range(int(folds.max()) + 1)]


def shared_folds(labels, clients, n_folds, seed, order):
    """The sets of held-out subjects (frozensets) that the threshold-CV folds of several
    ``clients`` hold out, each client training on every stored row.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        Subject of every stored row.
    clients : list of str
    n_folds, seed : int
        The threshold CV's folds and seed (`ssgallery.biometrics.heldout.threshold_folds`).
    order : ndarray of shape (s,)
        `subject_order` of the store's subjects.
    """
    from ssgallery.biometrics.heldout import threshold_folds

    counts = Counter()
    for client in clients:
        y = np.where(labels == client, 1, -1)
        folds = threshold_folds(y, labels, n_folds, seed, order)
        if folds is not None:
            counts.update(held_out(y, labels, folds))
    return [key for key, n in counts.items() if n > 1]


class FoldSpaces:
    """The store's matcher refitted without given subjects; the refits several clients
    need, done once (`share`).

    Parameters
    ----------
    store : EnrollmentStore
        Its images (n, H, W) are read once, its matcher class and configuration refitted.

    Attributes
    ----------
    shared : dict
        frozenset of held-out subjects -> ``(X, similarity, bounds)``, X of shape (n, d)
        over every stored image.
    n_fits_ : int
        Refits done by this object in this process.
    """

    def __init__(self, store):
        from ssgallery.matchers import get_matcher_class
        from ssgallery.matchers.refits import subset_refits

        self.labels = np.asarray(store.labels).astype(str)
        self.refits = subset_refits(get_matcher_class(store.matcher_name),
                                    dict(store.matcher_config), store.images)
        self.shared = {}
        self.n_fits_ = 0

    def space(self, held):
        """``(X, similarity, bounds)`` of the matcher fitted without the images of the
        subjects ``held`` (a frozenset); X has shape (n, d) over every stored image."""
        self.n_fits_ += 1
        return self.refits.space(~np.isin(self.labels, sorted(held)))

    def share(self, keys):
        """Refit once per set of held-out subjects in ``keys`` (the folds several clients
        hold out), for every client."""
        for key in keys:
            if key not in self.shared:
                self.shared[key] = self.space(key)

    def for_client(self, y, groups, folds):
        """Per fold j, ``(X, similarity, bounds)`` of the matcher refitted without fold
        j's held-out impostor subjects: a shared refit, or one done now.

        Parameters
        ----------
        y, groups, folds : ndarray of shape (n,)
            Labels (+1/-1), subjects and threshold-CV folds of the client's training
            rows: every stored image, in store order (uncapped runs).
        """
        if len(y) != len(self.labels):
            raise ValueError("fold spaces cover every stored image: the client must train "
                             "on all of them")
        return [self.shared[k] if k in self.shared else self.space(k)
                for k in held_out(y, groups, folds)]
