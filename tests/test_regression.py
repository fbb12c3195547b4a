"""Regression in similarity spaces: teachers, SRidge/SLASSO, PS-* regressors, m by CV,
and the synthetic faces' ground truth (paper Table I)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GroupKFold
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_estimator

from ssgallery.images import synth as sd
from ssgallery.learn.baselines import PrototypeSelectionRegressor
from ssgallery.learn.mselect import select_n_prototypes
from ssgallery.learn.regression import (
    SimilarityLasso,
    SimilarityRidge,
    SuperSparseRegressionDistiller,
)
from ssgallery.learn.supersparse import SuperSparseDistiller, SuperSparseRegressor


def _bumps(n=120, seed=0):
    """y = sum of three Gaussian bumps of x in 2-d, plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    centres = np.array([[-1.5, -1.0], [1.5, 0.0], [0.0, 1.8]])
    y = (np.exp(-((X[:, None] - centres) ** 2).sum(-1)) * [3.0, -2.0, 1.5]).sum(1)
    return X, y + rng.normal(0, 0.05, n)


def _mae(model, X, y):
    return float(np.abs(model.predict(X) - y).mean())


def test_teachers_fit_the_bumps_and_lasso_is_sparse():
    X, y = _bumps()
    Xt, yt = _bumps(200, seed=1)
    ridge = SimilarityRidge(gamma=1.0).fit(X, y)
    lasso = SimilarityLasso(gamma=1.0).fit(X, y)
    assert ridge.n_prototypes_ == 120 and ridge.alpha_ in ridge.alphas
    assert 3 <= lasso.n_prototypes_ < 60
    np.testing.assert_array_equal(lasso.beta_ != 0, True)  # only the support is kept
    trivial = np.abs(yt - np.median(y)).mean()
    assert _mae(ridge, Xt, yt) < 0.15 * trivial
    assert _mae(lasso, Xt, yt) < 0.2 * trivial


@pytest.mark.parametrize("est", [SimilarityRidge(), SimilarityLasso(n_alphas=5, cv=3),
                                 SuperSparseRegressionDistiller(n_prototypes=2,
                                                                random_state=0)])
def test_regression_estimators_pass_check_estimator(est):
    results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])) for r in results
              if r["status"] == "failed"]
    assert failed == []


def test_sridge_and_slasso_match_their_teachers_with_few_prototypes():
    X, y = _bumps()
    Xt, yt = _bumps(200, seed=1)
    for teacher in (SimilarityRidge(gamma=1.0), SimilarityLasso(gamma=1.0)):
        t = teacher.fit(X, y)
        s = SuperSparseRegressionDistiller(t, 3, prefit=True, random_state=0).fit(X, y)
        assert s.prototypes_.shape == (3, 2) and s.teacher_ is t
        assert s.similarity_ is t.similarity_  # distils the same s
        assert _mae(s, Xt, yt) < 1.1 * _mae(t, Xt, yt)
        # the prototypes move onto the bumps
        centres = np.array([[-1.5, -1.0], [1.5, 0.0], [0.0, 1.8]])
        d = np.sqrt(((s.prototypes_[:, None] - centres) ** 2).sum(-1)).min(0)
        assert d.max() < 0.35, d


def test_distiller_on_labels_and_own_teacher():
    X, y = _bumps()
    a = SuperSparseRegressionDistiller("labels", 3, gamma=1.0, random_state=0).fit(X, y)
    assert a.teacher_ is None
    teacher = SimilarityRidge(gamma=1.0)
    b = SuperSparseRegressionDistiller(teacher, 3, random_state=0).fit(X, y)
    assert isinstance(b.teacher_, SimilarityRidge) and b.teacher_ is not teacher
    Xt, yt = _bumps(200, seed=1)
    assert _mae(a, Xt, yt) < 0.06 and _mae(b, Xt, yt) < 0.06
    c = SuperSparseRegressionDistiller(n_prototypes=2, random_state=0).fit(X, y)
    assert isinstance(c.teacher_, SimilarityRidge) and c.teacher_.gamma == "median"
    d = clone(SuperSparseRegressionDistiller(SimilarityLasso(), 4, lam=1e-3))
    assert d.get_params()["lam"] == 1e-3 and d.make_regressor().normalize_y


def test_normalize_y_makes_the_fit_scale_free():
    """A target of small variance: without standardising, L-BFGS-B's ftol (relative to
    max(Omega, 1)) stops at once and lam dominates; with it, scaling y scales g."""
    X, y = _bumps()
    small = [SuperSparseRegressor(3, gamma=1.0, init="quantile", lam=1e-6, normalize_y=True,
                                  random_state=0).fit(X, c * y) for c in (0.01, 100.0)]
    np.testing.assert_allclose(small[0].predict(X) * 1e4, small[1].predict(X), rtol=1e-4,
                               atol=1e-4)
    raw = SuperSparseRegressor(3, gamma=1.0, init="quantile", lam=1e-6,
                               random_state=0).fit(X, 0.01 * y)
    assert raw.n_iter_ < small[0].n_iter_
    assert _mae(raw, X, 0.01 * y) > 2 * _mae(small[0], X, 0.01 * y)


def test_quantile_init_spreads_prototypes_over_the_target():
    from ssgallery.learn.supersparse import initial_prototypes

    X = np.arange(20.0)[:, None]
    y = X[:, 0] ** 2
    Z = initial_prototypes(X, y, np.full(20, 0.05), 4, "quantile", np.random.default_rng(0))
    # one medoid per quarter of the sorted targets
    assert sorted(Z[:, 0].tolist()) in ([2.0, 7.0, 12.0, 17.0], [2.0, 7.0, 12.0, 18.0],
                                        [2.0, 6.0, 12.0, 17.0])


def test_svm_distiller_defaults_unchanged():
    # the regression path leaves the classification defaults (chosen in issue 10) alone
    d = SuperSparseDistiller()
    assert (d.init, d.lam, d.lam_scale, d.n_init) == ("class", 2e-3, "gram", 1)
    assert not d.make_regressor().normalize_y


@pytest.mark.parametrize("selection", ["random", "border", "spanning", "kmedians"])
@pytest.mark.parametrize("regressor", ["ridge", "lasso"])
def test_ps_regressors(selection, regressor):
    X, y = _bumps()
    ps = PrototypeSelectionRegressor(40, selection, regressor, gamma=1.0).fit(X, y)
    assert ps.prototypes_.shape == (40, 2)
    np.testing.assert_array_equal(ps.prototypes_, X[ps.prototype_indices_])
    frac = 0.75 if selection == "border" else 0.5  # the frontier misses the bumps
    assert _mae(ps, X, y) < frac * np.abs(y - np.median(y)).mean()
    # with 3 selected samples none of them comes close to the super-sparse fit
    ps3 = PrototypeSelectionRegressor(3, selection, regressor, gamma=1.0).fit(X, y)
    assert _mae(ps3, X, y) > 0.15


def test_ps_border_picks_the_frontier():
    X, y = _bumps()
    ps = PrototypeSelectionRegressor(5, "border", gamma=1.0).fit(X, y)
    r = np.linalg.norm(X, axis=1)
    assert r[ps.prototype_indices_].min() > np.quantile(r, 0.9)


def test_m_selection_with_mae_groups_and_fresh_fits():
    X, y = _bumps(150)
    groups = np.arange(150) // 5
    cv = GroupKFold(3)
    s = select_n_prototypes(SuperSparseRegressionDistiller(SimilarityRidge(gamma=1.0),
                                                           random_state=0),
                            X, y, m_grid=(5, 3, 2, 1), rho=0.01, cv=cv, loss="mae",
                            groups=groups)
    losses = [s.path_[m]["loss"] for m in (1, 2, 3)]
    assert losses[0] > losses[1] > losses[2] and s.best_m_ == 3, s
    assert s.best_estimator_.prototypes_.shape == (3, 2)
    ps = select_n_prototypes(PrototypeSelectionRegressor(selection="spanning", gamma=1.0),
                             X, y, m_grid=(8, 4, 1), rho=0.01, cv=cv, loss="mae",
                             groups=groups)
    assert ps.best_estimator_.n_prototypes == ps.best_m_
    assert ps.path_[1]["loss"] > ps.path_[ps.best_m_]["loss"]


def test_synth_attributes_are_what_was_rendered():
    a = sd.image_attributes(0, 3, 4)
    assert np.isclose(np.hypot(a["light_x"], a["light_y"]), a["light"])
    assert "age" not in a and 20 <= sd.image_attributes(0, 3, 4, age=True)["age"] <= 70
    # lighting brighter towards the right half: the right half is brighter
    X, _ = sd.generate(identities=10, images=6, seed=2)
    lx = np.array([r["light_x"] for r in sd.attributes(10, 6, seed=2)])
    diff = X[:, 30:90, 46:80].mean((1, 2)) - X[:, 30:90, 12:46].mean((1, 2))
    assert np.corrcoef(lx, diff)[0, 1] > 0.5
    # ageing greys the hair: older faces are brighter at the top of the head
    Xa, _ = sd.generate(identities=10, images=6, seed=2, age=True)
    ages = np.array([r["age"] for r in sd.attributes(10, 6, seed=2, age=True)])
    assert np.corrcoef(ages, Xa[:, 5:25, 30:62].mean((1, 2)))[0, 1] > 0.5
    # ageing draws from its own stream: every other parameter is the same
    aged = sd.image_attributes(0, 3, 4, age=True)
    aged.pop("age")
    assert aged == sd.image_attributes(0, 3, 4)
    assert np.abs(sd.face_image(0, 3, 4, age=True).astype(int) - sd.face_image(0, 3, 4)).mean() > 1


def test_attributes_csv_written_by_synth(tmp_path):
    sd.write_sample_data(tmp_path / "s", identities=2, images=3, seed=1, probes=0, age=True)
    lines = (tmp_path / "s" / "attributes.csv").read_text().splitlines()
    assert lines[0] == "path,identity,light_x,light_y,light_dir,light,gain,smile,scale,age"
    assert len(lines) == 7 and lines[4].startswith("faces/c02/01.png,c02,")
    assert all((tmp_path / "s" / ln.split(",")[0]).is_file() for ln in lines[1:])
    age = float(lines[2].split(",")[-1])
    assert age == pytest.approx(sd.apparent_age(1, 0, 1), abs=1e-3)


def test_committed_attributes_match_generator():
    from pathlib import Path

    committed = Path(__file__).resolve().parent.parent / "sample_data" / "attributes.csv"
    assert committed.read_text() == sd.attributes_csv(20, 10, sd.DEFAULT_SEED,
                                                      variation=sd.SAMPLE_VARIATION)


@pytest.mark.parametrize("est, bad", [
    (SimilarityRidge, {"alphas": -1.0}), (SimilarityRidge, {"cv": 1}),
    (SimilarityRidge, {"gamma": "wide"}), (SimilarityRidge, {"similarity": "cosine"}),
    (SimilarityLasso, {"n_alphas": 0}), (SimilarityLasso, {"max_iter": 0}),
    (SimilarityLasso, {"cv": "five"}), (SimilarityLasso, {"random_state": "seed"}),
    (SimilarityLasso, {"gamma": -2.0}),
    (SuperSparseRegressionDistiller, {"teacher": "median"}),
    (SuperSparseRegressionDistiller, {"n_prototypes": 0})])
def test_bad_parameters_are_refused_at_fit(est, bad):
    X, y = _bumps()
    name = next(iter(bad))
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of {est.__name__}"):
        est(**bad).fit(X, y)
