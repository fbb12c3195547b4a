"""End to end on the real AT&T faces (issue 3 acceptance): 20 enrolled clients with 5
training images each, m = 2, through the real CLI.

The AT&T images are read in place (symlinked into a temporary training folder), never
copied into the repository. A missing data set skips locally and fails in CI (tests/conftest.py).
"""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.biometrics.metrics import eer
from ssgallery.cli import main

ENROLLED = [f"s{c}" for c in range(1, 21)]
IMPOSTORS = [f"s{c}" for c in range(21, 41)]


@pytest.mark.slow
def test_att_twenty_clients_m2(tmp_path, monkeypatch, att_faces):
    ATT = att_faces
    train = tmp_path / "train"
    for c in ENROLLED:
        (train / c).mkdir(parents=True)
        for i in range(1, 6):
            os.symlink(ATT / c / f"{i}.pgm", train / c / f"{i}.pgm")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    r = runner.invoke(main, ["enroll", str(train), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["n_images"] == 100
    r = runner.invoke(main, ["compress", "--m", "2", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert [row["m"] for row in summary["clients"]] == [2] * 20

    from ssgallery.app.verify import verify
    from ssgallery.formats.store import load_store
    from ssgallery.learn.teacher import SimilaritySVM

    store = load_store("enrollment.h5")
    matcher = store.matcher()
    X = matcher.transform(store.images)
    impostor_paths = [str(ATT / s / f"{i}.pgm") for s in IMPOSTORS for i in range(1, 11)]
    from ssgallery.images.ingest import load_image_list

    gap, eers, eers_svm, accepted = [], [], [], []
    for c in ENROLLED:
        held_out = [str(ATT / c / f"{i}.pgm") for i in range(6, 11)]
        # the CLI verdicts on the client's held-out images
        r = runner.invoke(main, ["verify", *held_out, "--claim", c, "--json"])
        assert r.exit_code in (0, 1), r.output
        accepted.append(sum(res["accept"] for res in json.loads(r.stdout)["results"]))
        # scores of the compressed model vs the full SVM on the same test claims
        res = verify("gallery.h5", held_out + impostor_paths, c)
        scores = np.array([x.score for x in res])
        eers.append(eer(scores[5:], scores[:5]))
        svm = SimilaritySVM(similarity=matcher.similarity()).fit(
            X, np.where(store.labels == c, 1, -1))
        f = svm.decision_function(matcher.transform(load_image_list(held_out + impostor_paths,
                                                                    size=(92, 112))))
        eers_svm.append(eer(f[5:], f[:5]))
        gap.append(svm.n_support_total_)
    # the calibrated thresholds (znorm-global at FAR 1 % on unseen people) cost some FRR
    print(f"held-out genuine images accepted per client: {accepted}")
    # 85 of 100 at seed 0 since the pooled T leaves one impostor person out (23bda87; 87
    # before), and one client, s17, now accepts none of its 5: a known per-person cost of
    # that T, which its held-out images do not show (its held-out FRR is 0, so compress
    # cannot name it). A second such client fails this test.
    assert sum(accepted) >= 80 and sum(a == 0 for a in accepted) <= 1, accepted
    mean_eer, mean_svm = float(np.mean(eers)), float(np.mean(eers_svm))
    print(f"mean EER over 20 clients: m=2 {mean_eer:.4f}, full SVM {mean_svm:.4f} "
          f"({np.mean(gap):.1f} SVs)")
    assert abs(mean_eer - mean_svm) <= 0.01
    assert mean_eer < 0.05
