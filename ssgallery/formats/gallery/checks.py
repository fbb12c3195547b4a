"""The gallery's value checks: a client model that would accept every probe, or whose
values cannot come from ``compress``, is refused (`check_model`); one that can accept no
probe is reported (`never_accepting`)."""

import numpy as np

from ssgallery.errors import FormatError, SsgalleryError, printable


def check_normalization(norm):
    """A stored normalisation is a dict; a Z-norm has a finite mean and a std > 0.
    Raises TypeError or ValueError (the readers turn them into one line)."""
    if not isinstance(norm, dict):
        raise TypeError("normalization is not a JSON object")
    if norm.get("kind") == "znorm" and not (np.isfinite(float(norm["mean"]))
                                            and float(norm["std"]) > 0):
        raise ValueError("normalization has a non-finite mean or a std <= 0")
    return norm


def check_model(model, matcher, path=None):
    """Refuse a client model whose values cannot come from ``compress``.

    Checks: float arrays, prototypes (m, d) with m >= 1 and d the matcher's dimension,
    beta (m,), every value finite, an RBF gamma > 0, prototypes plausible in the
    matcher space (`ssgallery.matchers.Matcher.check_prototypes`), and a threshold
    strictly inside the range of g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1) that the
    similarity's bounds allow: at or below the lowest possible score every probe would
    be accepted, above the highest none.

    Raises
    ------
    FormatError
        One line naming the file and the client.
    """
    who = f"refused: client '{printable(model.client_id)}'"
    P, beta = np.asarray(model.prototypes), np.asarray(model.beta)
    if P.dtype.kind != "f" or beta.dtype.kind != "f" or P.ndim != 2 or P.shape[0] < 1 \
            or beta.shape != (P.shape[0],):
        raise FormatError(f"{who} has inconsistent prototypes {P.shape} / beta {beta.shape}",
                          path=path)
    d = matcher.dimension() if matcher is not None else None
    if d is not None and P.shape[1] != d:
        raise FormatError(f"{who} has prototypes of dimension {P.shape[1]}, the matcher's is "
                          f"{d}", path=path)
    b, t = model.intercept, model.threshold
    if not (np.isfinite(P).all() and np.isfinite(beta).all() and np.isfinite([b, t]).all()):
        raise FormatError(f"{who} has NaN or infinite values", path=path)
    bounds = _similarity_bounds(model, matcher, who, path)
    if matcher is not None:
        try:
            matcher.check_prototypes(P)
        except SsgalleryError as exc:
            raise FormatError(f"{who}: {exc}", path=path) from None
    g_min, _ = score_range(model, bounds)
    if t <= g_min:
        raise FormatError(f"{who} would accept every probe (threshold {t:.6g} <= lowest "
                          f"possible score {g_min:.6g})", path=path)
    # A threshold above the highest possible score rejects everyone: fail-safe, so it is
    # read (verify says REJECT) and compress warns about it (never_accepting).


def score_range(model, bounds):
    """Lowest and highest g(x) (Eq. 1) a client model can give, from the similarity's
    bounds ``(s_min, s_max)``; (-inf, inf) when the similarity is unbounded."""
    if bounds is None or not np.isfinite(bounds).all():
        return -np.inf, np.inf
    beta = np.asarray(model.beta)
    lo, hi = beta * bounds[0], beta * bounds[1]
    return (model.intercept + np.minimum(lo, hi).sum(),
            model.intercept + np.maximum(lo, hi).sum())


def never_accepting(models, matcher):
    """Ids of the models whose threshold is above the highest score they can give."""
    out = []
    for model in models:
        bounds = _similarity_bounds(model, matcher, model.client_id, None)
        if model.threshold > score_range(model, bounds)[1]:
            out.append(model.client_id)
    return out


def _similarity_bounds(model, matcher, who, path):
    kind = model.similarity.get("kind")
    if kind == "rbf":
        gamma = model.similarity.get("gamma")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) \
                or not (np.isfinite(gamma) and gamma > 0):
            raise FormatError(f"{who} has an RBF gamma that is not a positive number",
                              path=path)
        return (0.0, 1.0)
    if not isinstance(kind, str):
        raise FormatError(f"{who} has no similarity kind", path=path)
    return None if matcher is None else matcher.similarity_range()
