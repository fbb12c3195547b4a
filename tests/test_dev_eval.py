"""``roc --dev-scores/--eval-scores`` as bob users run it: one dev and one eval file are
paired whatever their names; several are paired by method label, and the error says so."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.biometrics import metrics
from ssgallery.biometrics.scores import Scores, format_scores
from ssgallery.cli import main


def _table(seed, shift, method="x", n_clients=3):
    """Scores of 3 clients: genuine N(2 + shift, 1), impostor N(0, 1)."""
    rng = np.random.default_rng(seed)
    claimed, real, score = [], [], []
    for c in range(n_clients):
        cid = f"c{c}"
        for s in rng.normal(2.0 + shift, 1.0, 20):
            claimed.append(cid), real.append(cid), score.append(s)
        for i, s in enumerate(rng.normal(0.0, 1.0, 200)):
            claimed.append(cid), real.append(f"z{i % 5}"), score.append(s)
    n = len(score)
    return Scores(method, None, 0, np.array(claimed), np.array(real),
                  np.array([f"p{i}" for i in range(n)]), np.array(score))


def _bare(path, table):
    """A 4-column file as bob writes it: no side-car, the method only in the name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_scores(table))
    return str(path)


def _split(t):
    return t.score[t.claimed != t.real], t.score[t.claimed == t.real]


def _roc(*args):
    return CliRunner().invoke(main, ["roc", *args])


def test_one_dev_and_one_eval_file_are_paired_whatever_their_names(tmp_path):
    dev, ev = _table(0, 0.0), _table(1, -0.5)
    for names in (("dev.txt", "eval.txt"), ("scores-dev", "scores-eval")):
        d = _bare(tmp_path / names[0], dev)
        e = _bare(tmp_path / names[1], ev)
        out = tmp_path / f"report-{names[0]}"
        res = _roc("--dev-scores", d, "--eval-scores", e, "-o", str(out))
        assert res.exit_code == 0, res.output
        [r] = json.loads((out / "summary.json").read_text())["methods"]
        stem = [n.removesuffix(".txt") for n in names]
        assert r["label"] == f"{stem[0]} / {stem[1]}"
        assert r["label"] in res.stdout
        t = r["threshold"]
        assert t == metrics.eer_threshold(*_split(dev))
        neg, pos = _split(ev)
        assert r["eval"]["far"] == pytest.approx(np.mean(neg >= t))
        assert r["eval"]["frr"] == pytest.approx(np.mean(pos < t))


def test_several_files_are_paired_by_method_label(tmp_path):
    dev = {"pca": _table(0, 0.0), "lda": _table(2, 1.0)}
    ev = {"pca": _table(1, -0.5), "lda": _table(3, 0.5)}
    d = [_bare(tmp_path / "dev" / f"{k}.txt", t) for k, t in dev.items()]
    e = [_bare(tmp_path / "eval" / f"{k}.txt", t) for k, t in reversed(ev.items())]
    out = tmp_path / "report"
    res = _roc("--dev-scores", d[0], "--dev-scores", d[1], "--eval-scores", e[0],
               "--eval-scores", e[1], "-o", str(out))
    assert res.exit_code == 0, res.output
    results = {r["label"]: r for r in json.loads((out / "summary.json").read_text())["methods"]}
    assert set(results) == {"pca", "lda"}
    for k, r in results.items():  # each method's eval rates at its own dev threshold
        t = r["threshold"]
        assert t == metrics.eer_threshold(*_split(dev[k]))
        neg, pos = _split(ev[k])
        assert r["eval"]["far"] == pytest.approx(np.mean(neg >= t))
        assert r["eval"]["frr"] == pytest.approx(np.mean(pos < t))
    # a label on one side only: the error names it and states the rule
    other = _bare(tmp_path / "eval" / "svm.txt", _table(4, 0.5))
    res = _roc("--dev-scores", d[0], "--dev-scores", d[1], "--eval-scores", e[0],
               "--eval-scores", other, "-o", str(tmp_path / "bad"))
    assert res.exit_code == 2 and res.stdout == ""
    [line] = res.stderr.splitlines()
    assert line.startswith("ssgallery: error: 'pca' has no evaluation scores; 'svm' has no "
                           "development scores: one development and one evaluation score "
                           "file are paired")
    assert "several are paired by method label" in line


def test_the_documented_dev_eval_examples_run(tmp_path, monkeypatch):
    """The three command lines of docs/operating-points.md and the one of roc --help,
    on bare dev.txt / eval.txt files."""
    monkeypatch.chdir(tmp_path)
    _bare(tmp_path / "dev.txt", _table(0, 0.0))
    _bare(tmp_path / "eval.txt", _table(1, -0.5))
    base = ["--dev-scores", "dev.txt", "--eval-scores", "eval.txt"]
    for extra in (["--criterion", "eer"], ["--criterion", "min-hter"],
                  ["--criterion", "far", "--criterion-far", "0.01"]):
        res = _roc(*base, *extra)
        assert res.exit_code == 0, (extra, res.output)
        [r] = json.loads((tmp_path / "report" / "summary.json").read_text())["methods"]
        assert r["criterion"] == extra[1]
