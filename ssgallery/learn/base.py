"""What the verification estimators share: one client against the rest (two classes),
labels from the sign of g(x), fitted attributes read through from the model that owns
them."""

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from ssgallery.errors import InputError


class LabelError(InputError, ValueError):
    """Labels a one-vs-all estimator cannot use (one class, or more than two)."""


def binary_classes(y, who):
    """``(classes_, labels)`` for one client against the rest.

    ``classes_`` (2,) are the sorted labels of ``y``; ``labels`` (n,) are +1.0 where y is
    ``classes_[1]`` (genuine), else -1.0. ``who`` names the estimator in the errors.
    Raises `LabelError` unless y holds exactly two classes.
    """
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) > 2:
        raise LabelError(f"Only binary classification is supported: {who} is one client "
                         f"against the rest, got {len(classes)} classes")
    if len(classes) < 2:
        raise LabelError(f"{who} needs two classes (genuine and impostor), got 1 class")
    return classes, np.where(np.asarray(y) == classes[1], 1.0, -1.0)


class BinaryDecisionMixin:
    """``predict`` for a two-class estimator with ``decision_function`` and ``classes_``:
    ``classes_[1]`` (genuine) where g(x) > 0, else ``classes_[0]``."""

    def predict(self, X):
        """Class labels, shape (n,)."""
        positive = np.asarray(self.decision_function(X)) > 0  # checks it is fitted
        return self.classes_[positive.astype(int)]


class ReadThrough:
    """A read-only fitted attribute that is the same attribute of a fitted sub-model.

    ``beta_ = ReadThrough("regressor_")`` makes ``est.beta_`` read
    ``est.regressor_.beta_`` (``ReadThrough("teacher_", "dual_coef_")``: under another
    name): one object holds the fitted values, nothing is copied. Before fitting,
    reading it raises AttributeError (so ``hasattr`` is False).
    """

    def __init__(self, owner, name=None):
        self.owner = owner
        self.name = name

    def __set_name__(self, cls, name):
        if self.name is None:
            self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.owner), self.name)
