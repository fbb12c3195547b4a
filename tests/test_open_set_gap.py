"""benchmarks/_open_set_gap.py: where SSVM loses FNIR at FPIR 1 % against its SVM, on a
constructed search whose answers are known (two clients A and B, 6 mated searches and
100 non-mated ones: one false positive allowed at 1 %, the threshold just above the
second-best stranger search)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import _open_set_gap as gap

from ssgallery.biometrics.scores import Scores

MATED = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "b3": "B"}
STRANGERS = {"x1": "x", "x2": "x", "x3": "x"} | {f"q{i}": f"p{i}" for i in range(97)}


def _table(method, repetition, scores):
    """A full search: ``scores[probe] = (score on A, score on B)``, every other stranger
    -2 on both; held-out normalisation mean 0, sd 1 (centred = raw)."""
    probes = {**MATED, **STRANGERS}
    claimed, real, probe, score = [], [], [], []
    for j, client in enumerate("AB"):
        for p, person in probes.items():
            claimed.append(client)
            real.append(person)
            probe.append(p)
            score.append(scores.get(p, (-2.0, -2.0))[j])
    clients = {c: {"matches": 2.0, "norm_mean": 0.0, "norm_std": 1.0} for c in "AB"}
    return Scores(method, None if method == "svm" else 2, repetition, np.array(claimed),
                  np.array(real), np.array(probe), np.array(score), clients)


SVM = {"a1": (2.0, 0.0), "a2": (2.0, 0.0), "a3": (2.0, 0.0), "b1": (0.0, 2.0),
       "b2": (0.0, 2.0), "b3": (0.0, 2.0), "x1": (1.0, 0.0), "x2": (0.9, 0.0),
       "x3": (0.5, 0.0), "q5": (-1.0, -1.0)}
# SSVM: stranger p5 (q5) scores high on B; a1 ranks first below T, a3 has B first
SSVM = {"a1": (2.0, 0.0), "a2": (3.5, 0.0), "a3": (2.6, 2.8), "b1": (0.0, 3.0),
        "b2": (0.0, 3.0), "b3": (0.0, 3.0), "x1": (3.0, 0.0), "x2": (1.0, 0.0),
        "x3": (0.5, 0.0), "q5": (0.0, 2.5)}


@pytest.fixture(scope="module")
def diagnosis():
    return gap.gap_diagnosis([_table("svm", 0, SVM), _table("ssvm", 0, SSVM)])


def test_the_gap_and_the_searches_that_set_each_threshold(diagnosis):
    (rep,) = diagnosis["repetitions"]
    assert (rep["non_mated"], rep["mated"], rep["allowed"]) == (100, 6, 1)
    assert rep["fnir"] == {"svm": 0.0, "ssvm": pytest.approx(2 / 6)}
    assert rep["set_by"] == {"svm": [("x", 2)], "ssvm": [("p5", 1), ("x", 1)]}
    # SVM ranks SSVM's setting searches (x1, then q5) 1st and 4th of its own
    assert rep["ssvm_setters_svm_rank"] == [1, 4]


def test_the_lost_mated_searches_by_cause_and_by_client(diagnosis):
    (rep,) = diagnosis["repetitions"]
    assert rep["ssvm_misses_svm_finds"] == {"below_threshold": 1, "another_client_first": 1}
    assert rep["svm_misses_ssvm_finds"] == 0
    assert diagnosis["worst_clients"] == [["A", 2]]
    low, high = diagnosis["bootstrap_90"]
    assert 0.0 <= low <= high <= 100.0


def test_other_normalisations_of_the_same_searches(diagnosis):
    norms = diagnosis["normalisations"]
    deployed = norms["centred (deployed)"]
    assert deployed["svm"] == 0.0 and deployed["ssvm"] == pytest.approx(2 / 6)
    assert deployed["gaps"] == [pytest.approx(100 * 2 / 6)]
    # mean 0, sd 1 for every client: the held-out Z-norm is the centred score here
    assert norms["Z-norm (held-out)"] == deployed
    rows = gap.norm_rows("toy", norms)
    assert rows[0] == ["toy", "centred (deployed)", "0.0", "33.3", "+33.3", "+33"]
    summary = gap.gap_summary("toy", diagnosis)
    assert "gap +33.3 points" in summary and "A (2)" in summary
