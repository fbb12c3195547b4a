"""Open-set 1:N: FPIR/FNIR on the top candidate, the DET, and the operating point derived
from held-out searches, on constructed score sets whose FPIR is known."""

import itertools

import numpy as np
import pytest
from scipy.stats import norm

from ssgallery.biometrics import identification as ident
from ssgallery.biometrics import openset
from ssgallery.errors import InputError

# 4 probes x 3 clients (as in test_identification): probe 3 is a stranger, best 0.8
S = np.array([[0.9, 0.2, 0.1],    # client 0 first
              [0.5, 0.4, 0.6],    # client 1 third
              [0.3, 0.7, 0.7],    # client 2 tied with client 1: not first
              [0.8, 0.1, 0.0]])
TRUE = np.array([0, 1, 2, -1])


def test_fpir_fnir_hand_case():
    assert ident.fpir_fnir(S, TRUE, 0.85) == (0.0, 2 / 3)  # only probe 0 found
    assert ident.fpir_fnir(S, TRUE, 0.8) == (1.0, 2 / 3)   # the stranger's 0.8 passes
    assert ident.fpir_fnir(S, TRUE, 0.95) == (0.0, 1.0)
    assert ident.fpir_fnir(S[:3], TRUE[:3], 0.5) == (None, 2 / 3)
    assert ident.fpir_fnir(S[3:], TRUE[3:], 0.5) == (1.0, None)


@pytest.mark.parametrize("seed", [0, 1])
def test_det_curve_is_fpir_fnir_at_every_threshold(seed):
    rng = np.random.default_rng(seed)
    true = np.r_[rng.integers(0, 6, 40), -np.ones(60, int)]
    scores = rng.normal(size=(100, 6)).round(1)  # ties
    scores[np.arange(40), true[:40]] += 1.5
    fpir, fnir, t = ident.det_curve(scores, true)
    assert np.all(np.diff(t) > 0) and np.isinf(t[-1])
    assert np.all(np.diff(fpir) <= 0) and np.all(np.diff(fnir) >= 0)
    for a, b, th in zip(fpir, fnir, t):
        assert (a, b) == pytest.approx(ident.fpir_fnir(scores, true, th))
    assert fpir[-1] == 0.0 and fnir[-1] == 1.0


def test_fnir_at_fpir_is_one_minus_dir_and_dash_when_unresolvable():
    rng = np.random.default_rng(0)
    true = np.r_[rng.integers(0, 5, 30), -np.ones(200, int)]
    scores = rng.normal(size=(230, 5))
    scores[np.arange(30), true[:30]] += 3.0
    fnir, t = ident.fnir_at_fpir(scores, true, 0.01)
    rate, t_dir = ident.detection_identification_rate(scores, true, 0.01)
    assert t == t_dir and fnir == pytest.approx(1 - rate)
    assert ident.fpir_fnir(scores, true, t) == pytest.approx((2 / 200, fnir))
    assert ident.fnir_at_fpir(scores, true, 0.001) == (None, None)  # 200 < 1000
    assert ident.unresolvable_note(0.001, 200).startswith("FPIR 0.1% is below")
    assert ident.unresolvable_note(0.01, 200) is None


def _flatten(Z, mask=None):
    """Held-out (score, probe) pairs of a probe x client matrix (mask: scored pairs)."""
    mask = np.ones(Z.shape, bool) if mask is None else mask
    probes = np.broadcast_to(np.arange(Z.shape[0])[:, None], Z.shape)
    return Z[mask], probes[mask]


def test_complete_searches_give_the_empirical_max_threshold():
    """Every probe scored by all N clients: FPIR_N is the fraction of searches whose max
    passes, so at 1 % of 200 searches exactly 2 pass."""
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(200, 12))
    curve = openset.search_curve(*_flatten(Z), n_clients=12)
    assert curve["search_size"] == 12 and curve["searches"] == 200
    t, resolved = openset.threshold_at_fpir(curve, 0.01)
    best = np.sort(Z.max(axis=1))[::-1]
    assert resolved and best[1] >= t > best[2]
    fpir, (low, high) = openset.fpir_at(curve, t)
    assert fpir == pytest.approx(0.01) and low < 0.01 < high
    assert openset.threshold_at_fpir(curve, 0.025)[0] < t  # 5 pass


@pytest.mark.parametrize("correlated", [False, True])
def test_threshold_keeps_its_fpir_on_new_strangers(correlated):
    """Held-out searches of 20,000 strangers of 25 clients; FPIR of the derived threshold
    computed exactly on the score model. With a stranger effect (a face that looks like
    every client) the per-client tail alone would not know the searches' dependence."""
    rng = np.random.default_rng(2)
    n, N, f = 20000, 25, 0.01
    a = rng.normal(scale=0.8, size=(n, 1)) if correlated else 0.0
    Z = a + rng.normal(size=(n, N))
    t, _ = openset.threshold_at_fpir(openset.search_curve(*_flatten(Z), N), f)
    if correlated:  # P(max > t) = E_a[1 - Phi(t - a)^N], a ~ N(0, 0.8^2)
        x, w = np.polynomial.hermite_e.hermegauss(80)
        true_fpir = float(np.sum(w * (1 - norm.cdf(t - 0.8 * x) ** N)) / np.sqrt(2 * np.pi))
    else:
        true_fpir = 1 - norm.cdf(t) ** N
    assert 0.008 < true_fpir < 0.0125


def test_partial_searches_extrapolate_to_every_client():
    """Each probe scored by about a fifth of 100 clients (a capped compress): the
    threshold is for the max over all 100 (independent scores: the extrapolation is
    exact)."""
    rng = np.random.default_rng(3)
    n, N, f = 40000, 100, 0.01
    Z = rng.normal(size=(n, N))
    mask = rng.random((n, N)) < 0.2
    curve = openset.search_curve(*_flatten(Z, mask), N)
    assert curve["search_size"] < 20 and curve["searches_left_out"] > 0
    t, resolved = openset.threshold_at_fpir(curve, f)
    assert resolved and 0.008 < 1 - norm.cdf(t) ** N < 0.0125
    # the threshold grows with N: a stranger gets more chances
    assert openset.threshold_at_fpir(curve, f, n_clients=10)[0] < t
    assert openset.threshold_at_fpir(curve, f, n_clients=1000)[0] > t


def test_larger_searches_are_subsampled_exactly():
    """A probe scored by 5 clients counts, for 3-client searches, as the max of a random
    3-subset: the mean over all 10 subsets."""
    z = np.array([3.0, 1.0, 0.5, 0.2, -1.0, 2.0, 0.0, -0.5])
    probes = np.array([0, 0, 0, 0, 0, 1, 1, 1])  # probe 1 has exactly 3 scores
    values, fpir_n, n, searches, left_out, _, _ = openset._steps(z, probes, 3, 0.1)
    assert (n, searches, left_out) == (3, 2, 0) and values.tolist() == sorted(z)[::-1]
    for t, got in zip(values, fpir_n):
        p0 = np.mean([max(c) >= t for c in itertools.combinations(z[:5], 3)])
        assert got == pytest.approx((p0 + float(z[5:].max() >= t)) / 2)
    # the stored curve is an upper bound of the hazard between its points
    curve = openset.search_curve(z, probes, 3, search_size=3)
    exact = openset._hazard(fpir_n, 3)
    for t, h in zip(values, exact):
        assert openset._hazard_at(curve, t) >= h - 1e-12


def test_step_deltas_are_the_hypergeometric_differences():
    """Each score's step of FPIR_n (read from one table per search size) is P(top rank)
    - P(top rank - 1) of its probe; a probe's steps add up to 1."""
    rng = np.random.default_rng(6)
    n_x = rng.integers(3, 60, 2000)
    rank = 1 + (rng.random(2000) * n_x).astype(np.int32)
    want = openset._p_any(rank, n_x, 3) - openset._p_any(rank - 1, n_x, 3)
    np.testing.assert_array_equal(openset._deltas(rank, n_x, 3), want)
    full = np.arange(1, 38)
    assert openset._deltas(full, np.full(37, 37), 5).sum() == pytest.approx(1.0)
    # the 4 lowest of 37 scores are the max of no 5-subset
    assert openset._deltas(full, np.full(37, 37), 5)[-4:].tolist() == [0.0] * 4


def test_unresolvable_target_sits_above_every_held_out_score():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(50, 8))
    curve = openset.search_curve(*_flatten(Z), 8)
    t, resolved = openset.threshold_at_fpir(curve, 0.01)  # 1 of 50 searches is 2 %
    assert not resolved and t > Z.max()
    fpir, (low, high) = openset.fpir_at(curve, t)
    assert fpir == 0.0 and low == 0.0 and 0.05 < high < 0.1  # Clopper-Pearson 0 of 50
    assert curve["resolution"] == pytest.approx(0.02)


def test_searches_that_all_tie_at_their_top_score_pass_below_it():
    """Every search of one client scoring 0 (one training score per client centred on
    itself: compress --max-impostors 1): FPIR_1 = 1 at once, hazard +inf below the tied
    score, 0 above it. Before: np.geomspace from +inf, a RuntimeWarning (NaN levels)."""
    import warnings

    scores, probes = np.zeros(19), np.arange(19)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve = openset.search_curve(scores, probes, 20, clients=np.arange(19))
        t, resolved = openset.threshold_at_fpir(curve, 0.01)
        fpir, (low, high) = openset.fpir_at(curve, t)
        below = openset.fpir_at(curve, -0.1)
    assert curve["thresholds"] == [-0.5, 1e-09] and curve["hazard"] == [np.inf, 0.0]
    assert curve["resolution"] == 1.0 and "tail" not in curve  # no spread to fit a tail
    assert (t, resolved) == (1e-09, False)  # above every search, not resolved
    # 0 of 19 one-client searches pass: Clopper-Pearson 97.5 % bound 1 - 0.025 ** (1/19)
    # per client, for 20 clients
    assert fpir == 0.0 and low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (20 / 19), rel=1e-9)
    # at or below the tied score every search passes (19 of 19; its lower bound per
    # client 0.025 ** (1/19))
    assert below[0] == 1.0 and below[1][1] == 1.0
    assert below[1][0] == pytest.approx(1 - (1 - 0.025 ** (1 / 19)) ** 20, rel=1e-9)


def test_merged_blocks_are_the_gallery_of_both():
    """An update: the kept clients' curve and the new clients' held-out searches make the
    curve of all N1 + N2 clients."""
    rng = np.random.default_rng(5)
    n, f = 30000, 0.01
    old = openset.search_curve(*_flatten(rng.normal(size=(n, 20))), 20)
    new = openset.search_curve(*_flatten(rng.normal(size=(n, 5))), 5)
    both = openset.merge_curves([old, new])
    assert both["clients"] == 25
    t, resolved = openset.threshold_at_fpir(both, f)
    assert resolved and 0.008 < 1 - norm.cdf(t) ** 25 < 0.0125
    assert t > openset.threshold_at_fpir(old, f)[0]
    fpir, (low, high) = openset.fpir_at(both, t)
    assert low <= fpir <= f <= high


def test_search_curve_refuses_bad_input():
    with pytest.raises(InputError, match="one probe per score"):
        openset.search_curve(np.zeros(3), np.zeros(2), 2)
    with pytest.raises(InputError, match="no held-out"):
        openset.search_curve(np.array([np.nan]), np.array([0]), 2)
    curve = openset.search_curve(np.arange(10.0), np.arange(10), 1)
    with pytest.raises(InputError, match="FPIR"):
        openset.threshold_at_fpir(curve, 0.0)


def test_subject_out_normalisation_uses_every_other_subject():
    rng = np.random.default_rng(6)
    s = rng.normal(size=30)
    subjects = np.repeat(["a", "b", "c", "d", "e"], 6)
    z = openset.subject_out_normalised(s, subjects)
    for name in "abcde":
        mine, rest = subjects == name, s[subjects != name]
        assert z[mine] == pytest.approx((s[mine] - rest.mean()) / rest.std(ddof=1))
    # two subjects: no one left to normalise with; in sample
    z2 = openset.subject_out_normalised(s[:12], subjects[:12])
    assert z2 == pytest.approx((s[:12] - s[:12].mean()) / s[:12].std(ddof=1))
    with pytest.raises(InputError, match="one subject per score"):
        openset.subject_out_normalised(s, subjects[:5])


def test_centred_scores_share_one_scale():
    s = np.array([1.0, 2.0, 3.0, 5.0, 8.0, 13.0])
    subjects = np.array(["a", "a", "b", "b", "c", "c"])
    z = openset.subject_out_normalised(s, subjects, scale=2.0)
    for name in "abc":
        mine = subjects == name
        assert z[mine] == pytest.approx((s[mine] - s[~mine].mean()) / 2.0)
    assert openset.pooled_scale([1.0, 7.0]) == pytest.approx(5.0)  # sqrt((1 + 49) / 2)
    with pytest.raises(InputError, match="spread"):
        openset.pooled_scale([np.nan])


# ----------------------------------------------------- beyond the held-out searches: the tail

WIDTHS = np.linspace(0.7, 1.4, 20)  # 20 clients' impostor spreads: one wide, one narrow


def _held_out(rng, pair_effect):
    """A 20-client gallery's held-out searches: each client is a person with 5 images,
    every image scored by the 19 other clients (as compress's threshold CV gives them).
    Client c's score of an image: WIDTHS[c] * (a + e), a a (person, client) effect shared
    by the person's 5 images (``pair_effect``: Laplace(0.7), e ~ N(0, 0.5^2); else a = 0,
    e ~ Laplace(1), independent). Returns scores, probes, clients, people."""
    P, img, N = 20, 5, WIDTHS.size
    a = rng.laplace(scale=0.7, size=(P, N)) if pair_effect else np.zeros((P, N))
    e = rng.normal(scale=0.5, size=(P, img, N)) if pair_effect else rng.laplace(size=(P, img, N))
    x = WIDTHS * (a[:, None, :] + e)
    person, image, client = np.meshgrid(np.arange(P), np.arange(img), np.arange(N),
                                        indexing="ij")
    mine = person != client
    return x[mine], (person * img + image)[mine], client[mine], person[mine]


def _true_fpir(t, pair_effect, seed):
    """FPIR of a 20-client search at ``t``: exact for independent Laplace scores
    (1 - prod_c (1 - exp(-t / w_c) / 2)), else over 40,000 new strangers' images."""
    if not pair_effect:
        return float(1 - np.prod(1 - 0.5 * np.exp(-t / WIDTHS)))
    rng = np.random.default_rng(seed)
    a = rng.laplace(scale=0.7, size=(40000, 1, WIDTHS.size))
    e = rng.normal(scale=0.5, size=(40000, 5, WIDTHS.size))
    return float(np.mean((WIDTHS * (a + e)).max(axis=2) >= t))


@pytest.mark.parametrize("pair_effect", [False, True])
def test_unresolved_target_is_read_from_the_tail_beyond_the_searches(pair_effect):
    """100 held-out searches (20 people) cannot resolve 1 % for 20 clients. The tail fitted
    to the scores (each on its client's spread) sets T above every held-out score, flagged
    extrapolated; over 20 seeded galleries its FPIR on new strangers averages the target
    for independent scores, and stays below "just above every held-out search" when one
    person's images share a look-alike effect (that threshold's FPIR is then about one in
    the number of people, not of searches)."""
    f, got, bare, inside = 0.01, [], [], 0
    for seed in range(20):
        z, probes, clients, people = _held_out(np.random.default_rng(seed), pair_effect)
        curve = openset.search_curve(z, probes, 20, clients=clients, people=people)
        t, resolved = openset.threshold_at_fpir(curve, f)
        assert not resolved and openset.is_extrapolated(curve, t)
        assert t >= curve["extrapolated_above"] > z.max()
        expected, (low, high) = openset.fpir_at(curve, t)
        assert expected <= f and low <= expected <= high
        got.append(_true_fpir(t, pair_effect, 100 + seed))
        inside += low <= got[-1] <= high
        plain = openset.search_curve(z, probes, 20)  # no tail: just above the top
        assert openset.threshold_at_fpir(plain, f) == (plain["thresholds"][-1], False)
        bare.append(_true_fpir(plain["thresholds"][-1], pair_effect, 100 + seed))
    got, bare = np.mean(got), np.mean(bare)
    if pair_effect:
        assert 0.013 < got < 0.019 and 0.018 < bare < 0.023 and inside >= 14
    else:
        assert 0.008 < got < 0.0105 and inside >= 18


def test_tail_fit_counts_people_and_keeps_each_clients_spread():
    rng = np.random.default_rng(7)
    z, probes, clients, people = _held_out(rng, True)
    fit = openset.tail_fit(z, clients, people)
    assert fit["exceedances"] == 38 and fit["rate"] == pytest.approx(38 / 1900)  # top 2 %
    assert fit["pairs"] < fit["exceedances"]  # one look-alike person's images cluster
    lone = openset.tail_fit(z, clients)  # every score counted as independent
    assert lone["pairs"] == 38 and lone["beta"] == fit["beta"]
    assert np.ptp(lone["beta_ci"]) < np.ptp(fit["beta_ci"])
    assert fit["beta_ci"][0] < fit["beta"] < fit["beta_ci"][1]
    # the spreads are each client's standard deviation (clients in their sorted order),
    # so a wide client keeps its wider tail; any labels do
    assert fit["widths"] == pytest.approx([np.std(z[clients == c], ddof=1) for c in range(20)])
    named = openset.tail_fit(z, np.char.add("c", clients.astype(str)), people)
    order = sorted(range(20), key=lambda c: f"c{c}")
    assert named["widths"] == pytest.approx(fit["widths"][order])
    assert {k: v for k, v in named.items() if k != "widths"} == \
        {k: v for k, v in fit.items() if k != "widths"}
    curve = openset.search_curve(z, probes, 20, clients=clients, people=people)
    hz, th = np.asarray(curve["hazard"]), np.asarray(curve["thresholds"])
    assert np.all(np.diff(th) > 0) and np.all(np.diff(hz) <= 0) and hz.min() > 0
    # the curve reaches FPIR_N = 1e-6; below its end the last point is returned
    assert openset.fpir_at(curve, th[-1])[0] <= 2e-6
    t, resolved = openset.threshold_at_fpir(curve, 1e-9)
    assert t == th[-1] and not resolved
    assert openset.tail_fit(np.zeros(2), np.zeros(2)) is None
    with pytest.raises(InputError, match="one client per score"):
        openset.tail_fit(np.zeros(3), np.zeros(2))


def test_merged_tails_stay_extrapolated():
    rng = np.random.default_rng(8)
    old = openset.search_curve(*_held_out(rng, False)[:2], 20,
                               clients=_held_out(np.random.default_rng(8), False)[2])
    z, probes, clients, _ = _held_out(np.random.default_rng(9), False)
    new = openset.search_curve(z[clients < 5], probes[clients < 5], 5,
                               clients=clients[clients < 5])
    both = openset.merge_curves([old, new])
    assert both["extrapolated_above"] == min(old["extrapolated_above"],
                                             new["extrapolated_above"])
    t, resolved = openset.threshold_at_fpir(both, 0.01)
    assert openset.is_extrapolated(both, t) and not resolved


def _clustered_searches():
    """50 people x 10 probes, each probe scored by 5 clients; every probe of 2 people
    scores high on one client: 20 of 500 searches pass a threshold between, all of
    them from 2 of the 50 people."""
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(500, 5))
    person = np.repeat(np.arange(50), 10)
    Z[person < 2, 0] += 20.0
    probes = np.repeat(np.arange(500), 5)
    return Z.ravel(), probes, np.repeat(person, 5)


def test_the_fpir_interval_takes_the_probe_person_as_the_trial():
    from ssgallery.biometrics.calibration import clopper_pearson

    z, probes, people = _clustered_searches()
    assert np.sort(z)[-20] > 15 and np.sort(z)[-21] < 5
    plain = openset.search_curve(z, probes, 5, points=2000)
    clustered = openset.search_curve(z, probes, 5, people=people, points=2000)
    assert clustered["interval_people"] == 50 and "interval_people" not in plain
    # the stored point that accepts exactly the 20 high scores
    t = next(t for t in clustered["thresholds"] if 5 < t < np.sort(z)[-20])
    fpir, ci = openset.fpir_at(clustered, t)
    assert fpir == pytest.approx(20 / 500)
    assert ci == pytest.approx(clopper_pearson(2, 50), rel=1e-6)  # 2 of 50 people
    assert openset.fpir_at(plain, t)[1] == pytest.approx(clopper_pearson(20, 500),
                                                         rel=1e-6)  # what it was
    # one probe per person: the interval counting searches, unchanged
    alone = openset.search_curve(z, probes, 5, people=probes, points=2000)
    assert alone["hazard_low"] == pytest.approx(plain["hazard_low"], rel=1e-12)
    assert alone["hazard_high"] == pytest.approx(plain["hazard_high"], rel=1e-12)


def _subset_fpir(scores, n, threshold):
    """FPIR of n-client searches by brute force: every n-subset of every probe's clients
    searched as ``roc`` counts a search (`identification.search_best`: a tie passes no
    threshold), each probe weighted equally."""
    per_probe = []
    for row in scores:
        subsets = [list(c) for c in itertools.combinations(range(row.size), n)]
        per_probe.append(np.mean(ident.search_best(row[subsets]) >= threshold))
    return float(np.mean(per_probe))


@pytest.mark.parametrize(("clients", "search_size"), [(4, 4), (5, 3)])
def test_the_stored_curve_counts_a_tied_search_as_identify_and_roc_do(clients, search_size):
    """A held-out search whose top score two clients share identifies nobody in
    ``identify`` and ``roc`` (`identification.tied_at_top`, d039669), but the stored
    curve counted it as a false positive, so FPIR_n read high (main, 4 clients, at
    T = 1 + 5e-13: 0.483 where roc counts 0.233 of the same searches). Now the curve's FPIR_n at every stored threshold is roc's, also for probes scored by
    more clients than a search holds (each of their n-subsets a search)."""
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(60, clients)).round(1)  # ties below the top too
    scores[::2, 1] = scores[::2].max(axis=1)  # every second search tied at its top
    scores[::4, 2] = scores[::4, 1] + 1e-12  # a near-tie, within identification's tolerance
    probes = np.repeat(np.arange(60), clients)
    curve = openset.search_curve(scores.ravel(), probes, search_size,
                                 search_size=search_size)
    assert curve["searches"] == 60
    assert len(curve["thresholds"]) > 10
    for t in curve["thresholds"]:  # up to FPIR_n 1/2 (openset.CURVE_MAX_FPIR)
        assert openset.fpir_at(curve, t)[0] == pytest.approx(
            _subset_fpir(scores, search_size, t), abs=1e-12), t
