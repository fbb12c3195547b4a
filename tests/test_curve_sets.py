"""Many clients' curves at once (``roc --scores`` on tens of thousands of clients): the
same figures bit for bit as one curve at a time, and no Python work per client and
bootstrap draw."""

import sys
from pathlib import Path

import numpy as np

from ssgallery.biometrics import metrics as M
from ssgallery.biometrics.curve_sets import MAX_CELLS, PooledClaims, Staircases
from ssgallery.biometrics.evaluation import evaluate, fta_curve
from ssgallery.biometrics.scores import read_scores

BIOMETRICS = str(Path(M.__file__).parent)


def _claims(rng, n):
    """Per client: impostor and genuine scores, rounded (ties), some NaN (FTA)."""
    negs, poss = [], []
    for _ in range(n):
        neg = np.round(rng.normal(-1, 0.7, rng.integers(1, 40)), 1)
        pos = np.round(rng.normal(1, 0.7, rng.integers(1, 9)), 1)
        neg[rng.random(neg.size) < 0.05] = np.nan
        pos[rng.random(pos.size) < 0.05] = np.nan
        negs.append(neg)
        poss.append(pos)
    return negs, poss


def _one_at_a_time_mean(curves, grid):
    """The vertical average as it was computed one curve at a time."""
    return np.stack([M.frr_on_grid(far, frr, grid) for far, frr in curves]).mean(axis=0)


def _one_at_a_time_eer(curves):
    B = np.unique(np.concatenate([np.asarray(f, dtype=float) for f, _ in curves]))
    V = _one_at_a_time_mean(curves, B)
    far = np.empty(2 * len(B) - 1)
    frr = np.empty_like(far)
    far[0::2], frr[0::2] = B[::-1], V[::-1]
    far[1::2], frr[1::2] = B[:0:-1], V[-2::-1]
    return M.curve_eer(far, frr)


def test_staircases_give_the_per_curve_figures_bit_for_bit():
    rng = np.random.default_rng(3)
    curves = [fta_curve(n, p) for n, p in zip(*_claims(rng, 300))]
    steps = Staircases(curves)
    for grid in (M.far_grid(), np.array([0.3, 0.01, 0.5, 0.0, 1.0]), np.array([0.05])):
        assert np.array_equal(steps.on_grid(grid),
                              np.stack([M.frr_on_grid(a, b, grid) for a, b in curves]))
        assert np.array_equal(steps.mean(grid), _one_at_a_time_mean(curves, grid))
    assert M.curve_eer(*steps.staircase()) == _one_at_a_time_eer(curves) == M.average_eer(curves)
    for _ in range(5):  # bootstrap draws: clients repeated, in the draw's order
        idx = rng.integers(0, len(curves), len(curves))
        drawn = [curves[i] for i in idx]
        assert M.curve_eer(*steps.staircase(idx)) == _one_at_a_time_eer(drawn)
        assert np.array_equal(steps.mean(M.far_grid(), idx),
                              _one_at_a_time_mean(drawn, M.far_grid()))


def test_the_mean_of_more_rows_than_one_block_sums_them_in_order():
    rng = np.random.default_rng(4)
    base = [fta_curve(n, p) for n, p in zip(*_claims(rng, 200))]
    grid = M.far_grid()
    curves = [base[i] for i in rng.integers(0, len(base), MAX_CELLS // len(grid) + 500)]
    assert len(curves) * len(grid) > MAX_CELLS
    assert np.array_equal(Staircases(curves).mean(grid), _one_at_a_time_mean(curves, grid))


def test_pooled_claims_give_the_concatenated_roc_bit_for_bit():
    rng = np.random.default_rng(5)
    negs, poss = _claims(rng, 200)
    pooled = PooledClaims(negs, poss)
    for weights in (np.ones(200, dtype=int), rng.integers(0, 3, 200),
                    np.bincount(rng.integers(0, 200, 200), minlength=200)):
        far, frr = fta_curve(np.concatenate([np.repeat(n[None], w, 0).ravel()
                                             for n, w in zip(negs, weights)]),
                             np.concatenate([np.repeat(p[None], w, 0).ravel()
                                             for p, w in zip(poss, weights)]))
        mine = pooled.curve(weights)
        assert np.array_equal(mine[0], far) and np.array_equal(mine[1], frr)


def _calls_into_biometrics(fn):
    """How many Python functions of ssgallery.biometrics ``fn()`` calls."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call" and frame.f_code.co_filename.startswith(BIOMETRICS):
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_the_bootstrap_costs_no_python_call_per_client_and_draw(tmp_path):
    rng = np.random.default_rng(6)
    path = tmp_path / "many.txt"
    lines = []
    for c in range(400):
        lines += [f"c{c} c{c} c{c}/{k}.png {rng.normal(1, 0.5):.4f}" for k in range(3)]
        lines += [f"c{c} i{k} i{k}/0.png {rng.normal(-1, 0.5):.4f}" for k in range(10)]
    path.write_text("\n".join(lines) + "\n")
    table = read_scores(path)
    calls = _calls_into_biometrics(lambda: evaluate([table], n_boot=50))
    # per client: its sweep, its claims digest, its corners (a handful of calls each);
    # one curve at a time, each draw called frr_on_grid and its corners per client
    # (50 x 400 x 2 = 40,000 calls)
    assert calls < 20 * 400, calls
