"""What the plots mark: the operating point at the gallery's stored thresholds, the
failure-to-acquire floor, the threshold on the score histograms, titles that fit."""

import numpy as np
import pytest

from ssgallery.biometrics import plots
from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.scores import Scores

matplotlib = pytest.importorskip("matplotlib")


def _gallery_table(fta=0.1, seed=0):
    """3 clients with stored thresholds; a fraction ``fta`` of genuine claims NaN."""
    rng = np.random.default_rng(seed)
    claimed, real, score = [], [], []
    for c in ("a", "b", "c"):
        for s in rng.normal(2.0, 1.0, 20):
            claimed.append(c), real.append(c), score.append(s)
        for s in rng.normal(0.0, 1.0, 200):
            claimed.append(c), real.append("z"), score.append(s)
    score, claimed, real = np.array(score), np.array(claimed), np.array(real)
    gen = np.flatnonzero(claimed == real)
    score[gen[: int(fta * gen.size)]] = np.nan
    clients = {c: {"matches": 2.0, "threshold": t} for c, t in zip("abc", (1.0, 1.5, 2.0))}
    return Scores("gallery", 2, 0, claimed, real, np.array([f"p{i}" for i in range(len(score))]),
                  score, clients)


def test_curves_mark_the_stored_thresholds_and_the_fta_floor():
    import matplotlib.pyplot as plt

    [s] = evaluate([_gallery_table()], n_boot=0)
    fig, ax = plt.subplots()
    plots._operating_marks(ax, s, "C0", 1 / 200, lambda v: np.asarray(v, dtype=float))
    cross, floor = ax.get_lines()
    assert cross.get_marker() == "X"
    assert cross.get_xdata()[0] == pytest.approx(s["far_at_stored_thresholds"])
    assert cross.get_ydata()[0] == pytest.approx(s["frr_at_stored_thresholds"])
    assert "at the stored thresholds: FAR" in cross.get_label()
    assert s["fta_genuine"] == pytest.approx(6 / 60)
    assert floor.get_ydata()[0] == pytest.approx(s["fta_genuine"])
    assert "failure-to-acquire floor (FRR >= 10.00%)" in floor.get_label()
    plt.close(fig)
    # a protocol summary (no stored thresholds, no FTA) gets neither
    fig, ax = plt.subplots()
    plots._operating_marks(ax, s | {"far_at_stored_thresholds": None, "fta_genuine": 0.0},
                           "C0", 1 / 200, lambda v: v)
    assert ax.get_lines() == []
    plt.close(fig)


def test_score_histograms_draw_the_threshold(tmp_path):
    import matplotlib.pyplot as plt

    table = _gallery_table(fta=0.0)
    fig, ax = plt.subplots()
    plots._threshold_line(ax, [table], shifted=True)
    assert ax.get_lines()[0].get_xdata()[0] == 0 and "stored" in ax.get_lines()[0].get_label()
    plt.close(fig)
    protocol = Scores("ssvm", 2, 0, table.claimed, table.real, table.probe, table.score,
                      {c: {"matches": 2.0} for c in "abc"})
    fig, ax = plt.subplots()
    plots._threshold_line(ax, [protocol], shifted=False)
    from ssgallery.biometrics.metrics import eer_threshold

    genuine = table.claimed == table.real
    assert ax.get_lines()[0].get_xdata()[0] == eer_threshold(table.score[~genuine],
                                                             table.score[genuine])
    plt.close(fig)
    summaries = evaluate([table, protocol], n_boot=0)
    assert plots.plot_scores(tmp_path / "scores.png", [table, protocol], summaries)
    assert (tmp_path / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plots.plot_curves(tmp_path / "roc.png", summaries, title="x" * 300)


def test_long_titles_are_cut_in_the_middle():
    assert plots._fit_title("a" * 50 + "\nshort", 21) == "a" * 9 + "..." + "a" * 9 + "\nshort"


def test_a_set_of_claims_none_acquired_draws_no_histogram_and_warns_nothing(tmp_path):
    import warnings

    import matplotlib.pyplot as plt

    table = _gallery_table(fta=0.25)
    table.score[table.claimed != table.real] = np.nan  # every impostor failed to acquire
    summaries = evaluate([table], n_boot=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's 'invalid value encountered in divide'
        assert plots.plot_scores(tmp_path / "scores.png", [table], summaries)
    fig, ax = plt.subplots()
    score, gen = table.score, table.claimed == table.real
    for claims, name in ((~gen, "impostor"), (gen, "genuine")):
        plots._histogram(ax, score, np.isfinite(score), claims, np.linspace(-3, 5, 9), "C0",
                         name)
    assert [h.get_label() for h in ax.get_legend_handles_labels()[0]] == [
        "impostor (600, 600 failed to acquire)", "genuine (60, 15 failed to acquire)"]
    assert len(ax.patches) == 8  # the genuine histogram's bars only
    plt.close(fig)
