"""The solvers of the super-sparse learner (paper Sect. III; docs/method.md).

They minimise the objective of `ssgallery.learn.objective` over the prototypes ``Z``,
with beta and b by Eq. 4 (eq:beta) at every point: `solve_paper` (Algorithm 1, and
`solve_paper_refresh` with exact similarities every p moves) and `solve_varpro`
(L-BFGS-B on all prototypes jointly). Inputs are plain arrays: ``X`` (n, d), ``y`` (n,),
``u`` (n,), the start ``Z0`` (m, d); ``similarity`` is a `CountingSimilarity`.
The objective's functions are importable from here too.
"""

import numpy as np
import scipy.optimize

from ssgallery.learn.objective import (  # noqa: F401  (public here too)
    CountingSimilarity,
    beta_step,
    beta_system,
    objective,
    objective_and_gradient,
    repulsion_gradient,
    solve_psd,
)


def _project(Z, bounds):
    if bounds is None:
        return Z
    return np.clip(Z, bounds[0], bounds[1])


def solve_paper(X, y, u, Z0, similarity, lam, eta=0.5, normalize_step=False,
                repulsion=True, bounds=None, max_iter=100, tol=1e-6, refresh_every=1,
                lam_sum=0.0):
    """Algorithm 1 of the paper: cyclic prototype moves, beta-step after every move.

    ``similarity`` must be a `CountingSimilarity`. ``max_iter`` counts sweeps
    (m prototype moves each). Stops when |Delta Omega| < tol after a move.
    ``refresh_every`` = p > 1: the paper's suggestion for the training cost (closing
    section, sect:contributions_and_future_work), see `solve_paper_refresh`.
    ``lam_sum``: the penalty on (sum_j beta_j)^2 (`ssgallery.learn.objective.penalty`).

    Returns
    -------
    Z, beta, b, omega, n_moves, path
        ``path`` is a list of (cumulative similarity evaluations, Omega).
    """
    if refresh_every > 1:
        return solve_paper_refresh(X, y, u, Z0, similarity, lam, eta=eta,
                                   normalize_step=normalize_step, repulsion=repulsion,
                                   bounds=bounds, max_iter=max_iter, tol=tol,
                                   refresh_every=refresh_every, lam_sum=lam_sum)
    Z = _project(np.array(Z0, dtype=float), bounds)
    m = len(Z)
    S = similarity(X, Z)
    beta, b = beta_step(S, y, u, lam, lam_sum)
    omega = objective(S, y, u, beta, b, lam, lam_sum)
    path = [(similarity.n_evals, omega)]
    t = 0
    while t < max_iter * m:
        j = t % m
        t += 1
        zj = Z[j:j + 1]
        step = _move(X, y, u, S, beta, b, j, zj, similarity, eta, normalize_step)
        if repulsion and m > 1:
            others = np.delete(Z, j, axis=0)
            s_oj = similarity(others, zj)  # (m-1, 1)
            rep = similarity.contract_gradient(others, zj, np.ones_like(s_oj), s_oj)[0]
            step = step + rep / t ** 2  # penalty for close prototypes, 1/t^2 decay
        Z[j] = _project(Z[j] - step, bounds)
        S[:, j] = similarity(X, Z[j:j + 1])[:, 0]
        beta, b = beta_step(S, y, u, lam, lam_sum)  # Eq. 4 (eq:beta) after every move
        new = objective(S, y, u, beta, b, lam, lam_sum)
        path.append((similarity.n_evals, new))
        done = abs(new - omega) < tol
        omega = new
        if done:
            break
    return Z, beta, b, omega, t, path


def _move(X, y, u, S, beta, b, j, zj, similarity, eta, normalize_step):
    """Algorithm 1's gradient step for prototype j (before repulsion), shape (d,):
    Eq. 5 (eq:gradient-z) in its reduced form, O(n) with S[:, j] known."""
    r = S @ beta + b - y
    W = (2.0 * beta[j] * u * r)[:, None]
    g = similarity.contract_gradient(X, zj, W, S[:, j:j + 1])[0]
    if not normalize_step:
        return eta * g
    norm = np.linalg.norm(g)
    return eta * g / norm if norm > 0 else np.zeros_like(g)


def first_order_column(X, z, s, delta, similarity, kappa=1.0):
    """First-order model of a moved prototype's column: s(x_i, z + delta) ~= s(x_i, z)
    + kappa * ds(x_i, z)/dz . delta, shape (n,).

    ``s`` (n,) holds the exact s(X, z). For a black-box similarity the derivative is
    Eq. 7 (eq:similarity-grad), s(x_i, z)(x_i - z), a direction without a scale:
    ``kappa`` is that scale, fitted on exact refreshes (`secant_scale`); an analytic
    gradient takes ``kappa=1``.
    """
    G = similarity.gradient(X, z[None, :], s[:, None])[:, 0, :]  # (n, d)
    return s + kappa * (G @ delta)


def secant_scale(predicted_change, exact_change):
    """Least-squares kappa with exact_change ~= kappa * predicted_change (1.0 when the
    prediction is zero): the scale of Eq. 7 (eq:similarity-grad) measured on a move."""
    den = float(predicted_change @ predicted_change)
    return float(predicted_change @ exact_change) / den if den > 0 else 1.0


def solve_paper_refresh(X, y, u, Z0, similarity, lam, eta=0.5, normalize_step=False,
                        repulsion=True, bounds=None, max_iter=100, tol=1e-6,
                        refresh_every=3, lam_sum=0.0):
    """Algorithm 1 with exact similarities every p moves of a prototype (the paper's
    closing section: "similarities ... computed after a given number of iterations
    p > 1 ... updated using a first-order approximation" in between).

    Prototype j's column s(X, z_j) is computed exactly (one similarity call) on its
    first move and then on every p-th move; in between it is the first-order model
    `first_order_column` around the last exact point a_j, with the scale of Eq. 7
    (eq:similarity-grad) fitted by `secant_scale` on the previous exact refresh.
    The same call also returns s(z_k, z_j) for the other prototypes, the repulsion
    weights of j's next moves (so a refreshed move costs one call, not two). After the
    last sweep every approximate column is refreshed in one call, and the exact state
    (Z, beta, b) of lowest Omega seen at a refresh is returned: Omega is always exact.

    Returns
    -------
    Z, beta, b, omega, n_moves, path
        ``path``: (cumulative similarity evaluations, exact Omega) at each refresh.
    """
    Z = _project(np.array(Z0, dtype=float), bounds)
    m = len(Z)
    cols = _Columns(X, Z, similarity)
    S = cols.S
    beta, b = beta_step(S, y, u, lam, lam_sum)
    omega = objective(S, y, u, beta, b, lam, lam_sum)
    best = (omega, Z.copy(), beta, b)
    path = [(similarity.n_evals, omega)]
    t = 0
    while t < max_iter * m:
        j = t % m
        t += 1
        step = _move(X, y, u, S, beta, b, j, Z[j:j + 1], similarity, eta, normalize_step)
        if repulsion and m > 1:
            step = step + _repulsion(Z, cols.S_zz, j, similarity) / t ** 2
        Z[j] = _project(Z[j] - step, bounds)
        cols.moved(Z, j, refresh_every)
        beta, b = beta_step(S, y, u, lam, lam_sum)  # Eq. 4 (eq:beta) after every move
        new = objective(S, y, u, beta, b, lam, lam_sum)
        if cols.exact():  # every column exact: a true Omega
            path.append((similarity.n_evals, new))
            if new < best[0]:
                best = (new, Z.copy(), beta, b)
        done = abs(new - omega) < tol
        omega = new
        if done:
            break
    omega, Z, beta, b = _last_refresh(y, u, (lam, lam_sum), Z, cols, path, best)
    return Z, beta, b, omega, t, path


def _repulsion(Z, S_zz, j, similarity):
    """Algorithm 1's repulsion on prototype j, shape (d,), with the weights s(z_k, z_j)
    of j's last refresh (``S_zz``), so that it costs no similarity call."""
    others = np.delete(np.arange(len(Z)), j)
    w = S_zz[others, j][:, None]  # s(z_k, z_j) at j's last refresh
    return similarity.contract_gradient(Z[others], Z[j:j + 1], np.ones_like(w), w)[0]


def _last_refresh(y, u, lams, Z, cols, path, best):
    """After the last sweep: every approximate column refreshed in one call; returns the
    exact state ``(omega, Z, beta, b)`` of lowest Omega seen at a refresh. ``lams``:
    ``(lam, lam_sum)``."""
    stale = list(np.flatnonzero(cols.moves))
    if stale:
        cols.refresh(Z, stale)
        beta, b = beta_step(cols.S, y, u, *lams)
        omega = objective(cols.S, y, u, beta, b, *lams)
        path.append((cols.similarity.n_evals, omega))
        if omega < best[0]:
            best = (omega, Z.copy(), beta, b)
    return best


class _Columns:
    """The similarity columns of `solve_paper_refresh`: each prototype's column exact at
    its last refresh (its anchor), the first-order model `first_order_column` in between.

    ``S`` (n, m) holds the columns the beta-step uses, ``S_zz`` (m, m) the s(z_k, z_j)
    of each prototype's last refresh, ``kappa`` each one's Eq. 7 (eq:similarity-grad)
    scale (NaN until measured for a black-box similarity), ``moves`` the moves since
    each one's last refresh.
    """

    def __init__(self, X, Z, similarity):
        n, m = len(X), len(Z)
        self.X, self.similarity = X, similarity
        S_all = similarity(np.vstack([X, Z]), Z)  # the columns and s(z_k, z_j) in one call
        self.S, self.S_zz = S_all[:n].copy(), S_all[n:].copy()
        self.anchor, self.anchor_col = Z.copy(), self.S.copy()  # last exact points
        self.kappa = np.full(m, 1.0 if getattr(similarity, "has_gradient", False) else np.nan)
        self.moves = np.zeros(m, dtype=int)

    def exact(self):
        """Whether every column is exact (no move since its last refresh)."""
        return not self.moves.any()

    def moved(self, Z, j, refresh_every):
        """Prototype j moved to ``Z[j]``: its column exact again on every p-th move (and
        while its scale is unknown), its first-order model otherwise."""
        self.moves[j] += 1
        if np.isnan(self.kappa[j]) or self.moves[j] >= refresh_every:
            self.refresh(Z, [j])
        else:
            self.S[:, j] = first_order_column(self.X, self.anchor[j], self.anchor_col[:, j],
                                              Z[j] - self.anchor[j], self.similarity,
                                              self.kappa[j])

    def refresh(self, Z, cols):
        """Exact columns for prototypes ``cols`` (one call, with s(z_k, z_j)); refits each
        one's Eq. 7 (eq:similarity-grad) scale on the change since its last exact point."""
        X, n = self.X, len(self.X)
        A = self.similarity(np.vstack([X, Z]), Z[cols])
        for k, j in enumerate(cols):
            exact = A[:n, k]
            delta = Z[j] - self.anchor[j]
            if np.any(delta):
                pred = first_order_column(X, self.anchor[j], self.anchor_col[:, j], delta,
                                          self.similarity)
                self.kappa[j] = secant_scale(pred - self.anchor_col[:, j],
                                             exact - self.anchor_col[:, j])
            self.S[:, j] = self.anchor_col[:, j] = exact
            self.S_zz[:, j] = A[n:, k]
            self.anchor[j] = Z[j]
            self.moves[j] = 0


def solve_varpro(X, y, u, Z0, similarity, lam, repulsion=True, bounds=None,
                 max_iter=200, tol=1e-6, repulsion_iter=5, lam_sum=0.0):
    """Variable projection: minimise Omega*(Z) = min_{beta,b} Omega over all prototypes
    jointly with L-BFGS-B (native box bounds).

    When ``repulsion`` is true (and m > 1), a first phase of at most ``repulsion_iter``
    iterations minimises Omega* + mu * (1/2) sum_{k != j} s(z_k, z_j), mu = Omega*(Z0),
    to push apart prototypes that start close; the second phase minimises Omega* alone.
    The best point evaluated is returned, so Omega never ends above its starting value.
    ``max_iter=0``: no move at all (the start, beta and b by Eq. 4). ``lam_sum``: the
    penalty on (sum_j beta_j)^2 (`ssgallery.learn.objective.penalty`).

    Returns
    -------
    Z, beta, b, omega, n_iter, path
        ``path``: list of (cumulative similarity evaluations, best Omega so far),
        one entry per objective evaluation.
    """
    Z0 = _project(np.array(Z0, dtype=float), bounds)
    m, d = Z0.shape
    fun = _Profiled(X, y, u, similarity, (lam, lam_sum), (m, d))
    lb = _box(bounds, m, d)
    opts = {"ftol": tol, "gtol": 1e-12}
    x = Z0.ravel()
    n_iter = 0
    if max_iter == 0:  # no move: beta and b by Eq. 4 (eq:beta) at the start
        fun(x, 0.0)
        return fun.best["Z"], fun.best["beta"], fun.best["b"], fun.best["omega"], n_iter, fun.path
    if repulsion and m > 1 and repulsion_iter > 0:
        omega0 = fun(x, 0.0, True)[0]  # also s(z_k, z_j) at Z0, for phase 1's start
        res = scipy.optimize.minimize(fun, x, args=(omega0,), jac=True, method="L-BFGS-B",
                                      bounds=lb, options=dict(opts, maxiter=repulsion_iter))
        x, n_iter = res.x, res.nit
    res = scipy.optimize.minimize(fun, x, args=(0.0,), jac=True, method="L-BFGS-B",
                                  bounds=lb, options=dict(opts, maxiter=max(1, max_iter)))
    n_iter += res.nit
    return fun.best["Z"], fun.best["beta"], fun.best["b"], fun.best["omega"], n_iter, fun.path


def _box(bounds, m, d):
    """``bounds`` (low, high), scalars or arrays, as L-BFGS-B's bounds on the flattened
    prototypes (None: unbounded)."""
    if bounds is None:
        return None
    lo = np.broadcast_to(np.asarray(bounds[0], dtype=float), (m, d)).ravel()
    hi = np.broadcast_to(np.asarray(bounds[1], dtype=float), (m, d)).ravel()
    return scipy.optimize.Bounds(lo, hi)


class _Profiled:
    """`solve_varpro`'s objective: Omega*(Z) and its gradient for L-BFGS-B, called with
    the flattened prototypes and the repulsion weight ``mu``.

    Keeps the best point evaluated (``best``: omega, Z, beta, b), the ``path``
    (cumulative similarity evaluations, best Omega so far) and the last point's values,
    so that the same point asked again (the phase switch) costs no evaluation.
    """

    def __init__(self, X, y, u, similarity, lams, shape):
        self.X, self.y, self.u, self.similarity = X, y, u, similarity
        self.lam, self.lam_sum = lams
        self.shape = shape
        self.best = {"omega": np.inf}
        self.path = []
        self.cache = {}

    def __call__(self, zflat, mu, with_zz=False):
        X, similarity = self.X, self.similarity
        n = len(X)
        Z = zflat.reshape(self.shape)
        key = zflat.tobytes()
        if key in self.cache:  # the same point again (phase switch): no new evaluation
            omega, grad, S_zz = self.cache[key]
        else:
            S = S_zz = None
            if mu > 0 or with_zz:  # one similarity call for s(x_i, z_j) and s(z_k, z_j)
                S_all = similarity(np.vstack([X, Z]), Z)  # (one external program run)
                S, S_zz = S_all[:n], S_all[n:]
            omega, grad, beta, b = objective_and_gradient(X, self.y, self.u, Z, similarity,
                                                          self.lam, S=S,
                                                          lam_sum=self.lam_sum)
            self.cache.clear()
            self.cache[key] = omega, grad, S_zz
            if omega < self.best["omega"]:
                self.best.update(omega=omega, Z=Z.copy(), beta=beta, b=b)
            self.path.append((similarity.n_evals, self.best["omega"]))
        f, g = omega, grad
        if mu > 0:
            if S_zz is None:
                S_zz = similarity(Z, Z)
            f = f + mu * 0.5 * (S_zz.sum() - np.trace(S_zz))
            g = g + mu * repulsion_gradient(Z, similarity, S_zz)
        return f, np.array(g, dtype=float).ravel()
