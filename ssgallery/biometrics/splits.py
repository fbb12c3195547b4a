"""The protocol's random splits (Sect. IV-A): per repetition, a seeded random half of
the subjects are enrolled clients with ``n_train`` training images each, their other
images genuine claims, and every image of the other subjects an impostor claim
(`make_splits`, `Split`; run by `ssgallery.biometrics.protocol`, which re-exports
them)."""

from dataclasses import dataclass

import numpy as np

from ssgallery.errors import InputError


@dataclass
class Split:
    """One repetition of the protocol (indices into the image array).

    Attributes
    ----------
    repetition : int
    enrolled : list of str
        Enrolled client ids, in natural order.
    train, genuine : dict str -> ndarray of int
        Per client: training image indices and genuine claim indices.
    impostors : ndarray of int
        Images of the non-enrolled subjects (impostor claims against every client).
    impostor_subjects : list of str
    """

    repetition: int
    enrolled: list
    train: dict
    genuine: dict
    impostors: np.ndarray
    impostor_subjects: list

    def train_indices(self):
        """All training images (every client's), shape (n_enrolled * n_train,)."""
        return np.concatenate([self.train[c] for c in self.enrolled])


def _natural(names):
    from ssgallery.images.ingest import natural_key

    return sorted(names, key=natural_key)


def make_splits(labels, n_enrolled=None, n_train=5, repetitions=5, seed=0, enrollable=None):
    """The protocol's random splits.

    Parameters
    ----------
    labels : array-like of str, shape (n,)
        Subject of each image.
    n_enrolled : int or None
        Enrolled clients per repetition; default half of the subjects (rounded down).
    n_train : int
        Training images per client; enrolled clients need at least ``n_train + 1``.
    repetitions : int
    seed : int
    enrollable : iterable of str or None
        Subjects that may be enrolled (default all); the others are always impostors
        (e.g. the background subjects of an enrollment store).

    Returns
    -------
    list of Split
    """
    labels = np.asarray(labels).astype(str)
    subjects, eligible, (n_enrolled, n_train, repetitions) = _enrolment(
        labels, n_enrolled, n_train, repetitions, enrollable)
    index = {s: np.flatnonzero(labels == s) for s in subjects}
    rng = np.random.default_rng(seed)
    splits = []
    for r in range(repetitions):
        chosen = rng.choice(len(eligible), size=n_enrolled, replace=False)
        enrolled = _natural(eligible[i] for i in chosen)
        train, genuine = {}, {}
        for c in enrolled:
            perm = rng.permutation(index[c])
            train[c] = np.sort(perm[:n_train])
            genuine[c] = np.sort(perm[n_train:])
        others = [s for s in subjects if s not in set(enrolled)]
        impostors = np.sort(np.concatenate([index[s] for s in others]))
        splits.append(Split(r, enrolled, train, genuine, impostors, others))
    return splits


def _enrolment(labels, n_enrolled, n_train, repetitions, enrollable):
    """`make_splits`' subjects (natural order), those that may be enrolled with
    ``n_train`` training images and a genuine claim, and the sizes checked (whole
    numbers; the default ``n_enrolled``); `InputError` for sizes it cannot split."""
    subjects = _natural(set(labels.tolist()))
    counts = {s: int(np.sum(labels == s)) for s in subjects}
    if len(subjects) < 3:
        raise InputError(f"the protocol needs at least 3 subjects (2 enrolled, 1 impostor), "
                         f"got {len(subjects)}")
    allowed = set(subjects) if enrollable is None else {str(e) for e in enrollable}
    eligible = [s for s in subjects if counts[s] >= n_train + 1 and s in allowed]
    if n_enrolled is None:  # half of the subjects (no more than may be enrolled)
        n_enrolled = len(subjects) // 2
        if enrollable is not None:
            n_enrolled = max(2, min(n_enrolled, len(eligible)))
    n_enrolled, n_train, repetitions = int(n_enrolled), int(n_train), int(repetitions)
    if not 2 <= n_enrolled <= len(subjects) - 1:
        raise InputError(f"the number of enrolled clients must be between 2 and "
                         f"{len(subjects) - 1} (there are {len(subjects)} subjects), "
                         f"got {n_enrolled}")
    if n_train < 1:
        raise InputError("the number of training images per client must be at least 1, "
                         f"got {n_train}")
    if repetitions < 1:
        raise InputError(f"the number of repetitions must be at least 1, got {repetitions}")
    if len(eligible) < n_enrolled:
        raise InputError(f"only {len(eligible)} subject(s) have the {n_train + 1} images "
                         f"needed to enrol {n_enrolled} clients with {n_train} training "
                         f"images and at least one genuine claim")
    return subjects, eligible, (n_enrolled, n_train, repetitions)
