"""The gallery's value checks: a client model that would accept every probe, or whose
values cannot come from ``compress``, is refused (`check_model`); one that can accept no
probe is reported (`never_accepting`). The stacked search index is held to the same
rules, row by row (`check_index`), and a Z-norm std has a floor (`std_floor`)."""

import math

import numpy as np

from ssgallery.checks import EXACT_INT, is_finite_real, is_int
from ssgallery.errors import FormatError, SsgalleryError, option, printable
from ssgallery.matchers.base import MAX_GAMMA

STD_SOURCES = ("pooled", "margin")  # a borrowed spread (`ssgallery.app.open_set.fill_spreads`)


def check_normalization(norm):
    """A stored normalisation is a dict; a Z-norm has a finite mean and a std > 0 (JSON
    numbers: `ssgallery.checks.is_finite_real`; a string or a boolean is none), an
    ``n`` (when present) that is a whole number >= 1 and a ``std_source`` (when present)
    in `STD_SOURCES` (``compress --update`` reads both of its kept clients,
    `ssgallery.biometrics.openset.spread_measured`). Raises TypeError or ValueError (the
    readers turn them into one line)."""
    if not isinstance(norm, dict):
        raise TypeError("normalization is not a JSON object")
    if norm.get("kind") == "znorm":
        mean, std = norm.get("mean"), norm.get("std")  # JSON numbers, not "0.5" or true
        if not (is_finite_real(mean) and is_finite_real(std) and std > 0):
            raise ValueError("normalization has a mean or std that is not a finite number "
                             "or a std <= 0")
        n = norm.get("n", 1)
        if not (is_int(n) and 1 <= n < EXACT_INT):
            raise ValueError("normalization has an n that is not a whole number >= 1")
        if norm.get("std_source", STD_SOURCES[0]) not in STD_SOURCES:
            raise ValueError("normalization has a std_source that is not "
                             + " or ".join(STD_SOURCES))
    return norm


def check_model(model, matcher, path=None):
    """Refuse a client model whose values cannot come from ``compress``.

    Checks: float arrays, prototypes (m, d) with m >= 1 and d the matcher's dimension,
    beta (m,), every value finite, an RBF gamma > 0 and at most
    `ssgallery.matchers.base.MAX_GAMMA`, prototypes plausible in the
    matcher space (`ssgallery.matchers.Matcher.check_prototypes`), with a bounded
    similarity a range of g(x) that is a float (weights whose sums overflow, such as a
    beta of 1e308 an edit put there, are refused before any score), and a threshold
    strictly inside the range of g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1) that the
    similarity's bounds allow: at or below the lowest possible score every probe would
    be accepted, above the highest none; and a Z-norm std of at least `NORM_STD_FLOOR`
    of that range, the floor compress writes and `check_index` holds the search index
    to (`_check_std_floor`: weights edited far beyond the client's impostor scores), and
    weights within the training objective the provenance records
    (`_check_objective_bound`, with or without a Z-norm).

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
    g_min, g_max = score_range(model, bounds)
    with np.errstate(over="ignore", invalid="ignore"):
        span = g_max - g_min
    if bounds is not None and np.isfinite(bounds).all() and not np.isfinite(span):
        raise FormatError(f"{who} has weights whose scores overflow: |beta| up to "
                          f"{np.abs(beta).max():.3g}, b {b:.3g} (its range of g(x) is beyond "
                          "the largest float)", path=path)
    _check_std_floor(model, span, who, path)
    _check_objective_bound(model, who, path)
    if t <= g_min:
        raise FormatError(f"{who} would accept every probe (threshold {t:.6g} <= lowest "
                          f"possible score {g_min:.6g})", path=path)
    # A threshold above the highest possible score rejects everyone: fail-safe, so it is
    # read (verify says REJECT) and compress warns about it (never_accepting).


def _check_std_floor(model, span, who, path):
    """Refuse a Z-norm std below `NORM_STD_FLOOR` of the client's score span (up to
    rounding), as `check_index` refuses the search index's row: compress floors it
    there (`floor_normalization`), so a smaller one means weights edited far beyond the
    client's impostor-score spread (a beta of 1e300 gave verify a 301-digit score and
    ACCEPT for every probe, while identify refused the same client)."""
    norm = model.normalization
    std = norm.get("std") if isinstance(norm, dict) and norm.get("kind") == "znorm" else None
    if is_finite_real(std) and np.isfinite(span) \
            and std < NORM_STD_FLOOR * span * (1 - 1e-9):
        why = _older_floor(std) or ("weights far beyond its impostor scores' spread, which "
                                    f"compress has not written since {FLOORED_SINCE}: an "
                                    f"edit, or an older gallery; {COMPRESS_AGAIN}")
        raise FormatError(f"{who} has a Z-norm std {std:.3g} below {NORM_STD_FLOOR:g} of its "
                          f"score span {span:.3g}: {why}", path=path)


OLD_STD_FLOOR = 1e-12  # the std compress wrote before FLOORED_SINCE for a spread of 0
FLOORED_SINCE = "2026-11-26 (2e8eaa3)"  # since then compress floors it (`floor_normalization`)
COMPRESS_AGAIN = (f"compress again with this version (every client: {option('update')} "
                  "refuses it too)")


def _older_floor(std):
    """Why a refused Z-norm std of `OLD_STD_FLOOR` is there (None for another std): the
    floor ``compress`` wrote before `FLOORED_SINCE` for a client whose held-out impostor
    scores had no spread (``--max-impostors 1``: one score), since refused by every
    reader (its normalised scores reach 1e12); the remedy."""
    if abs(std - OLD_STD_FLOOR) > 1e-9 * OLD_STD_FLOOR:
        return None
    return (f"the floor ssgallery wrote before {FLOORED_SINCE} for a client whose held-out "
            f"impostor scores had no spread (e.g. {option('max_impostors')} 1), which would "
            f"put its normalised scores near 1e12: {COMPRESS_AGAIN}")


def _check_objective_bound(model, who, path):
    """Refuse weights the client's recorded training cannot have given: its objective
    Omega = sum_i u_i (g(x_i) - y_i)^2 + lambda beta'beta (Eq. 2, ``eq:objective``) is
    at least lambda beta'beta, so ||beta|| <= sqrt(``omega`` / ``lambda_abs``) (both in
    the provenance; up to rounding). The bound a record without a Z-norm has
    (`_check_std_floor` needs one): beta of 1e300 there made verify print a 301-digit
    score and ACCEPT every probe. A provenance without both numbers is not checked."""
    most = objective_bound(model.provenance)
    if most is None:
        return
    norm = math.hypot(*np.asarray(model.beta, dtype=np.float64).tolist())  # no overflow
    if not norm <= most * (1 + 1e-9):
        raise FormatError(f"{who} has weights beyond its training objective: ||beta|| "
                          f"{norm:.3g} > sqrt(omega / lambda_abs) {most:.3g} (Eq. 2), which "
                          "compress never writes", path=path)


def objective_bound(provenance):
    """The largest ||beta|| a client's recorded training allows, sqrt(``omega`` /
    ``lambda_abs``) (`_check_objective_bound`), or None when ``provenance`` lacks either
    number (finite, ``lambda_abs`` > 0)."""
    prov = provenance if isinstance(provenance, dict) else {}
    omega, lam = prov.get("omega"), prov.get("lambda_abs")
    if not (is_finite_real(omega) and is_finite_real(lam) and lam > 0):
        return None
    return math.sqrt(max(omega, 0.0) / lam)


def check_images(model, image_shape, path=None):
    """Refuse a client's rendered prototype images (``show`` draws them; the library's
    ``rewrite_gallery`` copies them) that no writer gives: present, they are uint8
    (m, H, W), one per prototype, of the gallery's ``image_shape`` (H, W). Reads only
    their dtype and shape (uint8 holds nothing outside the pixel range).

    Raises
    ------
    FormatError
        One line naming the file, the client and what was found.
    """
    images = model.prototype_images
    if images is None:
        return
    want = (len(model.beta),) + tuple(int(s) for s in image_shape)
    dtype, shape = getattr(images, "dtype", None), tuple(getattr(images, "shape", ()))
    if dtype != np.uint8 or shape != want:
        raise FormatError(f"corrupt gallery: client '{printable(model.client_id)}' has "
                          f"rendered prototype images of {dtype} {shape}, not uint8 {want} "
                          "(one per prototype, of the gallery's image_shape)", path=path)


def score_range(model, bounds):
    """Lowest and highest g(x) (Eq. 1) a client model can give, from the similarity's
    bounds ``(s_min, s_max)``; (-inf, inf) when the similarity is unbounded. Weights
    whose sums overflow give an infinite end, silently (`check_model` refuses them)."""
    if bounds is None or not np.isfinite(bounds).all():
        return -np.inf, np.inf
    beta = np.asarray(model.beta)
    with np.errstate(over="ignore", invalid="ignore"):
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
        if not (is_finite_real(gamma) and 0 < gamma <= MAX_GAMMA):  # the matchers' rule
            raise FormatError(f"{who} has an RBF gamma that is not a positive number of at "
                              f"most {MAX_GAMMA:g}", path=path)
        return (0.0, 1.0)
    if not isinstance(kind, str):
        raise FormatError(f"{who} has no similarity kind", path=path)
    return None if matcher is None else matcher.similarity_range()


NORM_STD_FLOOR = 1e-6  # a Z-norm std below this share of the client's score span: refused


def std_floor(model, matcher):
    """The smallest Z-norm std a client model may carry: `NORM_STD_FLOOR` times the
    span of the scores it can give (``score_range``), 1e-12 when that is unbounded. A
    smaller std would make the client's normalised score dominate every search
    (``compress`` floors it here; ``identify`` refuses a smaller one)."""
    bounds = _similarity_bounds(model, matcher, model.client_id, None)
    lo, hi = score_range(model, bounds)
    return float(NORM_STD_FLOOR * (hi - lo)) if np.isfinite(hi - lo) else 1e-12


def floor_normalization(model, matcher):
    """``model.normalization`` with its Z-norm std raised to `std_floor` (compress)."""
    norm = model.normalization
    if not norm or norm.get("kind") != "znorm":
        return norm
    return dict(norm, std=max(float(norm["std"]), std_floor(model, matcher)))


def index_score_range(index, matcher):
    """Lowest and highest g(x) (Eq. 1) of every row of a search index, shapes (N,):
    `score_range` for all clients at once (RBF rows: s in [0, 1]; the others: the
    matcher's ``similarity_range()``, unbounded without one). A bounded row whose
    weights' sums overflow has an infinite end, silently (`check_index` refuses it)."""
    g_min, g_max, _ = _index_ranges(index, matcher)
    return g_min, g_max


def _index_ranges(index, matcher):
    """`index_score_range` and, per row, whether its similarity is bounded."""
    bounds = matcher.similarity_range() if matcher is not None else None
    s_lo, s_hi = (-np.inf, np.inf) if bounds is None else (float(bounds[0]), float(bounds[1]))
    owner = np.repeat(np.arange(index.n_clients), np.diff(index.offsets))
    rbf = np.isfinite(index.gamma)[owner]
    lo, hi = np.where(rbf, 0.0, s_lo), np.where(rbf, 1.0, s_hi)
    starts = index.offsets[:-1]
    with np.errstate(over="ignore", invalid="ignore"):  # 0 * inf: a zero weight adds nothing
        a = np.where(index.beta == 0, 0.0, index.beta * lo)
        b = np.where(index.beta == 0, 0.0, index.beta * hi)
        g_min = index.intercept + np.add.reduceat(np.minimum(a, b), starts)
        g_max = index.intercept + np.add.reduceat(np.maximum(a, b), starts)
    bounded = np.logical_and.reduceat(np.isfinite(lo) & np.isfinite(hi), starts)
    return np.where(bounded, g_min, -np.inf), np.where(bounded, g_max, np.inf), bounded


def check_index(index, matcher, path=None):
    """Refuse a search index whose rows break `check_model`'s rules on the range of
    g(x) (a bounded row whose weights' sums overflow; a threshold at or below the
    lowest possible score, which would accept every probe) or carry a Z-norm std below
    `std_floor` (up to rounding). Vectorised: no client group is opened.

    Raises
    ------
    FormatError
        One line naming the file and the first client concerned.
    """
    if index.n_clients == 0:
        return
    g_min, g_max, bounded = _index_ranges(index, matcher)
    with np.errstate(over="ignore", invalid="ignore"):
        bad = np.flatnonzero(bounded & ~np.isfinite(g_max - g_min))
    if bad.size:
        k = bad[0]
        raise FormatError(f"refused: the search index's row of client "
                          f"'{printable(str(index.client_ids[k]))}' has weights whose scores "
                          "overflow (its range of g(x) is beyond the largest float)", path=path)
    bad = np.flatnonzero(index.threshold <= g_min)
    if bad.size:
        k = bad[0]
        raise FormatError(f"refused: the search index's row of client "
                          f"'{printable(str(index.client_ids[k]))}' would accept every probe "
                          f"(threshold {index.threshold[k]:.6g} <= lowest possible score "
                          f"{g_min[k]:.6g})", path=path)
    span = g_max - g_min
    floor = np.where(np.isfinite(span), NORM_STD_FLOOR * span, 1e-12) * (1 - 1e-9)
    std = index.norm_std
    bad = np.flatnonzero(np.isfinite(std) & (std < floor) | (np.isfinite(index.norm_mean)
                                                              != np.isfinite(std)))
    if bad.size:
        k = bad[0]
        older = _older_floor(float(std[k])) if np.isfinite(std[k]) else None
        why = (f": {older}" if older else " (or a mean without a std): its normalised "
               "scores would outrank every other client's")
        raise FormatError(f"refused: the search index's row of client "
                          f"'{printable(str(index.client_ids[k]))}' has a Z-norm std "
                          f"{std[k]:.3g} below {NORM_STD_FLOOR:g} of its score span{why}",
                          path=path)


def check_open_set_threshold(index, threshold, scale, matcher, path=None):
    """Refuse a 1:N threshold (a gallery's ``open_set`` record, or one read from its
    curve) at or below some client's lowest possible centred score ((g_min - mean) /
    ``scale``, `index_score_range`): it would identify every probe that client ranks
    first, as a verification threshold at or below the lowest score would accept every
    probe (`check_model`). ``identify`` checks it whatever its mode, and ``info`` (the
    check before deploying; it printed such a record, exit 0).

    Raises
    ------
    FormatError
        One line naming the file, the threshold and the client.
    """
    lowest = (index_score_range(index, matcher)[0] - index.norm_mean) / float(scale)
    k = int(np.argmax(np.nan_to_num(lowest, nan=-np.inf)))
    if np.isfinite(lowest[k]) and float(threshold) <= lowest[k]:
        raise FormatError(f"refused: the gallery's 1:N threshold {float(threshold):.6g} "
                          f"would accept every probe client '{printable(index.client_ids[k])}'"
                          f" ranks first (lowest possible centred score {lowest[k]:.6g})",
                          path=path)
