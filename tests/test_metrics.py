"""Metrics: hand-computed tiny cases and agreement with scikit-learn."""

import numpy as np
import pytest
from scipy.special import ndtri
from sklearn import metrics as skm

from ssgallery.biometrics import metrics as M

NEG = [0.1, 0.2, 0.3, 0.4]
POS = [0.35, 0.5, 0.6]


def test_farfrr_hand_case():
    assert M.farfrr(NEG, POS, 0.3) == (0.5, 0.0)  # 0.3, 0.4 accepted; no genuine below
    assert M.farfrr(NEG, POS, 0.45) == (0.0, 1 / 3)
    assert M.farfrr(NEG, POS, 0.4) == (0.25, 1 / 3)  # score == threshold is accepted


def test_roc_curve_hand_case():
    far, frr, t = M.roc_curve([0.0, 1.0], [1.0, 2.0])
    np.testing.assert_array_equal(t, [0.0, 1.0, 2.0, np.inf])
    np.testing.assert_allclose(far, [1.0, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(frr, [0.0, 0.0, 0.5, 1.0])


def test_eer_hand_cases():
    assert M.eer([0.0, 0.1], [0.5, 0.9]) == 0.0  # separable
    # neg {0.1..0.4}, pos {0.35,0.5,0.6}: at t=0.35 FAR=1/4 FRR=0; at t=0.4 FAR=1/4 FRR=1/3;
    # the crossing lies on the vertical segment at FAR = 1/4 -> interpolated EER
    e = M.eer(NEG, POS)
    assert e == pytest.approx(0.25)
    # neg {0,1,2,3}, pos {1,2,3,4}: (FAR, FRR) = (0.5, 0.25) at t=2 and (0.25, 0.5) at t=3
    assert M.eer([0, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.375)
    # totally inverted scores
    assert M.eer([1.0, 2.0], [0.0, 0.5]) == pytest.approx(1.0)


def test_eer_interpolates_between_points():
    # points (far, frr): (1,0) (0.5,0) (0.5,0.5)... construct a diagonal segment
    far = np.array([1.0, 0.6, 0.2, 0.0])
    frr = np.array([0.0, 0.2, 0.6, 1.0])
    # crossing between (0.6,0.2) and (0.2,0.6): at (0.4,0.4)
    assert M.curve_eer(far, frr) == pytest.approx(0.4)


def test_threshold_and_frr_at_far():
    neg = np.arange(100, dtype=float)  # 0..99
    pos = np.array([95.5, 97.5, 99.5, 120.0])
    t = M.threshold_at_far(neg, 0.03)  # at most 3 impostors accepted: 97, 98, 99
    assert 96.0 < t <= 97.0
    assert M.farfrr(neg, pos, t)[0] == pytest.approx(0.03)
    assert M.frr_at_far(neg, pos, 0.03) == pytest.approx(0.25)
    assert M.frr_at_far(neg, pos, 0.0) == pytest.approx(0.5)  # only 99.5 and 120 above 99
    assert M.threshold_at_far(neg, 1.0) == 0.0
    with pytest.raises(ValueError):
        M.threshold_at_far(neg, 1.5)


def test_threshold_at_far_with_ties():
    neg = [1.0, 1.0, 1.0, 0.0]
    t = M.threshold_at_far(neg, 0.5)  # accepting any 1.0 accepts all three: FAR must be 0
    assert M.farfrr(neg, [2.0], t)[0] == 0.0


def test_hter():
    assert M.hter(NEG, POS, 0.45) == pytest.approx((0.0 + 1 / 3) / 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_curve_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    neg = np.round(rng.normal(0, 1, 300), 2)  # rounding creates ties
    pos = np.round(rng.normal(1.5, 1, 40), 2)
    far, frr, thr = M.roc_curve(neg, pos)
    y = np.r_[np.zeros(neg.size), np.ones(pos.size)]
    fpr, tpr, sk_thr = skm.roc_curve(y, np.r_[neg, pos], drop_intermediate=False)
    # sklearn: decreasing thresholds, first one +inf; ours increasing with +inf last
    np.testing.assert_allclose(far[::-1], fpr)
    np.testing.assert_allclose(frr[::-1], 1.0 - tpr)
    np.testing.assert_allclose(thr[:-1][::-1], sk_thr[1:])
    # sklearn's DET points are a subset of ours
    dfpr, dfnr, dthr = skm.det_curve(y, np.r_[neg, pos])
    for a, b, t in zip(dfpr, dfnr, dthr):
        assert M.farfrr(neg, pos, t) == pytest.approx((a, b))
    x, yy = M.det(neg, pos)
    np.testing.assert_allclose(x, ndtri(far))
    np.testing.assert_allclose(yy, ndtri(frr))
    assert np.all(np.isfinite(M.det(neg, pos, min_rate=1e-6)[0]))


@pytest.mark.parametrize("seed", [0, 1])
def test_eer_against_sklearn_curve(seed):
    rng = np.random.default_rng(seed)
    neg = rng.normal(0, 1, 2000)
    pos = rng.normal(2, 1, 2000)
    e = M.eer(neg, pos)
    y = np.r_[np.zeros(neg.size), np.ones(pos.size)]
    fpr, tpr, _ = skm.roc_curve(y, np.r_[neg, pos])
    fnr = 1 - tpr
    i = np.argmin(np.abs(fpr - fnr))
    assert abs(e - 0.5 * (fpr[i] + fnr[i])) < 2e-3
    # analytic: Phi(-1) for two unit normals 2 apart
    assert e == pytest.approx(0.1587, abs=0.02)
    t = M.eer_threshold(neg, pos)
    far, frr = M.farfrr(neg, pos, t)
    assert abs(far - frr) < 2e-3


def test_average_curves_and_average_eer():
    grid = M.far_grid(1e-3, 50)
    assert grid[0] == 0.0 and grid[-1] == 1.0 and np.all(np.diff(grid) > 0)
    # c1: (FAR, FRR) = (1, 0), (0.5, 0), (0.5, 0.5), (0, 0.5), (0, 1)
    c1 = M.roc_curve([0.0, 1.0], [0.5, 2.0])[:2]
    c2 = M.roc_curve([0.0, 1.0], [2.0, 3.0])[:2]  # separable: FRR 0 at FAR 0
    one = M.frr_on_grid(*c1, grid)
    assert one[0] == 0.5 and one[-1] == 0.0
    assert M.frr_on_grid(*c1, [0.25, 0.4999, 0.5]).tolist() == [0.5, 0.5, 0.0]  # steps
    _, mean = M.average_curves([c1, c2], grid)
    assert np.all(np.diff(mean) <= 0)  # non-increasing in FAR
    np.testing.assert_allclose(mean, 0.5 * one)
    assert M.grid_frr_at(grid, one, 0.01) == 0.5
    assert M.average_eer([c1]) == pytest.approx(M.eer([0.0, 1.0], [0.5, 2.0])) == 0.5
    # mean staircase: FRR 0.25 for FAR < 0.5, else 0 -> crosses FAR = FRR at 0.25
    assert M.average_eer([c1, c2]) == pytest.approx(0.25)
    assert M.grid_eer(grid, mean) == pytest.approx(0.25, abs=0.01)
    with pytest.raises(ValueError):
        M.average_curves([], grid)
    with pytest.raises(ValueError):
        M.average_eer([])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_one_curve_averages_to_its_own_metrics(seed):
    rng = np.random.default_rng(seed)
    neg, pos = rng.normal(0, 1, 200), rng.normal(1.5, 1, 9)
    far, frr, _ = M.roc_curve(neg, pos)
    assert M.average_eer([(far, frr)]) == pytest.approx(M.eer(neg, pos), abs=1e-12)
    for f in (0.0, 0.001, 0.01, 0.1):
        assert M.frr_on_grid(far, frr, [f])[0] == pytest.approx(M.frr_at_far(neg, pos, f))


def test_rejects_bad_scores():
    with pytest.raises(ValueError, match="empty"):
        M.eer([], [1.0])
    with pytest.raises(ValueError, match="infinite"):
        M.eer([np.inf], [1.0])


def test_failures_to_acquire_count_as_rejections_like_bob_measure():
    """NaN = failure to acquire: an FTA genuine claim is rejected at every threshold
    (FRR), an FTA impostor claim too (never in FAR's numerator, always in its
    denominator); the two FTA rates are reported apart."""
    neg, pos = [0.0, 1.0, np.nan, 2.0], [1.5, np.nan, 3.0, np.nan]
    assert M.fta_rates(neg, pos) == (0.25, 0.5)
    assert M.farfrr(neg, pos, -10.0) == (0.75, 0.5)
    assert M.farfrr(neg, pos, 1.5) == (0.25, 0.5)
    far, frr, t = M.roc_curve(neg, pos)
    np.testing.assert_allclose(t, [0.0, 1.0, 1.5, 2.0, 3.0, np.inf])
    np.testing.assert_allclose(far, [0.75, 0.5, 0.25, 0.25, 0.0, 0.0])
    np.testing.assert_allclose(frr, [0.5, 0.5, 0.5, 0.75, 0.75, 1.0])
    # the threshold at FAR <= 25 %: one of the four impostor claims may be accepted
    assert M.farfrr(neg, pos, M.threshold_at_far(neg, 0.25))[0] == 0.25
    assert M.threshold_at_far([np.nan, np.nan], 0.5) == -np.inf
    all_fta = M.roc_curve([np.nan], [np.nan])
    assert (all_fta[0].tolist(), all_fta[1].tolist()) == ([0.0], [1.0])
