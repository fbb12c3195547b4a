"""Baselines at equal m and the method registry."""

import itertools

import numpy as np
import pytest
from sklearn.cluster import KMeans

from ssgallery.biometrics.methods import METHOD_NAMES, METHODS, describe_methods, make_method
from ssgallery.errors import InputError, SsgalleryError
from ssgallery.learn.baselines import (
    NystromLandmarks,
    PrototypeSelector,
    SVMRed,
    SVMSel,
    balanced_weights,
    dissimilarity,
)
from ssgallery.learn.similarity import Similarity
from ssgallery.learn.teacher import SimilaritySVM


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (40, 3)), rng.normal(0, 1, (12, 3)) + [1.8, 0.5, 0]])
    y = np.r_[-np.ones(40), np.ones(12)]
    teacher = SimilaritySVM(gamma=0.5, C=10.0).fit(X, y)
    assert teacher.n_support_total_ >= 12
    return X, y, teacher


def feature_space_error(sim, SV, alpha, Z, beta):
    """||sum alpha_i phi(sv_i) - sum beta_j phi(z_j)||^2 in the kernel's feature space."""
    return (alpha @ sim(SV, SV) @ alpha - 2 * alpha @ sim(SV, Z) @ beta + beta @ sim(Z, Z) @ beta)


@pytest.mark.parametrize("name", [n for n in METHOD_NAMES if n != "svm"])
@pytest.mark.parametrize("m", [1, 3])
def test_every_method_returns_exactly_m_prototypes(problem, name, m):
    X, y, teacher = problem
    est = make_method(name, m).fit(X, y, teacher=teacher)
    assert est.n_matches_ == m
    assert est.prototypes_.shape == (m, X.shape[1])
    assert est.beta_.shape == (m,)
    f = est.decision_function(X)
    assert f.shape == (len(X),) and np.all(np.isfinite(f))
    np.testing.assert_allclose(
        f, teacher.similarity_(X, est.prototypes_) @ est.beta_ + est.intercept_, atol=1e-10)


def test_full_svm_method_counts_support_vectors(problem):
    X, y, teacher = problem
    est = make_method("svm", 2).fit(X, y, teacher=teacher)
    assert est.n_matches_ == teacher.n_support_total_
    np.testing.assert_array_equal(est.decision_function(X), teacher.decision_function(X))
    own = make_method("svm", 2, teacher_params={"gamma": 0.5, "C": 10.0}).fit(X, y)
    np.testing.assert_allclose(own.decision_function(X), teacher.decision_function(X), atol=1e-8)


def test_fits_its_own_teacher_when_none_given(problem):
    X, y, _ = problem
    est = SVMSel(2).fit(X, y)
    assert isinstance(est.teacher_, SimilaritySVM) and est.n_matches_ == 2


def test_svm_red_beta_is_the_solve(problem):
    X, y, t = problem
    est = SVMRed(3).fit(X, y, teacher=t)
    Z, sim = est.prototypes_, t.similarity_
    beta = np.linalg.solve(sim(Z, Z), sim(Z, t.support_vectors_) @ t.dual_coef_)
    np.testing.assert_allclose(est.beta_, beta, rtol=1e-8)
    assert est.intercept_ == t.intercept_
    # pre-images are virtual: not training samples
    assert not any(np.allclose(z, x) for z in Z for x in X)


def test_reduced_sets_approach_the_svm_as_m_grows(problem):
    X, y, t = problem
    sim, SV, a = t.similarity_, t.support_vectors_, t.dual_coef_
    total = a @ sim(SV, SV) @ a
    for cls in (SVMSel, SVMRed):
        errs = [feature_space_error(sim, SV, a, e.prototypes_, e.beta_)
                for e in (cls(m).fit(X, y, teacher=t) for m in (1, 2, 4, 8))]
        assert all(e2 <= e1 + 1e-9 for e1, e2 in itertools.pairwise(errs)), (cls.__name__, errs)
        assert errs[0] < total and errs[-1] < 0.6 * total
    # SVM-red builds its expansion better than SVM-sel selects one (Schoelkopf et al.)
    red, sel = SVMRed(2).fit(X, y, teacher=t), SVMSel(2).fit(X, y, teacher=t)
    assert (feature_space_error(sim, SV, a, red.prototypes_, red.beta_)
            < feature_space_error(sim, SV, a, sel.prototypes_, sel.beta_))


def test_svm_sel_keeps_support_vectors_with_optimal_coefficients(problem):
    X, y, t = problem
    sel = SVMSel(4).fit(X, y, teacher=t)
    SV, sim = t.support_vectors_, t.similarity_
    np.testing.assert_array_equal(sel.prototypes_, SV[sel.kept_support_])
    Z = sel.prototypes_
    np.testing.assert_allclose(sel.beta_, np.linalg.solve(sim(Z, Z), sim(Z, SV) @ t.dual_coef_),
                               rtol=1e-8)
    # all SVs kept: the SVM itself; more than #SVs: padded with zero-weight training samples
    n = t.n_support_total_
    full = SVMSel(n).fit(X, y, teacher=t)
    np.testing.assert_allclose(full.decision_function(X), t.decision_function(X), atol=1e-6)
    more = SVMSel(n + 2).fit(X, y, teacher=t)
    assert more.n_matches_ == n + 2
    np.testing.assert_allclose(more.decision_function(X), t.decision_function(X), atol=1e-6)


def test_svm_sel_at_m_equal_to_its_training_samples_when_all_are_support_vectors():
    """Every training sample a support vector and m = their number: the SVM itself,
    nothing left to pad with (it failed: no sample for the teacher to rank)."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (2, 3)), rng.normal(0, 1, (2, 3)) + 0.5])
    y = np.r_[-1.0, -1.0, 1.0, 1.0]
    t = SimilaritySVM(gamma=0.5, C=0.01).fit(X, y)
    assert t.n_support_total_ == len(X)
    full = SVMSel(len(X)).fit(X, y, teacher=t)
    assert full.n_matches_ == len(X)
    np.testing.assert_allclose(full.decision_function(X), t.decision_function(X), atol=1e-6)


def test_svm_red_needs_rbf(problem):
    X, y, _ = problem

    class Skewed(Similarity):  # not RBF, not symmetric, not PSD
        def __call__(self, A, B):
            D = np.abs(A[:, None] - B[None]).sum(-1)
            return np.exp(-D) - 0.5 * np.exp(-0.1 * D) + 0.2 * np.tanh(A[:, None, 0] - B[None, :, 0])

    S = Skewed()(X, X)
    assert np.linalg.eigvalsh(0.5 * (S + S.T)).min() < 0
    t = SimilaritySVM(similarity=Skewed(), C=1.0).fit(X, y)
    with pytest.raises(SsgalleryError, match="svm-red needs an RBF similarity"):
        SVMRed(2).fit(X, y, teacher=t)
    # the others work with any similarity
    for name in ("svm-sel", "ps-r", "ps-b", "ps-s", "ps-km", "nystrom"):
        est = make_method(name, 2).fit(X, y, teacher=t)
        assert est.n_matches_ == 2 and np.all(np.isfinite(est.decision_function(X)))


def rows_in(Z, X):
    return [int(np.flatnonzero(np.all(X == z, axis=1))[0]) for z in Z]


def test_ps_km_prototypes_are_set_medians_of_kmeans_clusters(problem):
    X, y, t = problem
    est = PrototypeSelector(3, "kmedians", random_state=4).fit(X, y, teacher=t)
    idx = rows_in(est.prototypes_, X)  # raises if a prototype is not a training sample
    assert idx == list(est.prototype_indices_) and len(set(idx)) == 3
    lab = KMeans(3, n_init=10, random_state=4).fit(X).labels_
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    for i in idx:
        members = np.flatnonzero(lab == lab[i])
        assert D[i, members].sum() == pytest.approx(D[np.ix_(members, members)].sum(1).min())


def test_ps_selections(problem):
    X, y, t = problem
    D = dissimilarity(t.similarity_, X)
    span = PrototypeSelector(3, "spanning").fit(X, y, teacher=t).prototype_indices_
    assert span[0] == np.argmin(D.sum(1))  # the set median first
    assert span[1] == np.argmax(D[span[0]])  # then the farthest from it
    border = PrototypeSelector(3, "border").fit(X, y, teacher=t).prototype_indices_
    np.testing.assert_array_equal(np.sort(border), np.sort(np.argsort(-D.sum(1))[:3]))
    r1 = PrototypeSelector(5, "random", random_state=1).fit(X, y, teacher=t).prototype_indices_
    r2 = PrototypeSelector(5, "random", random_state=2).fit(X, y, teacher=t).prototype_indices_
    assert len(set(r1)) == 5 and set(r1) != set(r2)
    with pytest.raises(InputError, match="exceeds"):
        PrototypeSelector(len(X) + 1, "random").fit(X, y, teacher=t)


def test_ridge_fits_the_teacher_outputs_with_balanced_weights(problem):
    X, y, t = problem
    lam = 1e-3
    est = PrototypeSelector(4, "spanning", alpha=lam).fit(X, y, teacher=t)
    u = balanced_weights(y)
    assert u[y > 0].sum() == pytest.approx(0.5) and u[y < 0].sum() == pytest.approx(0.5)
    # Eq. 4 (eq:beta) with the prototypes fixed: weighted ridge, bias unpenalised
    A = np.c_[t.similarity_(X, est.prototypes_), np.ones(len(X))]
    M = A.T @ (u[:, None] * A) + lam * np.diag([1, 1, 1, 1, 0])
    sol = np.linalg.solve(M, A.T @ (u * t.decision_function(X)))
    np.testing.assert_allclose(np.r_[est.beta_, est.intercept_], sol, rtol=1e-6, atol=1e-8)


def test_lasso_sparsifies(problem):
    X, y, t = problem
    weak = make_method("ps-r", 8, regressor="lasso", alpha=1e-5).fit(X, y, teacher=t)
    strong = make_method("ps-r", 8, regressor="lasso", alpha=3e-2).fit(X, y, teacher=t)
    assert np.sum(strong.beta_ == 0) > np.sum(weak.beta_ == 0)
    assert strong.n_matches_ == 8  # prototypes are kept; zero weights are reported in beta_


def test_nystrom_landmarks_are_kmeans_centres(problem):
    X, y, t = problem
    est = NystromLandmarks(3, random_state=0).fit(X, y, teacher=t)
    km = KMeans(3, n_init=10, random_state=0).fit(X)
    np.testing.assert_allclose(est.prototypes_, km.cluster_centers_)


def test_registry():
    assert METHOD_NAMES == ("svm", "ssvm", "ssvm-paper", "svm-sel", "svm-red", "ps-r", "ps-b",
                            "ps-s", "ps-km", "nystrom")
    assert all(len(d) > 10 for _, d in METHODS)
    assert len(describe_methods().splitlines()) == len(METHODS)
    assert make_method("ssvm-paper", 2).solver == "paper"
    assert make_method("PS-KM", 2, regressor="lasso").regressor == "lasso"
    with pytest.raises(InputError, match="unknown method 'foo'"):
        make_method("foo", 2)


@pytest.mark.slow
def test_att_faces_methods_at_m2(att_faces):
    """Real faces: AT&T s1..s20 enrolled (first 5 images), s21..s40 impostors, eigenface
    matcher, 4 clients. Measured AUCs (per client): svm, ssvm, svm-red 0.999-1.000;
    ps-r 0.49-0.91."""
    from sklearn.metrics import roc_auc_score

    root = att_faces
    from ssgallery.images.ingest import load_faces
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    faces = load_faces(root)
    labels = faces.labels
    enrolled = [f"s{i}" for i in range(1, 21)]
    train = np.concatenate([np.flatnonzero(labels == s)[:5] for s in enrolled])
    gen = np.concatenate([np.flatnonzero(labels == s)[5:] for s in enrolled])
    imp = np.flatnonzero(~np.isin(labels, enrolled))
    matcher = EigenfaceMatcher().fit(faces.images[train])
    sim = matcher.similarity()
    X, Xg, Xi = (matcher.transform(faces.images[i]) for i in (train, gen, imp))
    auc = {n: [] for n in ("svm", "ssvm", "svm-red", "svm-sel", "ps-r")}
    for c in enrolled[:4]:
        y = np.where(labels[train] == c, 1.0, -1.0)
        teacher = SimilaritySVM(similarity=sim).fit(X, y)
        k = list(teacher.cv_scores_["C"]).index(teacher.C_)
        assert teacher.cv_scores_["balanced_accuracy"][0, k] > 0.5  # never reject-everyone
        g = Xg[labels[gen] == c]
        for name, scores in auc.items():
            est = make_method(name, 2).fit(X, y, teacher=teacher)
            assert name == "svm" or est.n_matches_ == 2
            f = np.r_[est.decision_function(g), est.decision_function(Xi)]
            scores.append(roc_auc_score(np.r_[np.ones(len(g)), np.zeros(len(Xi))], f))
    mean = {n: np.mean(a) for n, a in auc.items()}
    assert mean["svm"] >= 0.99 and mean["ssvm"] >= 0.99 and mean["svm-red"] >= 0.99
    assert mean["ps-r"] < mean["ssvm"] - 0.05
