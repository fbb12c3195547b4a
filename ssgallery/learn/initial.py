"""Where a super-sparse fit starts (paper Sect. III): the similarity on the data
(`resolve_similarity`), the scale that makes ``lam`` independent of it
(`similarity_scale`, `gram_scale`) and the starting prototypes (`start_indices`,
`initial_prototypes`, the least-Omega of several unmoved starts: `least_omega_start`,
improved by swaps of training rows: `swap_start`;
``init="auto"``: `resolve_init`). Used by
`ssgallery.learn.learner.SuperSparseRegressor` and the estimators built on it;
`ssgallery.learn.supersparse` re-exports every name.
"""

import numpy as np

from ssgallery.learn.similarity import RBFSimilarity, Similarity, median_gamma
from ssgallery.learn.solvers import beta_step, objective

_MAX_CANDIDATES = 500  # medoid search: candidates per class (subsampled above this)
_MAX_SCALE_COLUMNS = 500  # similarity_scale: training points used as columns


def resolve_similarity(similarity, gamma, X):
    """The `Similarity` to use on data ``X`` (n, d).

    ``similarity`` is ``"rbf"`` or a Similarity instance (then ``gamma`` is ignored).
    ``gamma``: ``"paper"`` (1/d), ``"median"``
    (`ssgallery.learn.similarity.median_gamma`) or a positive float.
    """
    if isinstance(similarity, Similarity):
        return similarity
    if gamma == "paper":
        return RBFSimilarity(1.0 / X.shape[1])
    if gamma == "median":
        return RBFSimilarity(median_gamma(X))
    return RBFSimilarity(float(gamma))


def similarity_scale(X, u, similarity, rng=None):
    """Mean diagonal of the weighted, centred similarity Gram: the scale of the data term
    of Eq. 2 (eq:objective) in beta, for prototypes on the training points.

    sum_j u_j Var_u(s(., x_j)), with Var_u(s(., x_j)) = sum_i u_i (s(x_i, x_j) - sbar_j)^2
    and sbar_j = sum_i u_i s(x_i, x_j) (the unpenalised bias absorbs the mean). With S
    scaled by a, the optimal beta scales by 1/a and lam beta'beta by 1/a^2; ``lam`` times
    this scale is invariant to a (and to the targets' scale: beta and both terms of
    Eq. 2 scale together; the repulsion penalty aside). Above ``_MAX_SCALE_COLUMNS``
    points, that many columns are drawn with probability u (seeded) and averaged.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    u : ndarray of shape (n,), sums to 1
    similarity : Similarity
    rng : numpy Generator, optional (default seeded with 0)

    Returns
    -------
    float, >= 0
    """
    if len(X) <= _MAX_SCALE_COLUMNS:
        cols, w = np.arange(len(X)), u
    else:
        rng = np.random.default_rng(0) if rng is None else rng
        cols = rng.choice(len(X), _MAX_SCALE_COLUMNS, p=u)
        w = np.full(len(cols), 1.0 / len(cols))
    return gram_scale(np.asarray(similarity(X, X[cols]), dtype=float), u, w)


def gram_scale(S, u, w=None):
    """`similarity_scale` from the similarities S = S(X, X[cols]) (n, c) already known
    (``w``: the columns' weights, default ``u``; all n columns then)."""
    centred = S - u @ S
    return float((u if w is None else w) @ (u @ (centred * centred)))


def _greedy_medoids(X, u, k, rng):
    """k samples covering X best: weighted medoid first, then greedy facility location
    (each next sample minimises sum_i u_i min_j ||x_i - z_j||). Indices into X."""
    cand = np.flatnonzero(u > 0)
    if len(cand) > _MAX_CANDIDATES:
        cand = np.sort(rng.choice(cand, _MAX_CANDIDATES, replace=False))
    D = np.sqrt(RBFSimilarity().sq_distances(X, X[cand]))  # (n, c)
    chosen = []
    cover = np.full(len(X), np.inf)
    for _ in range(min(k, len(cand))):
        cost = u @ np.minimum(cover[:, None], D)
        cost[chosen] = np.inf
        c = int(np.argmin(cost))
        chosen.append(c)
        cover = np.minimum(cover, D[:, c])
    return cand[chosen]


def start_indices(X, y, u, m, init, rng, restart=0):
    """Rows of X where the ``"class"`` or ``"genuine"`` rule of `initial_prototypes`
    starts its m prototypes, shape (m,) (a row repeats when a class has fewer samples)."""
    usable = np.flatnonzero(u > 0)
    pos = y > 0
    groups = [usable[pos[usable]], usable[~pos[usable]]]
    groups = [g for g in groups if len(g)]
    if len(groups) == 2 and m >= 2:
        if init == "genuine":
            k_pos = min(m - 1, len(groups[0]))
        else:
            w_pos = u[groups[0]].sum() / u[usable].sum()
            # round half up; the tolerance keeps 0.4999999999999999 from rounding down
            k_pos = int(np.clip(np.floor(m * w_pos + 0.5 + 1e-9), 1, m - 1))
        counts = [k_pos, m - k_pos]
    else:
        counts = [m] + [0] * (len(groups) - 1)
    idx = []
    for g, k in zip(groups, counts):
        if k == 0:
            continue
        if restart == 0:
            sub = g[_greedy_medoids(X[g], u[g], k, rng)]
        else:
            sub = rng.choice(g, min(k, len(g)), replace=False)
        idx.extend(sub)
        idx.extend(rng.choice(g, k - len(sub)))  # fewer samples than k: repeat
    return np.array(idx, dtype=int)


def initial_prototypes(X, y, u, m, init, rng, restart=0):
    """Starting prototypes, shape (m, d).

    ``init="class"``: when y has both signs (distillation: genuine y > 0, impostors
    y <= 0), prototypes go to each class in proportion to its weight (at least one each
    when m >= 2), genuine first; within a class the weighted medoid first, then greedy
    coverage. ``init="genuine"``: the same, but min(m - 1, #genuine) prototypes start on
    genuine samples and the rest on impostors (measured better for verification with a
    black-box matcher, where few genuine images would otherwise be left unrepresented). Deterministic for ``restart == 0``; restarts draw random samples of each
    class in the same proportions. ``"quantile"`` (regression): the targets cut into m
    bins of equal weight, each bin's weighted medoid (restarts: a random member).
    ``"kmeans"``: weighted k-means centres. ``"random"``:
    m training samples. Repeated picks (fewer usable samples than m) get a small jitter.
    """
    usable = np.flatnonzero(u > 0)
    if init in ("class", "genuine"):
        Z = X[start_indices(X, y, u, m, init, rng, restart)]
    elif init == "quantile":
        # regression: m bins of equal weight along the target, each bin's weighted medoid
        # (random member on restarts), so prototypes start spread over the target range
        order = usable[np.argsort(y[usable], kind="stable")]
        cum = np.cumsum(u[order]) / u[order].sum()
        bins = np.minimum((cum * m - 1e-12).astype(int), m - 1)
        idx = []
        for k in range(m):
            g = order[bins == k]
            if not len(g):
                g = order
            if restart == 0:
                idx.append(g[_greedy_medoids(X[g], u[g], 1, rng)[0]])
            else:
                idx.append(rng.choice(g))
        Z = X[np.array(idx)]
    elif init == "random":
        idx = rng.choice(usable, min(m, len(usable)), replace=False)
        Z = X[np.concatenate([idx, rng.choice(usable, m - len(idx))]).astype(int)]
    elif init == "kmeans":
        from sklearn.cluster import KMeans

        n_clusters = min(m, len(usable))
        km = KMeans(n_clusters, n_init=1, random_state=rng.integers(2**31 - 1))
        km.fit(X[usable], sample_weight=u[usable])
        Z = km.cluster_centers_
        if n_clusters < m:
            Z = np.vstack([Z, X[rng.choice(usable, m - n_clusters)]])
    else:
        raise ValueError("init must be 'class', 'genuine', 'quantile', 'kmeans' or 'random', "
                         f"got {init!r}")
    return _jitter_repeats(np.array(Z, dtype=float), X, rng)


def _jitter_repeats(Z, X, rng):
    """``Z`` (m, d) with every repeat of a row moved by a small jitter (1e-3 of X's
    spread per feature): equal prototypes would move together forever (zero repulsion
    between equal points, equal gradients)."""
    _, first = np.unique(Z, axis=0, return_index=True)
    dup = np.setdiff1d(np.arange(len(Z)), first)
    if len(dup):
        scale = 1e-3 * (X.std(0) + (X.std(0) == 0))
        Z[dup] += scale * rng.standard_normal((len(dup), Z.shape[1]))
    return Z


def candidate_starts(X, y, u, m, init, rng, n):
    """``n`` starting prototype sets, each of shape (m, d): the ``init`` rule's, then (for
    ``"class"`` and ``"genuine"``) the other of the two rules, then random training rows
    with a random split between the classes (at least one of each when y has both signs
    and m >= 2; a class short of its share leaves the rest to other rows, and a row
    repeats, jittered as `initial_prototypes` does, only with fewer usable rows than m);
    for the other rules, their restarts."""
    starts = [initial_prototypes(X, y, u, m, init, rng)]
    if init in ("class", "genuine") and n > 1:
        starts.append(initial_prototypes(X, y, u, m, "class" if init == "genuine"
                                         else "genuine", rng))
    usable = np.flatnonzero(u > 0)
    pos, neg = usable[y[usable] > 0], usable[y[usable] <= 0]
    while len(starts) < n:
        if init not in ("class", "genuine"):
            starts.append(initial_prototypes(X, y, u, m, init, rng, restart=len(starts)))
            continue
        if len(pos) and len(neg) and m >= 2:
            k = int(rng.integers(1, m))
            idx = np.concatenate([rng.choice(pos, min(k, len(pos)), replace=False),
                                  rng.choice(neg, min(m - k, len(neg)), replace=False)])
        else:
            idx = rng.choice(usable, min(m, len(usable)), replace=False)
        short = m - len(idx)
        if short:
            rest = np.setdiff1d(usable, idx)
            more = rng.choice(rest, min(short, len(rest)), replace=False)
            idx = np.concatenate([idx, more, rng.choice(usable, short - len(more))])
        starts.append(_jitter_repeats(np.array(X[idx.astype(int)], dtype=float), X, rng))
    return starts[:n]


def least_omega_start(X, y, u, starts, similarity, lam, lam_sum=0.0):
    """The start of least Omega (Eq. 2, eq:objective) without moving it, beta and b by
    Eq. 4 (eq:beta), and that Omega.

    All the starts' similarities come from one call ``similarity(X, Z)`` on their
    stacked prototypes, so with a black-box matcher the choice costs one program run
    (none for pairs its cache already holds). Omega is the training objective on ``X``:
    where X holds only the training images, a start made of them fits them through their
    self-similarity and looks better than it is; rows the starts are not made of are
    what make the choice informative. `candidate_starts` makes starts of every row of
    positive weight of the ``X`` it is given: give it the rows starts may be made of,
    and this function every row to score them on.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
    starts : list of ndarray of shape (m, d)
    similarity : Similarity
    lam : float
        The absolute ridge penalty of Eq. 2.
    lam_sum : float
        The penalty on (sum_j beta_j)^2 (`ssgallery.learn.objective.penalty`).

    Returns
    -------
    Z0 : ndarray of shape (m, d)
    omega : float
    """
    m = len(starts[0])
    S = np.asarray(similarity(X, np.vstack(starts)), dtype=float)
    omegas = [unmoved_omega(S[:, k * m:(k + 1) * m], y, u, lam, lam_sum)
              for k in range(len(starts))]
    best = int(np.argmin(omegas))
    return starts[best], float(omegas[best])


def unmoved_omega(S, y, u, lam, lam_sum=0.0):
    """Omega (Eq. 2, eq:objective) of prototypes whose similarities are ``S`` (n, m),
    with beta and b by Eq. 4 (eq:beta) and no move (``lam_sum``: the penalty on
    (sum_j beta_j)^2, `ssgallery.learn.objective.penalty`)."""
    beta, b = beta_step(S, y, u, lam, lam_sum)
    return objective(S, y, u, beta, b, lam, lam_sum)


def swap_start(X, y, u, Z0, similarity, lam, rounds, rows=None, lam_sum=0.0):
    """A start improved by swaps of one prototype for one training row (the SWAP phase
    of k-medoids' PAM, on the training Omega of Eq. 2 (eq:objective) instead of a
    distance): each round makes the single swap that lowers the unmoved Omega most
    (beta and b by Eq. 4 (eq:beta)), until ``rounds`` swaps or none lowers it.

    A start with a prototype on a row of positive target (distillation: a training image
    the teacher accepts, normally one of the client's own; the ``"genuine"`` start rule
    reads the same sign) keeps one: no swap leaves a verification model made of images
    the teacher rejects only, which would accept whoever looks like none of the few
    impostors it was fitted on.

    The similarities of every row to every row of positive weight come from one call
    ``similarity(X, X[rows])`` (with a black-box matcher, the Gram matrix it already
    answered for the teacher: its cache, no program run); memory is n x n.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
    Z0 : ndarray of shape (m, d)
        The start to improve.
    similarity : Similarity
    lam : float
        The absolute ridge penalty of Eq. 2.
    rounds : int
        At most this many swaps; 0 returns ``Z0``.
    rows : ndarray of int, optional
        The rows a prototype may be swapped for (default: every row of positive
        weight); Omega is on every row of ``X`` (e.g. mirror images that no prototype
        may be made of: `ssgallery.learn.targets.with_mirrors`).
    lam_sum : float
        The penalty on (sum_j beta_j)^2 in Omega (`ssgallery.learn.objective.penalty`).

    Returns
    -------
    Z : ndarray of shape (m, d)
        ``Z0`` with up to ``rounds`` prototypes replaced by training rows.
    """
    Z = np.array(Z0, dtype=float)
    if rounds <= 0:
        return Z
    rows = np.flatnonzero(u > 0) if rows is None else np.asarray(rows, dtype=int)
    X_rows = X[rows]
    S_rows = np.asarray(similarity(X, X_rows), dtype=float)
    S = np.asarray(similarity(X, Z), dtype=float)
    in_start = [(X_rows == z).all(axis=1) for z in Z]  # every copy of a repeated row
    y_rows = y[rows]
    positive = np.array([bool((y_rows[hit] > 0).any()) for hit in in_start])
    keep_one = positive.any()  # a client's image in the start stays represented
    best = unmoved_omega(S, y, u, lam, lam_sum)
    for _ in range(rounds):
        free = ~np.any(in_start, axis=0)  # rows not already a prototype
        swap = _best_swap(S, S_rows, y, u, (lam, lam_sum), best, free,
                          positive if keep_one else None, y_rows)
        if swap is None:
            break
        best, i, j = swap
        in_start[i] = (X_rows == X_rows[j]).all(axis=1)
        positive[i] = y_rows[j] > 0
        S[:, i], Z[i] = S_rows[:, j], X_rows[j]
    return Z


def _best_swap(S, S_rows, y, u, lams, best, free, positive, y_rows):
    """`swap_start`'s round: the swap of one prototype (a column of ``S``, shape (n, m))
    for one row of ``free`` (bool, shape (r,); its similarities a column of ``S_rows``,
    shape (n, r), its target in ``y_rows``, shape (r,)) of least unmoved Omega below
    ``best``, as ``(omega, i, j)``, or None. ``positive`` (bool, shape (m,)): the
    prototypes on a row of positive target, of which a swap keeps one (None: no such
    rule). ``lams``: ``(lam, lam_sum)``."""
    swap = None
    for i in range(S.shape[1]):
        trial = S.copy()
        others_positive = positive is None or np.delete(positive, i).any()
        for j in np.flatnonzero(free):
            if not others_positive and y_rows[j] <= 0:
                continue
            trial[:, i] = S_rows[:, j]
            omega = unmoved_omega(trial, y, u, *lams)
            if omega < best and (swap is None or omega < swap[0]):
                swap = (omega, i, j)
    return swap


def resolve_init(init, similarity):
    """``"auto"``: ``"class"`` for an analytic similarity (eigenface), ``"genuine"`` for a
    black-box one (heuristic gradient, Eq. 7 (eq:similarity-grad)), where starting m - 1
    prototypes on the client's own images leaves fewer genuine images unrepresented
    (benchmarks/paper_att_ebgm.py measures it). Other values pass through."""
    if init != "auto":
        return init
    return "class" if getattr(similarity, "has_gradient", False) else "genuine"


INITS = ("class", "genuine", "quantile", "kmeans", "random")
