"""The paper's protocol: splits without leakage, reproducible runs, evaluation."""

import numpy as np
import pytest
from helpers import RecordProgress, synthetic_images

from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.protocol import (
    ProtocolOptions,
    make_splits,
    method_specs,
    run_protocol,
)
from ssgallery.errors import InputError


def _labels(n_subjects=10, per=8):
    return np.repeat([f"p{i}" for i in range(n_subjects)], per)


def test_splits_have_no_leakage():
    labels = _labels(12, 9)
    splits = make_splits(labels, n_enrolled=6, n_train=4, repetitions=4, seed=3)
    assert len(splits) == 4
    for sp in splits:
        assert len(sp.enrolled) == 6
        assert set(sp.enrolled).isdisjoint(sp.impostor_subjects)
        assert sorted(sp.enrolled + sp.impostor_subjects) == sorted(set(labels))
        claims = np.concatenate([sp.genuine[c] for c in sp.enrolled] + [sp.impostors])
        train = sp.train_indices()
        assert np.intersect1d(train, claims).size == 0  # no training image is a claim
        assert set(labels[sp.impostors]) == set(sp.impostor_subjects)  # never enrolled
        for c in sp.enrolled:
            assert len(sp.train[c]) == 4 and len(sp.genuine[c]) == 5
            assert set(labels[sp.train[c]]) == {c} and set(labels[sp.genuine[c]]) == {c}
            assert np.union1d(sp.train[c], sp.genuine[c]).size == 9
        assert sp.impostors.size == 6 * 9


def test_splits_differ_and_are_seeded():
    labels = _labels(10, 8)
    a = make_splits(labels, repetitions=3, seed=0)
    b = make_splits(labels, repetitions=3, seed=0)
    c = make_splits(labels, repetitions=3, seed=1)
    assert len(a[0].enrolled) == 5  # default: half of the subjects
    for x, y in zip(a, b):
        assert x.enrolled == y.enrolled
        assert all(np.array_equal(x.train[k], y.train[k]) for k in x.enrolled)
    assert a[0].enrolled != a[1].enrolled or any(
        not np.array_equal(a[0].train[k], a[1].train[k]) for k in a[0].enrolled)
    assert [s.enrolled for s in a] != [s.enrolled for s in c]


def test_split_errors_are_one_line():
    with pytest.raises(InputError, match="at least 3 subjects"):
        make_splits(_labels(2, 8))
    with pytest.raises(InputError, match="enrolled clients must be between 2 and 9"):
        make_splits(_labels(10, 8), n_enrolled=10)
    with pytest.raises(InputError, match="only 0 subject"):
        make_splits(_labels(10, 5), n_train=5)
    # only the enrollable subjects are ever enrolled; the others are always impostors
    for sp in make_splits(_labels(10, 8), n_enrolled=3, repetitions=4, enrollable=["p1", "p2",
                                                                                      "p3", "p4"]):
        assert set(sp.enrolled) <= {"p1", "p2", "p3", "p4"}
        assert {"p0", "p5", "p9"} <= set(sp.impostor_subjects)
    # subjects with too few images can still be impostors
    labels = np.r_[_labels(4, 8), ["few"] * 2]
    for sp in make_splits(labels, n_enrolled=4, repetitions=2):
        assert "few" in sp.impostor_subjects


def test_method_specs():
    assert method_specs(["svm", "ssvm"], [1, 2]) == [("svm", None), ("ssvm", 1), ("ssvm", 2)]
    assert method_specs(["ssvm", ("nystrom", 2)], [1, 5]) == [("ssvm", 1), ("ssvm", 5),
                                                              ("nystrom", 2)]


def test_run_protocol_scores_every_claim_and_is_reproducible():
    images, labels = synthetic_images()
    ticks = RecordProgress()
    options = ProtocolOptions(methods=("svm", "ssvm"), m=[1, 2], n_enrolled=4, n_train=3,
                              repetitions=2, seed=5)
    tables = run_protocol(images, labels, options, progress=ticks)
    for r in (1, 2):  # per repetition: the matcher, then the clients
        assert ticks.steps(f"repetition {r}/2: training clients") == 4
        assert ticks.steps(f"repetition {r}/2: fitting the eigenface matcher") == 1

    assert [(t.method, t.m, t.repetition) for t in tables] == [
        ("svm", None, 0), ("svm", None, 1), ("ssvm", 1, 0), ("ssvm", 1, 1),
        ("ssvm", 2, 0), ("ssvm", 2, 1)]
    splits = make_splits(labels, 4, 3, 2, 5)
    for t in tables:
        sp = splits[t.repetition]
        genuine = t.claimed == t.real
        # 4 clients x 4 genuine claims; every non-enrolled image against every client
        assert genuine.sum() == 4 * 4
        assert (~genuine).sum() == 4 * sp.impostors.size
        assert set(t.real[~genuine]) == set(sp.impostor_subjects)
        assert set(t.claimed) == set(sp.enrolled)
        train = set(sp.train_indices().astype(str))
        assert train.isdisjoint(t.probe)  # no training image is ever scored as a claim
        # failures to acquire (NaN: random-block "faces" the matcher's face space does
        # not explain) are impostor probes here, the same ones for every method
        fta = np.isnan(t.score)
        assert np.all(np.isfinite(t.score[genuine]))
        first = next(u for u in tables if u.repetition == t.repetition)
        np.testing.assert_array_equal(fta, np.isnan(first.score))
        for info in t.clients.values():
            if t.m:  # ssvm: m matches per claim
                assert info["matches"] == t.m
            else:  # the full SVM: its support vectors, at least one per class
                assert info["matches"] >= 2
    again = run_protocol(images, labels, options)
    for a, b in zip(tables, again):
        np.testing.assert_allclose(a.score, b.score)
    summaries = evaluate(tables)
    assert [s["label"] for s in summaries] == ["svm", "ssvm m=1", "ssvm m=2"]
    for s in summaries:
        assert 0.0 <= s["eer_averaged_curve"] <= 0.5
        assert s["repetitions"] == 2 and s["clients"] == 8
        assert np.all(np.diff(s["frr"]) <= 1e-12)  # FRR non-increasing in FAR
    assert summaries[1]["matches_mean"] == 1.0 and summaries[2]["matches_mean"] == 2.0
    assert summaries[0]["matches_mean"] > 2.0


def test_run_protocol_fits_the_matcher_on_training_images_only():
    images, labels = synthetic_images(n_subjects=6, per=6)
    seen = []

    class Recording:
        def __init__(self):
            from ssgallery.matchers.eigenface import EigenfaceMatcher

            self.inner = EigenfaceMatcher()

        def fit(self, X):
            seen.append(X.copy())
            self.inner.fit(X)
            return self

        def transform(self, X):
            return self.inner.transform(X)

        def similarity(self):
            return self.inner.similarity()

    run_protocol(images, labels, ProtocolOptions(methods=("svm",), n_enrolled=3, n_train=2,
                                                 repetitions=2, seed=1),
                 matcher_factory=Recording)
    splits = make_splits(labels, 3, 2, 2, 1)
    for X, sp in zip(seen, splits):
        np.testing.assert_array_equal(X, images[sp.train_indices()])


def test_parallel_run_matches_sequential():
    images, labels = synthetic_images(n_subjects=6, per=6)
    kw = {"methods": ("svm", "ssvm"), "m": 2, "n_enrolled": 3, "n_train": 3, "repetitions": 1,
          "seed": 2}
    a = run_protocol(images, labels, ProtocolOptions(n_jobs=1, **kw))
    b = run_protocol(images, labels, ProtocolOptions(n_jobs=2, **kw))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.score, y.score, rtol=1e-6, atol=1e-8)


def test_evaluate_one_client_equals_the_pooled_eer():
    from ssgallery.biometrics import metrics
    from ssgallery.biometrics.scores import Scores

    rng = np.random.default_rng(4)
    pos, neg = rng.normal(1.0, 1.0, 7), rng.normal(0.0, 1.0, 153)
    t = Scores("x", None, 0, np.array(["c"] * 160), np.array(["c"] * 7 + ["z"] * 153),
               np.arange(160).astype(str), np.r_[pos, neg], {})
    s = evaluate([t])[0]
    for convention in ("averaged_curve", "client_mean", "global_threshold"):
        assert s[f"eer_{convention}"] == pytest.approx(metrics.eer(neg, pos), abs=1e-12)
    for convention in ("averaged_curve", "global_threshold"):
        assert s[f"frr_at_far_1pct_{convention}"] == pytest.approx(
            metrics.frr_at_far(neg, pos, 0.01))
        # 153 impostor claims cannot resolve FAR = 0.1 %: no number, a note
        assert s[f"frr_at_far_01pct_{convention}"] is None
        assert "below the resolution" in s["notes"][f"frr_at_far_01pct_{convention}"]


def test_every_registered_method_runs_through_the_protocol():
    from ssgallery.biometrics.methods import METHOD_NAMES

    images, labels = synthetic_images(n_subjects=5, per=6, seed=3)
    tables = run_protocol(images, labels, ProtocolOptions(methods=METHOD_NAMES, m=2,
                                                          n_enrolled=3, n_train=3,
                                                          repetitions=1, seed=0))
    summaries = evaluate(tables)
    assert [s["method"] for s in summaries] == list(METHOD_NAMES)
    for s in summaries:
        assert 0.0 <= s["eer_averaged_curve"] <= 1.0
        if s["method"] != "svm":
            assert s["matches_mean"] == 2.0


def test_between_distils_the_super_sparse_svms_only_and_a_variant_keeps_its_own():
    """``between`` (roc --between) fits ssvm and ssvm-paper as compress --between does;
    the SVM and the other methods score exactly as at 0."""
    images, labels = synthetic_images(6, 6, seed=5)
    variants = {"ssvm-own": {"method": "ssvm", "between": 0.0},
                "ssvm-half": {"method": "ssvm", "between": 0.5}}
    kw = {"methods": ("svm", "ssvm", "ssvm-paper", "svm-sel", "ssvm-own", "ssvm-half"),
          "m": 2, "n_enrolled": 3, "n_train": 3, "repetitions": 1, "seed": 2,
          "method_options": variants, "identification": True, "norm_folds": 2}
    assert ProtocolOptions().between == 0.5  # the default, as compress's
    plain = {t.method: t for t in run_protocol(images, labels,
                                               ProtocolOptions(between=0.0, **kw))}
    half = {t.method: t for t in run_protocol(images, labels, ProtocolOptions(**kw))}
    for name in ("svm", "svm-sel", "ssvm-own", "ssvm-half"):
        np.testing.assert_array_equal(plain[name].score, half[name].score)
        np.testing.assert_array_equal(plain[name].search.score, half[name].search.score)
    for name in ("ssvm", "ssvm-paper"):
        a, b = plain[name].score, half[name].score
        ok = np.isfinite(a)
        np.testing.assert_array_equal(ok, np.isfinite(b))  # the same failures to acquire
        assert np.abs(a[ok] - b[ok]).max() > 1e-3, name  # a different fit
    np.testing.assert_array_equal(half["ssvm"].score, plain["ssvm-half"].score)
    np.testing.assert_array_equal(half["ssvm"].search.score, plain["ssvm-half"].search.score)
    # the held-out Z-norm's fold models are distilled the same way
    assert half["ssvm"].search.clients == plain["ssvm-half"].search.clients
    assert half["ssvm"].search.clients != plain["ssvm"].search.clients


def test_between_applied_is_the_weight_a_listed_method_distils_at():
    """What roc records as ``config.between``: a (name, m) pair is a method as a name is
    (was 0 for ``("ssvm", 3)``, which `_make` distils at 0.5)."""
    from ssgallery.biometrics.protocol import between_applied

    own = {"ssvm-own": {"method": "ssvm", "between": 0.0}}
    assert between_applied(ProtocolOptions(methods=("svm", "ssvm"))) == 0.5
    assert between_applied(ProtocolOptions(methods=("svm", ("ssvm", 3)))) == 0.5
    assert between_applied(ProtocolOptions(methods=(("ssvm-paper", 1),), between=0.25)) == 0.25
    assert between_applied(ProtocolOptions(methods=("svm", "svm-red"))) == 0.0
    assert between_applied(ProtocolOptions(methods=("ssvm",), between=0.0)) == 0.0
    assert between_applied(ProtocolOptions(methods=(("ssvm-own", 2),),
                                           method_options=own)) == 0.0


def test_method_variants_share_the_teacher_and_carry_their_own_name():
    images, labels = synthetic_images(6, 6, seed=5)
    kw = {"m": 2, "n_enrolled": 3, "n_train": 3, "repetitions": 1, "seed": 2}
    variants = {"ssvm-strong": {"method": "ssvm", "lam": 10.0, "lam_scale": "none"}}
    mixed = run_protocol(images, labels, ProtocolOptions(methods=("ssvm", "ssvm-strong"),
                                                         method_options=variants, **kw))
    assert [(t.method, t.m) for t in mixed] == [("ssvm", 2), ("ssvm-strong", 2)]
    alone = run_protocol(images, labels, ProtocolOptions(
        methods=("ssvm",), method_options={"ssvm": {"lam": 10.0, "lam_scale": "none"}}, **kw))
    np.testing.assert_array_equal(mixed[1].score, alone[0].score)
    assert not np.allclose(mixed[0].score, mixed[1].score)  # the variant's options apply
