"""SimilaritySVM: balanced C selection, prior class weights, kernel expansion, black boxes."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.svm import SVC

from ssgallery.errors import InputError
from ssgallery.learn.similarity import (
    CallableSimilarity,
    RBFSimilarity,
    Similarity,
    median_gamma,
)
from ssgallery.learn.teacher import (
    SimilaritySVM,
    prior_class_weight,
    select_index,
    select_index_plain,
)


def imbalanced(seed=1, sep=2.0, n_neg=95, n_pos=5, d=5):
    """~5 % positives shifted by ``sep`` along the first axis (a one-vs-all client)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n_neg, d)), rng.normal(0, 1, (n_pos, d)) + sep * np.eye(d)[0]])
    y = np.r_[-np.ones(n_neg), np.ones(n_pos)]
    return X, y


@pytest.mark.parametrize("seed", [1, 2])
def test_c_selection_is_balanced_where_plain_accuracy_picks_smallest_c(seed):
    X, y = imbalanced(seed)
    svm = SimilaritySVM(gamma=0.1).fit(X, y)
    cs = svm.cv_scores_
    acc, ba = cs["accuracy"][0], cs["balanced_accuracy"][0]
    # plain accuracy: the reject-everyone classifier at C=0.1 scores 95/100 and wins
    assert select_index_plain(acc) == 0
    assert acc[0] == pytest.approx(0.95) and ba[0] == pytest.approx(0.5)
    # the balanced rule picks a C whose CV balanced accuracy is far above chance
    assert svm.C_ > 0.1
    k = list(cs["C"]).index(svm.C_)
    assert ba[k] == ba.max() and ba[k] > 0.75


def test_tie_rules():
    # primary ties -> secondary (AUC) decides
    assert select_index([0.8, 0.9, 0.9, 0.7], [0.99, 0.95, 0.90, 1.0]) == 1
    # primary and secondary tie -> the larger C (last index)
    assert select_index([0.8, 0.9, 0.9, 0.9], [0.99, 0.95, 0.95, 0.95]) == 3
    assert select_index([0.5, 0.5, 0.5]) == 2
    # what GridSearchCV does: the first of the tied
    assert select_index_plain([0.95, 0.95, 0.9]) == 0


def test_roc_auc_scoring_uses_auc_first():
    X, y = imbalanced(2)
    svm = SimilaritySVM(gamma=0.1, scoring="roc_auc").fit(X, y)
    auc = svm.cv_scores_["roc_auc"][0]
    assert auc[list(svm.cv_scores_["C"]).index(svm.C_)] == auc.max()


def test_class_weights_are_priors_of_the_other_class():
    X, y = imbalanced(1)
    assert prior_class_weight(y) == {-1.0: 0.05, 1.0: 0.95}
    svm = SimilaritySVM(gamma=0.1, C=10.0).fit(X, y)
    assert svm.class_weight_ == {-1.0: pytest.approx(0.05), 1.0: pytest.approx(0.95)}
    # the same SVM from scikit-learn with per-class C = C x other prior
    ref = SVC(kernel="rbf", gamma=0.1, C=10.0, class_weight={-1: 0.05, 1: 0.95}).fit(X, y)
    Xt = np.random.default_rng(5).normal(0, 1.5, (50, 5))
    np.testing.assert_allclose(svm.decision_function(Xt), ref.decision_function(Xt), atol=1e-6)
    assert svm.n_support_total_ == ref.support_vectors_.shape[0]


def test_decision_function_is_the_kernel_expansion():
    X, y = imbalanced(3, sep=2.5)
    svm = SimilaritySVM(gamma="median").fit(X, y)
    Xt = np.random.default_rng(7).normal(0, 1, (20, 5))
    g = svm.gamma_
    explicit = np.array([
        sum(a * np.exp(-g * np.sum((x - sv) ** 2))
            for a, sv in zip(svm.dual_coef_, svm.support_vectors_)) + svm.intercept_
        for x in Xt])
    np.testing.assert_allclose(svm.decision_function(Xt), explicit, rtol=1e-10, atol=1e-12)
    assert svm.support_vectors_.shape == (svm.n_support_total_, 5)
    assert svm.dual_coef_.shape == (svm.n_support_total_,)
    np.testing.assert_array_equal(svm.support_vectors_, X[svm.support_])
    # dual coefficients are alpha_i y_i: signs follow the labels, and sum to zero
    assert np.all(np.sign(svm.dual_coef_) == y[svm.support_])
    assert abs(svm.dual_coef_.sum()) < 1e-8
    assert isinstance(svm.similarity_, RBFSimilarity) and svm.similarity_.gamma == g
    np.testing.assert_array_equal(svm.predict(Xt), np.where(svm.decision_function(Xt) > 0, 1, -1))


def test_gamma_modes():
    X, y = imbalanced(1)
    assert SimilaritySVM(gamma="paper", C=1.0).fit(X, y).gamma_ == pytest.approx(1 / 5)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)[np.triu_indices(len(X), 1)]
    assert median_gamma(X) == pytest.approx(1 / np.median(D))
    assert SimilaritySVM(gamma="median", C=1.0).fit(X, y).gamma_ == pytest.approx(1 / np.median(D))
    assert SimilaritySVM(gamma=0.3, C=1.0).fit(X, y).cv_scores_ is None
    cvm = SimilaritySVM(gamma="cv").fit(X, y)
    assert cvm.cv_scores_["balanced_accuracy"].shape == (5, 5)
    assert cvm.gamma_ in cvm.cv_scores_["gamma"] and cvm.C_ in cvm.cv_scores_["C"]
    ba = cvm.cv_scores_["balanced_accuracy"]
    assert ba[list(cvm.cv_scores_["gamma"]).index(cvm.gamma_), list(cvm.cv_scores_["C"]).index(cvm.C_)] == ba.max()


def test_other_labels_and_errors():
    X, y = imbalanced(1)
    svm = SimilaritySVM(gamma=0.1, C=1.0).fit(X, (y > 0).astype(int))
    assert list(svm.classes_) == [0, 1] and set(svm.predict(X)) <= {0, 1}
    with pytest.raises(InputError, match="two classes"):
        SimilaritySVM().fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match="gamma"):
        SimilaritySVM(gamma="nope").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        svm.decision_function(X[:, :3])


class Skewed(Similarity):
    """Non-symmetric, non-PSD: a difference of RBFs plus an antisymmetric drift term."""

    def __call__(self, X, Z):
        X, Z = np.asarray(X, float), np.asarray(Z, float)
        D = ((X[:, None] - Z[None]) ** 2).sum(-1)
        return np.exp(-0.2 * D) - 0.5 * np.exp(-0.05 * D) + 0.3 * np.tanh(X[:, None, 0] - Z[None, :, 0])


def test_non_symmetric_similarity_trains_on_symmetrised_gram():
    X, y = imbalanced(2, sep=2.5)
    sim = Skewed()
    S = sim(X, X)
    assert not np.allclose(S, S.T) and np.linalg.eigvalsh(0.5 * (S + S.T)).min() < -1e-6
    svm = SimilaritySVM(similarity=sim, C=10.0).fit(X, y)
    assert svm.gamma_ is None and svm.similarity_ is sim
    ref = SVC(kernel="precomputed", C=10.0, class_weight={-1: 0.05, 1: 0.95}).fit(0.5 * (S + S.T), y)
    Xt = np.random.default_rng(3).normal(0, 1, (15, 5))
    St = sim(Xt, X)  # probe first, as the matcher is called at verification
    np.testing.assert_allclose(svm.decision_function(Xt), ref.decision_function(St), atol=1e-6)
    np.testing.assert_allclose(svm.decision_function(Xt),
                               sim(Xt, svm.support_vectors_) @ svm.dual_coef_ + svm.intercept_)


MATCHER = r"""
import sys, numpy as np
X, Z = np.load(sys.argv[1]), np.load(sys.argv[2])
D = np.abs(X[:, None, :] - Z[None, :, :]).sum(-1)          # L1: exp(-L1) is not RBF
S = np.exp(-0.5 * D) + 0.1 * (X[:, None, 1] > Z[None, :, 1])  # asymmetric step
np.savetxt(sys.stdout, S)
"""


def test_black_box_program_similarity(tmp_path):
    """A similarity computed by a separate program (real process), CV'd over C."""
    script = tmp_path / "matcher.py"
    script.write_text(MATCHER)
    calls = []

    def run(X, Z):
        a, b = tmp_path / "a.npy", tmp_path / "b.npy"
        np.save(a, np.asarray(X, float))
        np.save(b, np.asarray(Z, float))
        out = subprocess.run([sys.executable, str(script), str(a), str(b)], check=True,
                             capture_output=True, text=True).stdout
        calls.append((len(X), len(Z)))
        return np.loadtxt(out.splitlines(), ndmin=2)

    X, y = imbalanced(1, sep=3.0, n_neg=38, n_pos=6, d=3)
    svm = SimilaritySVM(similarity=CallableSimilarity(run, "matcher.py")).fit(X, y)
    assert calls == [(44, 44)]  # one Gram matrix serves the whole C grid search
    assert svm.C_ in svm.cv_scores_["C"]
    f = svm.decision_function(X)
    assert calls[-1] == (44, svm.n_support_total_)
    assert np.mean(np.sign(f) == y) > 0.9


def test_scikit_learn_estimator_checks():
    """Binary-only classifier: every applicable scikit-learn check passes (C fixed to keep
    it fast; C="cv" passes too, in 17 s)."""
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(SimilaritySVM(C=1.0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert failed == []
    with pytest.raises(ValueError, match="Only binary"):
        SimilaritySVM(C=1.0).fit(np.arange(6.0)[:, None], [0, 1, 2, 0, 1, 2])


def test_precomputed_gram_gives_the_same_svm():
    """fit(X, y, gram=S(X, X)) is the same model as computing S inside fit."""
    from ssgallery.learn.similarity import RBFSimilarity

    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 4)), rng.normal(1.5, 1, (8, 4))])
    y = np.r_[-np.ones(40), np.ones(8)]
    sim = RBFSimilarity(0.2)
    a = SimilaritySVM(similarity=sim).fit(X, y)
    b = SimilaritySVM(similarity=sim).fit(X, y, gram=sim(X, X))
    assert a.C_ == b.C_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ValueError, match="gram has shape"):
        SimilaritySVM(similarity=sim).fit(X, y, gram=np.eye(3))
    with pytest.raises(ValueError, match="only used with a Similarity"):
        SimilaritySVM().fit(X, y, gram=sim(X, X))
