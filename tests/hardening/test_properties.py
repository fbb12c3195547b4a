"""Property tests (hypothesis) of the metric functions and of the HDF5 matcher-state
round trip."""

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ssgallery.biometrics import metrics as M
from ssgallery.formats.hdf5 import read_state, write_state

scores = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40)
SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(neg=scores, pos=scores, t1=st.floats(-1e6, 1e6), t2=st.floats(-1e6, 1e6))
def test_far_non_increasing_frr_non_decreasing_in_threshold(neg, pos, t1, t2):
    lo, hi = min(t1, t2), max(t1, t2)
    far_lo, frr_lo = M.farfrr(neg, pos, lo)
    far_hi, frr_hi = M.farfrr(neg, pos, hi)
    assert far_hi <= far_lo and frr_hi >= frr_lo
    assert 0 <= far_hi <= 1 and 0 <= frr_hi <= 1


@SETTINGS
@given(neg=scores, pos=scores)
def test_roc_curve_is_monotone_and_matches_farfrr(neg, pos):
    far, frr, thresholds = M.roc_curve(neg, pos)
    assert np.all(np.diff(far) <= 0) and np.all(np.diff(frr) >= 0)
    assert (far[0], frr[0], far[-1], frr[-1]) == (1.0, 0.0, 0.0, 1.0)
    for f, r, t in zip(far[:-1], frr[:-1], thresholds[:-1]):
        assert M.farfrr(neg, pos, t) == (f, r)


@SETTINGS
@given(neg=scores, pos=scores)
def test_eer_bounds(neg, pos):
    e = M.eer(neg, pos)
    assert 0.0 <= e <= 1.0
    if min(pos) > max(neg):
        assert e == 0.0
    if max(pos) < min(neg):
        assert e == 1.0


@SETTINGS
@given(neg=scores, pos=scores, a=st.floats(1e-3, 1e3), b=st.floats(-1e3, 1e3))
def test_invariant_to_increasing_transforms(neg, pos, a, b):
    """EER and the ROC points depend on the order of the scores only."""
    neg, pos = np.asarray(neg), np.asarray(pos)
    far, frr, _ = M.roc_curve(neg, pos)
    for f in (lambda x: a * x + b, lambda x: np.arctan(x / 1e6), lambda x: np.cbrt(x)):
        far2, frr2, _ = M.roc_curve(f(neg), f(pos))
        if len(far2) == len(far):  # a transform may merge ties at float precision
            np.testing.assert_array_equal(far2, far)
            np.testing.assert_array_equal(frr2, frr)
            assert M.eer(f(neg), f(pos)) == pytest.approx(M.eer(neg, pos), abs=1e-12)


@SETTINGS
@given(neg=scores, pos=scores, k_neg=st.integers(0, 5), k_pos=st.integers(0, 5),
       t=st.floats(-1e6, 1e6))
def test_failures_to_acquire_are_rejections(neg, pos, k_neg, k_pos, t):
    """Adding k FTA (NaN) claims: FAR scales by n/(n+k), FRR gains the k rejections."""
    n, p = len(neg), len(pos)
    far, frr = M.farfrr(neg, pos, t)
    far2, frr2 = M.farfrr(neg + [np.nan] * k_neg, pos + [np.nan] * k_pos, t)
    assert far2 == pytest.approx(far * n / (n + k_neg))
    assert frr2 == pytest.approx((frr * p + k_pos) / (p + k_pos))
    assert M.fta_rates(neg + [np.nan] * k_neg, pos + [np.nan] * k_pos) == \
        pytest.approx((k_neg / (n + k_neg), k_pos / (p + k_pos)))


@SETTINGS
@given(neg=scores, far=st.floats(0, 1))
def test_threshold_at_far_keeps_its_promise(neg, far):
    t = M.threshold_at_far(neg, far)
    assert np.mean(np.asarray(neg) >= t) <= far + 1e-12


# --------------------------------------------------------------------------- HDF5 state
names = st.text(st.characters(codec="utf-8", exclude_characters="/.\x00"), min_size=1,
                max_size=12).filter(lambda s: s != "_json_keys" and not s.startswith("."))
arrays = hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.uint8]),
                    hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
scalars = st.one_of(st.integers(-2**62, 2**62), st.floats(allow_nan=False), st.booleans(),
                    st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                            max_size=20))
jsonable = st.recursive(st.one_of(st.integers(-1000, 1000), st.text(max_size=5),
                                  st.booleans(), st.none()),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                        max_leaves=8).filter(lambda v: isinstance(v, (list, dict)))
states = st.dictionaries(names, st.one_of(arrays, scalars, jsonable), max_size=6)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=states)
def test_write_state_read_state_round_trip(tmp_path, state):
    path = tmp_path / "state.h5"
    with h5py.File(path, "w") as f:
        write_state(f.create_group("matcher"), state)
    with h5py.File(path, "r") as f:
        back, digest = read_state(f["matcher"])
    with h5py.File(path, "r") as f:
        assert read_state(f["matcher"])[1] == digest  # the digest is deterministic
    assert set(back) == set(state)
    for key, value in state.items():
        got = back[key]
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype and got.shape == value.shape
            np.testing.assert_array_equal(got, value)
        elif isinstance(value, float) and np.isnan(value):
            assert np.isnan(got)
        else:
            assert got == value and type(got) is type(value) or (
                isinstance(value, bool) and bool(got) is value), (key, value, got)
