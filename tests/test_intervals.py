"""Intervals of rates whose trials come in clusters (ssgallery.biometrics.intervals) and
where compress records them: the FAR by impostor person, the FRR by client."""

import numpy as np
import pytest
from scipy.stats import beta

from ssgallery.app.thresholds import clustered_sums, frr_record, merged_record
from ssgallery.biometrics.calibration import (
    calibrate_thresholds,
    clopper_pearson,
    person_sums,
)
from ssgallery.biometrics.intervals import (
    beta_interval,
    cluster_sums,
    clustered_interval,
    design_effect,
    merged_sums,
)


def _exact(k, n, level=0.95):
    """The textbook Clopper-Pearson interval, for comparison."""
    a = (1 - level) / 2
    return (0.0 if k == 0 else beta.ppf(a, k, n - k + 1),
            1.0 if k == n else beta.ppf(1 - a, k + 1, n - k))


@pytest.mark.parametrize("k, n", [(0, 10), (10, 10), (38, 3800), (1, 1), (5, 7), (93, 200)])
def test_clopper_pearson_is_the_exact_interval(k, n):
    assert clopper_pearson(k, n) == pytest.approx(_exact(k, n), abs=1e-15)
    assert clopper_pearson(0, 0) == (0.0, 1.0)
    low, high = beta_interval([k, k], [n, n])  # elementwise, fractional counts allowed
    assert low.tolist() == pytest.approx([_exact(k, n)[0]] * 2)
    assert high.tolist() == pytest.approx([_exact(k, n)[1]] * 2)


def test_one_trial_per_cluster_is_the_plain_interval():
    rng = np.random.default_rng(0)
    k = (rng.random(4000) < 0.01).astype(float)
    low, high, d = clustered_interval(k, np.ones(4000))
    assert d == 1.0
    assert (low, high) == pytest.approx(clopper_pearson(k.sum(), 4000), rel=1e-12)


def test_all_or_none_clusters_are_the_interval_of_the_clusters():
    # 200 people, 20 claims each; 4 people have every claim accepted, the rest none:
    # 80 of 4000 claims, but 4 of 200 people
    k, n = np.zeros(200), np.full(200, 20.0)
    k[:4] = 20
    low, high, d = clustered_interval(k, n)
    assert d == pytest.approx(20.0)
    assert (low, high) == pytest.approx(clopper_pearson(4, 200), rel=1e-9)
    plain = clopper_pearson(80, 4000)
    assert high > 2 * plain[1]  # the plain one is far too narrow


def test_independent_claims_in_clusters_are_about_the_plain_interval():
    # every claim an independent draw at 1 %, grouped 20 to a person: nothing to correct
    rng = np.random.default_rng(1)
    k = rng.binomial(20, 0.01, size=400).astype(float)
    low, high, d = clustered_interval(k, np.full(400, 20.0))
    plain = clopper_pearson(k.sum(), 8000)
    assert 1.0 <= d < 1.2
    assert low == pytest.approx(plain[0], rel=0.1) and high == pytest.approx(plain[1], rel=0.1)


def test_no_accept_takes_the_clusters_as_the_trials():
    # the spread between people cannot be seen: the widest, people as the trials
    low, high, d = clustered_interval(np.zeros(19), np.full(19, 200.0))
    assert d == pytest.approx(200.0) and low == 0.0
    assert high == pytest.approx(clopper_pearson(0, 19)[1])
    assert design_effect(cluster_sums([], [])) == 1.0


def test_one_cluster_takes_the_cluster_as_the_trial():
    # one client's (or one impostor person's) claims: the spread between clusters cannot
    # be seen, as with no accept, so the cluster is the trial, not every claim in it
    low, high, d = clustered_interval([30.0], [100.0])
    assert d == pytest.approx(100.0)
    assert (low, high) == pytest.approx(tuple(map(float, beta_interval(0.3, 1.0))))
    plain = clopper_pearson(30, 100)
    assert low < plain[0] / 10 and high > 2 * plain[1]
    # a block of one cluster merged with others is measured as usual
    assert design_effect(merged_sums(cluster_sums([30.0], [100.0]),
                                     cluster_sums([5.0], [100.0]))) > 1.0


def test_the_clustered_interval_covers_clustered_rates_where_the_plain_one_does_not():
    # 20 impostor people x 200 claims; each person's own accept rate drawn around 1 %
    # (beta, mean 1 %): 500 galleries' worth of counts, fixed seed
    rng = np.random.default_rng(2)
    truth, covered = 0.01, {"plain": 0, "people": 0}
    for _ in range(500):
        p = rng.beta(0.5, 0.5 * (1 - truth) / truth, size=20)
        k = rng.binomial(200, p).astype(float)
        lo, hi = clopper_pearson(k.sum(), 4000)
        covered["plain"] += lo <= truth <= hi
        lo, hi, _ = clustered_interval(k, np.full(20, 200.0))
        covered["people"] += lo <= truth <= hi
    assert covered["plain"] < 0.75 * 500  # nominal 95 %: 328 of 500 (seed 2)
    assert covered["people"] > 0.9 * 500  # 460 of 500


def test_blocks_of_disjoint_clusters_add_up():
    rng = np.random.default_rng(3)
    k, n = rng.integers(0, 5, 30).astype(float), rng.integers(5, 10, 30).astype(float)
    whole = cluster_sums(k, n)
    assert merged_sums(cluster_sums(k[:10], n[:10]), cluster_sums(k[10:], n[10:])) == \
        pytest.approx(whole)
    assert merged_record([cluster_sums(k[:10], n[:10]), cluster_sums(k[10:], n[10:])]) == \
        merged_record([whole])
    assert merged_record([whole, None]) is None  # a block without a record: unknown


def test_person_sums_cluster_one_persons_scores_across_clients():
    hits = [np.array([True, True, False]), np.array([True, False, False])]
    people = [np.array(["p1", "p1", "p2"]), np.array(["p1", "p2", "p3"])]
    s = person_sums(hits, people)
    # p1: 3 of 3, p2: 0 of 2, p3: 0 of 1
    assert s == cluster_sums([3, 0, 0], [3, 2, 1])
    # no people known: each score its own (the plain interval)
    assert person_sums(hits, [None, None]) == cluster_sums([1, 1, 0, 1, 0, 0],
                                                           [1, 1, 1, 1, 1, 1])


def test_person_sums_refuse_the_people_of_some_clients_only():
    """The people of one client but not the other: the unknown client's scores each
    counted as a person of their own (main: 6 people of 6 scores where 3 people were
    seen), an interval too narrow named by impostor person. Now a ValueError, and
    calibrate_thresholds records no interval by person for such a call (as for one
    without people), the scores' interval counted as independent."""
    hits = [np.array([True, True, False]), np.array([True, False, False])]
    people = [None, np.array(["p1", "p2", "p3"])]
    with pytest.raises(ValueError, match="impostor people given for 1 of 2 clients: give "
                                         "every client's people, or none"):
        person_sums(hits, people)
    rng = np.random.default_rng(4)
    who = np.repeat([f"p{i:02d}" for i in range(30)], 4)
    scores = [rng.normal(0, 1, 120) for _ in range(4)]
    norms = [{"kind": "znorm", "mean": float(s.mean()), "std": float(s.std())}
             for s in scores]
    _, info = calibrate_thresholds(scores, norms, 0.03, people=[None] + [who] * 3)
    assert info["far_by_person"] is None and info["expected_far_ci"] is not None
    assert calibrate_thresholds(scores, norms, 0.03, people=[who] * 4)[1]["far_by_person"]


def test_calibration_records_the_far_interval_by_impostor_person():
    # 10 clients, 30 impostor people x 4 scores each; one person scores high against
    # every client: its 40 scores are what the pool accepts
    rng = np.random.default_rng(4)
    people = np.repeat([f"p{i:02d}" for i in range(30)], 4)
    scores = [rng.normal(0, 1, 120) + 6.0 * (people == "p07") for _ in range(10)]
    norms = [{"kind": "znorm", "mean": float(s.mean()), "std": float(s.std())}
             for s in scores]
    _, info = calibrate_thresholds(scores, norms, 0.03, people=[people] * 10)
    rec = info["far_by_person"]
    assert rec["sums"]["clusters"] == 30 and rec["sums"]["n"] == 1200
    assert rec["sums"]["k"] == info["accepted"]
    assert rec["design_effect"] > 10
    low, high = rec["ci"]
    plain = info["expected_far_ci"]
    assert low < plain[0] and high > 2 * plain[1]
    assert clustered_sums(rec) == rec["sums"]
    # people unknown: no interval by person is claimed (not the scores' as the people's)
    assert calibrate_thresholds(scores, norms, 0.03)[1]["far_by_person"] is None
    # per client, the same accepts: each client's sums by its own impostor people
    mine = info["by_client"]
    assert len(mine) == 10 and all(m["clusters"] == 30 and m["n"] == 120 for m in mine)
    assert sum(m["k"] for m in mine) == info["accepted"]


def test_frr_record_has_the_interval_by_client_and_merges_an_update():
    per = {"c1": (5, 5), "c2": (0, 5), "c3": (0, 5), "c4": (1, 5)}
    rec = frr_record(per)
    assert rec["frr_by_client"]["sums"] == cluster_sums([5, 0, 0, 1], [5, 5, 5, 5])
    assert rec["frr_by_client"]["ci"] == list(clustered_interval([5, 0, 0, 1], [5] * 4)[:2])
    # an update adds its clients to the copied ones' record ...
    both = frr_record({"c5": (2, 5)}, rec)
    assert both["frr_by_client"]["sums"] == cluster_sums([5, 0, 0, 1, 2], [5] * 5)
    # ... and a copied record without it (written before it) leaves it unknown
    old = {k: v for k, v in rec.items() if k != "frr_by_client"}
    assert frr_record({"c5": (2, 5)}, old)["frr_by_client"] is None


@pytest.mark.parametrize("value", [None, "x", {"sums": None}, {"sums": {"clusters": 2}},
                                   {"sums": {"clusters": 2.5, "k": 1, "n": 2, "kk": 1,
                                             "kn": 1, "nn": 2}},
                                   {"sums": {"clusters": 2, "k": 3, "n": 2, "kk": 1,
                                             "kn": 1, "nn": 2}},
                                   {"sums": {"clusters": 2, "k": -1, "n": 2, "kk": 1,
                                             "kn": 1, "nn": 2}},
                                   {"sums": {"clusters": 2, "k": 1, "n": float("nan"),
                                             "kk": 1, "kn": 1, "nn": 2}},
                                   {"sums": {"clusters": True, "k": 1, "n": 2, "kk": 1,
                                             "kn": 1, "nn": 2}}])
def test_a_malformed_recorded_interval_reads_as_unknown(value):
    assert clustered_sums(value) is None


@pytest.mark.parametrize(("field", "edit", "problem"), [
    ("far_by_person", {"kk": 1e300}, "far_by_person sums: kk 1e+300 is above kn ("),
    ("far_by_person", {"k": float("nan")},
     "far_by_person sums: k must be a finite number >= 0, got float nan"),
    ("far_by_person", {"clusters": 0}, "far_by_person sums: no cluster, but counts above 0"),
    ("frr_by_client", "x", "frr_by_client sums: expected an object, got str 'x'")],
    ids=["kk-1e300", "k-nan", "no-cluster", "frr-text"])
def test_recorded_sums_no_counts_give_are_refused_on_read(sample_gallery_3, tmp_path, field,
                                                          edit, problem):
    """A gallery's recorded interval sums were checked only for k <= n: a hand-edited kk
    of 1e300 printed 'design effect 2658...(300 digits).00' and a 0-100 % interval,
    exit 0, and NaN or a string read as no interval (main: exit 0). Now the sums are held
    to what counts can give (formats.interval_sums.sums_problem) where the record is
    read (info, compress --update; verify and identify do not read it): one line naming
    the file, exit 2."""
    import json

    import h5py
    from helpers import copied, invoked, rehash_gallery

    from ssgallery.formats.interval_sums import SUM_KEYS

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        assert set(cal[field]["sums"]) == set(SUM_KEYS)  # what compress wrote
        cal[field] = edit if isinstance(edit, str) else \
            dict(cal[field], sums=dict(cal[field]["sums"], **edit))
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(gallery)
    for command in (["info", "--gallery", gallery], ["info", "--gallery", gallery, "--json"]):
        out = invoked(command)
        assert out["exit_code"] == 2, out["output"]
        assert out["stderr"].startswith(f"ssgallery: error: {gallery}: corrupt gallery "
                                        f"header: calibration: {problem}"), out["stderr"]
        assert out["stderr"].count("\n") == 1


def test_sums_problem_accepts_every_sum_of_counts():
    """Every sum of per-cluster counts (0 <= k_i <= n_i, integer or fractional) passes
    sums_problem's bounds; sums that break one bound by a little are refused."""
    from ssgallery.formats.interval_sums import sums_problem

    rng = np.random.default_rng(7)
    for _ in range(3000):
        n = rng.integers(1, 40, rng.integers(0, 25)).astype(float)
        n = n if rng.random() < 0.7 else n * rng.random(n.size) + 1e-3
        k = np.minimum(n, np.floor(rng.random(n.size) * (n + 1)))
        k = {0: k, 1: n, 2: 0 * n}.get(int(rng.integers(0, 5)), k)  # all-or-none too
        assert sums_problem(cluster_sums(k, n)) is None, (k, n)
    s = cluster_sums([3, 0, 1], [3, 2, 2])  # k 4 n 7 kk 10 kn 11 nn 17
    assert sums_problem(dict(s, kk=11.5)) == "kk 11.5 is above kn (11)"
    assert sums_problem(dict(s, nn=50.0)) == "nn 50 is above n² (49)"
    assert sums_problem(dict(s, kk=5.0)) == "kk 5 is below k² / clusters (5.333)"
    assert sums_problem(dict(s, clusters=0)) == "no cluster, but counts above 0"
    assert sums_problem(dict(s, clusters=2.0)) == \
        "clusters must be a whole number, and n below 2**53"
    assert sums_problem(dict(s, k=True)).startswith("k must be a finite number >= 0")
