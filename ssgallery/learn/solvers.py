"""Numerical core of the super-sparse learner (paper Sect. III; docs/method.md).

Objective (Eq. 2 (eq:objective); Eq. 3 (eq:objective-matrix) in matrix form), with
sample weights u (the estimators normalise them to sum 1):

    Omega(beta, b, Z) = sum_i u_i (g(x_i) - y_i)^2 + lam * beta'beta,
    g(x) = sum_j beta_j s(x, z_j) + b.

Functions here work on plain arrays: ``X`` (n, d), ``y`` (n,), ``u`` (n,), prototypes
``Z`` (m, d). Every similarity call goes through `CountingSimilarity`, so that
the solvers can be compared on the number of s(x, z) entries they compute.
"""

import warnings

import numpy as np
import scipy.linalg
import scipy.optimize


class CountingSimilarity:
    """Wrap a `ssgallery.learn.similarity.Similarity` and count evaluated entries.

    Gradients are always requested with the similarity matrix ``S`` passed in, so
    they cost no extra evaluation.
    """

    def __init__(self, similarity):
        self.similarity = similarity
        self.n_evals = 0
        self.has_gradient = getattr(similarity, "has_gradient", False)

    def __call__(self, X, Z):
        S = np.asarray(self.similarity(X, Z), dtype=float)
        self.n_evals += S.size
        return S

    def gradient(self, X, Z, S):
        return self.similarity.gradient(X, Z, S)

    def contract_gradient(self, X, Z, W, S):
        return self.similarity.contract_gradient(X, Z, W, S)


def solve_psd(M, rhs):
    """Solve M x = rhs for a symmetric positive semi-definite M, never inverting.

    Cholesky (only the upper triangle of M is read); least squares when M is singular
    or ill-conditioned (e.g. duplicate prototypes with lam = 0). Used for the
    (m+1)x(m+1) system of Eq. 4 (eq:beta) and for the baselines' beta = K_zz^-1 K_zx alpha.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(M, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning, ValueError):
        # singular or ill-conditioned (duplicate prototypes with lam = 0): least squares
        return scipy.linalg.lstsq(M, rhs)[0]


def beta_system(S, y, u, lam):
    """The (m+1)x(m+1) system of Eq. 4 (eq:beta): returns ``M``, right-hand side, ``A = [S, 1]``."""
    n, m = S.shape
    A = np.hstack([S, np.ones((n, 1))])
    UA = u[:, None] * A
    M = A.T @ UA
    M[np.arange(m), np.arange(m)] += lam  # ridge on beta only, bias unpenalised
    return M, UA.T @ y, A


def beta_step(S, y, u, lam):
    """Eq. 4 (eq:beta): optimal (beta, b) for fixed prototypes.

    Parameters
    ----------
    S : ndarray of shape (n, m)
        Similarities s(x_i, z_j).
    y, u : ndarray of shape (n,)
        Targets and sample weights.
    lam : float
        Ridge penalty on beta.

    Returns
    -------
    beta : ndarray of shape (m,)
    b : float
    """
    M, rhs, _ = beta_system(S, y, u, lam)
    theta = solve_psd(M, rhs)
    return theta[:-1], float(theta[-1])


def objective(S, y, u, beta, b, lam):
    """Eq. 2 (eq:objective): sum_i u_i (g(x_i) - y_i)^2 + lam beta'beta."""
    r = S @ beta + b - y
    return float(u @ (r * r) + lam * beta @ beta)


def objective_and_gradient(X, y, u, Z, similarity, lam, form="reduced", S=None):
    """Omega*(Z) = min_{beta,b} Omega and its gradient with respect to every prototype.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y, u : ndarray of shape (n,)
    Z : ndarray of shape (m, d)
    similarity : Similarity or CountingSimilarity
    lam : float
    form : {"reduced", "full"}
        "full": Eq. 5 (eq:gradient-z) with dbeta/dz_j, db/dz_j from Eq. 6
        (eq:final-gradient) (solves with M).
        "reduced": the envelope form 2 beta_j sum_i u_i (g_i - y_i) ds(x_i, z_j)/dz_j
        (the Eq. 6 (eq:final-gradient) terms vanish because the beta-step is exact).
    S : ndarray of shape (n, m), optional
        Precomputed similarity matrix.

    Returns
    -------
    omega : float
    grad : ndarray of shape (m, d)
    beta : ndarray of shape (m,)
    b : float
    """
    if S is None:
        S = similarity(X, Z)
    M, rhs, A = beta_system(S, y, u, lam)
    theta = solve_psd(M, rhs)
    beta, b = theta[:-1], float(theta[-1])
    r = S @ beta + b - y  # g - y
    omega = float(u @ (r * r) + lam * beta @ beta)
    m, d = Z.shape
    if form == "reduced":
        W = (2.0 * u * r)[:, None] * beta[None, :]
        grad = similarity.contract_gradient(X, Z, W, S)
    elif form == "full":
        G = similarity.gradient(X, Z, S)  # (n, m, d): ds(x_i, z_j)/dz_j
        UG = u[:, None, None] * G
        rUG = np.einsum("i,ijd->jd", r, UG)  # (m, d): (g - y)' U dS_j/dz_j
        # Eq. 6 (eq:final-gradient) right-hand sides for all j at once:
        # beta_j [S'; 1'] U dS_j + [V'; 0'] U dS_j
        R = np.einsum("ik,ijd->kjd", A, UG) * beta[None, :, None]  # (m+1, m, d)
        R[np.arange(m), np.arange(m), :] += rUG
        dtheta = -solve_psd(M, R.reshape(m + 1, m * d)).reshape(m + 1, m, d)
        dbeta, db = dtheta[:-1], dtheta[-1]
        # Eq. 5 (eq:gradient-z): 2 (g-y)' U (beta_j dS_j + S dbeta + 1 db) + 2 lam beta' dbeta
        Ur = u * r
        grad = 2.0 * (beta[:, None] * rUG
                      + np.einsum("k,kjd->jd", S.T @ Ur, dbeta)
                      + Ur.sum() * db
                      + lam * np.einsum("k,kjd->jd", beta, dbeta))
    else:
        raise ValueError(f"form must be 'reduced' or 'full', got {form!r}")
    return omega, grad, beta, b


def repulsion_gradient(Z, similarity, S_zz=None):
    """d(sum_{k != j} s(z_k, z_j))/dz_j for every j, shape (m, d) (Algorithm 1 penalty)."""
    m = len(Z)
    if S_zz is None:
        S_zz = similarity(Z, Z)
    W = np.ones((m, m)) - np.eye(m)
    return similarity.contract_gradient(Z, Z, W, S_zz)


def _project(Z, bounds):
    if bounds is None:
        return Z
    return np.clip(Z, bounds[0], bounds[1])


def solve_paper(X, y, u, Z0, similarity, lam, eta=0.5, normalize_step=False,
                repulsion=True, bounds=None, max_iter=100, tol=1e-6, refresh_every=1):
    """Algorithm 1 of the paper: cyclic prototype moves, beta-step after every move.

    ``similarity`` must be a `CountingSimilarity`. ``max_iter`` counts sweeps
    (m prototype moves each). Stops when |Delta Omega| < tol after a move.
    ``refresh_every`` = p > 1: the paper's suggestion for the training cost (closing
    section, sect:contributions_and_future_work), see `solve_paper_refresh`.

    Returns
    -------
    Z, beta, b, omega, n_moves, path
        ``path`` is a list of (cumulative similarity evaluations, Omega).
    """
    if refresh_every > 1:
        return solve_paper_refresh(X, y, u, Z0, similarity, lam, eta=eta,
                                   normalize_step=normalize_step, repulsion=repulsion,
                                   bounds=bounds, max_iter=max_iter, tol=tol,
                                   refresh_every=refresh_every)
    Z = _project(np.array(Z0, dtype=float), bounds)
    m = len(Z)
    S = similarity(X, Z)
    beta, b = beta_step(S, y, u, lam)
    omega = objective(S, y, u, beta, b, lam)
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
        beta, b = beta_step(S, y, u, lam)  # Eq. 4 (eq:beta) after every move
        new = objective(S, y, u, beta, b, lam)
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
                        refresh_every=3):
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
    m, n = len(Z), len(X)
    S_all = similarity(np.vstack([X, Z]), Z)  # the columns and s(z_k, z_j) in one call
    S, S_zz = S_all[:n].copy(), S_all[n:].copy()
    anchor, anchor_col = Z.copy(), S.copy()  # last exact point of each prototype
    kappa = np.full(m, 1.0 if getattr(similarity, "has_gradient", False) else np.nan)
    moves = np.zeros(m, dtype=int)  # moves since each prototype's last refresh
    beta, b = beta_step(S, y, u, lam)
    omega = objective(S, y, u, beta, b, lam)
    best = (omega, Z.copy(), beta, b)
    path = [(similarity.n_evals, omega)]
    t = 0
    while t < max_iter * m:
        j = t % m
        t += 1
        step = _move(X, y, u, S, beta, b, j, Z[j:j + 1], similarity, eta, normalize_step)
        if repulsion and m > 1:
            others = np.delete(np.arange(m), j)
            w = S_zz[others, j][:, None]  # s(z_k, z_j) at j's last refresh
            rep = similarity.contract_gradient(Z[others], Z[j:j + 1], np.ones_like(w), w)[0]
            step = step + rep / t ** 2
        Z[j] = _project(Z[j] - step, bounds)
        moves[j] += 1
        if np.isnan(kappa[j]) or moves[j] >= refresh_every:
            _refresh(X, Z, [j], similarity, S, S_zz, anchor, anchor_col, kappa, moves)
        else:
            S[:, j] = first_order_column(X, anchor[j], anchor_col[:, j], Z[j] - anchor[j],
                                         similarity, kappa[j])
        beta, b = beta_step(S, y, u, lam)  # Eq. 4 (eq:beta) after every move
        new = objective(S, y, u, beta, b, lam)
        if not moves.any():  # every column exact: a true Omega
            path.append((similarity.n_evals, new))
            if new < best[0]:
                best = (new, Z.copy(), beta, b)
        done = abs(new - omega) < tol
        omega = new
        if done:
            break
    stale = list(np.flatnonzero(moves))
    if stale:
        _refresh(X, Z, stale, similarity, S, S_zz, anchor, anchor_col, kappa, moves)
        beta, b = beta_step(S, y, u, lam)
        omega = objective(S, y, u, beta, b, lam)
        path.append((similarity.n_evals, omega))
        if omega < best[0]:
            best = (omega, Z.copy(), beta, b)
    omega, Z, beta, b = best
    return Z, beta, b, omega, t, path


def _refresh(X, Z, cols, similarity, S, S_zz, anchor, anchor_col, kappa, moves):
    """Exact columns for prototypes ``cols`` (one call, with s(z_k, z_j)); refits each
    one's Eq. 7 (eq:similarity-grad) scale on the change since its last exact point."""
    n = len(X)
    A = similarity(np.vstack([X, Z]), Z[cols])
    for k, j in enumerate(cols):
        exact = A[:n, k]
        delta = Z[j] - anchor[j]
        if np.any(delta):
            pred = first_order_column(X, anchor[j], anchor_col[:, j], delta, similarity)
            kappa[j] = secant_scale(pred - anchor_col[:, j], exact - anchor_col[:, j])
        S[:, j] = anchor_col[:, j] = exact
        S_zz[:, j] = A[n:, k]
        anchor[j] = Z[j]
        moves[j] = 0


def solve_varpro(X, y, u, Z0, similarity, lam, repulsion=True, bounds=None,
                 max_iter=200, tol=1e-6, repulsion_iter=5):
    """Variable projection: minimise Omega*(Z) = min_{beta,b} Omega over all prototypes
    jointly with L-BFGS-B (native box bounds).

    When ``repulsion`` is true (and m > 1), a first phase of at most ``repulsion_iter``
    iterations minimises Omega* + mu * (1/2) sum_{k != j} s(z_k, z_j), mu = Omega*(Z0),
    to push apart prototypes that start close; the second phase minimises Omega* alone.
    The best point evaluated is returned, so Omega never ends above its starting value.
    ``max_iter=0``: no move at all (the start, beta and b by Eq. 4).

    Returns
    -------
    Z, beta, b, omega, n_iter, path
        ``path``: list of (cumulative similarity evaluations, best Omega so far),
        one entry per objective evaluation.
    """
    Z0 = _project(np.array(Z0, dtype=float), bounds)
    m, d = Z0.shape
    n = len(X)
    best = {"omega": np.inf}
    path = []

    cache = {}

    def fun(zflat, mu, with_zz=False):
        Z = zflat.reshape(m, d)
        key = zflat.tobytes()
        if key in cache:  # the same point again (phase switch): no new evaluation
            omega, grad, S_zz = cache[key]
        else:
            S = S_zz = None
            if mu > 0 or with_zz:  # one similarity call for s(x_i, z_j) and s(z_k, z_j)
                S_all = similarity(np.vstack([X, Z]), Z)  # (one external program run)
                S, S_zz = S_all[:n], S_all[n:]
            omega, grad, beta, b = objective_and_gradient(X, y, u, Z, similarity, lam, S=S)
            cache.clear()
            cache[key] = omega, grad, S_zz
            if omega < best["omega"]:
                best.update(omega=omega, Z=Z.copy(), beta=beta, b=b)
            path.append((similarity.n_evals, best["omega"]))
        f, g = omega, grad
        if mu > 0:
            if S_zz is None:
                S_zz = similarity(Z, Z)
            f = f + mu * 0.5 * (S_zz.sum() - np.trace(S_zz))
            g = g + mu * repulsion_gradient(Z, similarity, S_zz)
        return f, np.array(g, dtype=float).ravel()

    lb = None
    if bounds is not None:
        lo = np.broadcast_to(np.asarray(bounds[0], dtype=float), (m, d)).ravel()
        hi = np.broadcast_to(np.asarray(bounds[1], dtype=float), (m, d)).ravel()
        lb = scipy.optimize.Bounds(lo, hi)
    opts = {"ftol": tol, "gtol": 1e-12}
    x = Z0.ravel()
    n_iter = 0
    if max_iter == 0:  # no move: beta and b by Eq. 4 (eq:beta) at the start
        fun(x, 0.0)
        return best["Z"], best["beta"], best["b"], best["omega"], n_iter, path
    if repulsion and m > 1 and repulsion_iter > 0:
        omega0 = fun(x, 0.0, True)[0]  # also s(z_k, z_j) at Z0, for phase 1's start
        res = scipy.optimize.minimize(fun, x, args=(omega0,), jac=True, method="L-BFGS-B",
                                      bounds=lb, options=dict(opts, maxiter=repulsion_iter))
        x, n_iter = res.x, res.nit
    res = scipy.optimize.minimize(fun, x, args=(0.0,), jac=True, method="L-BFGS-B",
                                  bounds=lb, options=dict(opts, maxiter=max(1, max_iter)))
    n_iter += res.nit
    return best["Z"], best["beta"], best["b"], best["omega"], n_iter, path
