"""compress --threshold-mode: thresholds set over all clients once they are trained,
recorded in the gallery (mode, global threshold, expected FAR with its interval),
identical whatever the backend or resumption, never mixed by an update."""

import json
import re
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.app.parts import ClientResult, PartsFolder
from ssgallery.errors import InputError


@pytest.fixture(scope="module")
def synth_split(tmp_path_factory, synth_split_built):
    """Synthetic faces (ssgallery synth): 12 clients enrolled with 5 images each; their
    6th image and every image of 28 other people (never enrolled) as probes (built once
    per run: conftest.py)."""
    shared, clients = synth_split_built
    root = tmp_path_factory.mktemp("split")
    shutil.copytree(shared, root, dirs_exist_ok=True)
    return root, clients


def _unseen_far(gallery, root, clients):
    from ssgallery.app.roc import score_gallery

    table = score_gallery(gallery, root / "probes")
    unseen = ~np.isin(table.real, clients)
    t = np.array([table.clients[c]["threshold"] for c in table.claimed])
    return float(np.mean(table.score[unseen] >= t[unseen])), int(unseen.sum())


def test_global_mode_keeps_its_promise_on_unseen_impostors(synth_split, tmp_path):
    root, clients = synth_split
    s = compress(root / "e.h5", tmp_path / "g.h5", CompressOptions(target_far=0.05))
    cal = s.calibration
    assert s.threshold_mode == cal["mode"] == "znorm-global"
    assert cal["accepted"] == 33 and cal["impostors"] == 660  # floor(0.05 * 660)
    assert cal["expected_far_ci"][0] < 0.05 < cal["expected_far_ci"][1]
    for row in s.clients:  # one normalised threshold T for every client
        n = row["normalization"]
        assert row["threshold"] == pytest.approx(n["mean"] + n["std"] * cal["global_threshold"])
    far, n = _unseen_far(tmp_path / "g.h5", root, clients)
    # target 0.05; before the pool left one person out (halves of alternate scores,
    # the same people in both): 0.0709 (between 0: 0.0675); 0.0531 while some strangers'
    # faces failed to acquire (the face-space limits calibrated on held-out images, not
    # people: counted as rejections)
    assert n == 2016 and far == pytest.approx(0.0561, abs=0.002)
    compress(root / "e.h5", tmp_path / "v0.h5",
             CompressOptions(target_far=0.05, threshold_mode="client", refit_matcher=False))
    far_v0, _ = _unseen_far(tmp_path / "v0.h5", root, clients)
    assert far_v0 == pytest.approx(0.0863, abs=0.002)  # held-out impostors inside the basis
    # (between 0: 0.0947)


def test_each_shared_fold_is_refitted_once_per_compress_not_per_client(tmp_path):
    from helpers import make_faces

    from ssgallery.app import compress_plan as app
    from ssgallery.app.client_training import SharedBlocks, train_job
    from ssgallery.app.fold_spaces import held_out
    from ssgallery.progress import as_progress

    enroll(make_faces(str(tmp_path / "faces"), n_clients=12, n_images=5, seed=2),
           tmp_path / "e.h5")
    plan = app.prepare(tmp_path / "e.h5", tmp_path / "g.h5", CompressOptions(), CompressRun())
    app.setup_blocks(plan, plan.todo, as_progress(None))
    spaces = plan.fold_spaces
    assert spaces.n_fits_ == 5 and len(spaces.shared) == 5  # once per fold, all 12 clients
    shared = SharedBlocks(plan.X, plan.gram, spaces)
    for job in app.client_jobs(plan, plan.todo):
        # a job carries only what is its own: the rows, S(X, X) and the shared refits
        # are sent once (run_jobs' shared)
        assert job.X is None and job.gram is None and job.fold_spaces is None
        held = held_out(job.y, job.groups, job.folds)
        assert job.client not in set().union(*held) and len(set().union(*held)) == 11
        assert sum(h in spaces.shared for h in held) == 4  # + its own fold, refitted now
        train_job(job, shared)
    assert spaces.n_fits_ == 5 + 12  # the 5 shared folds + each client's own


def test_fold_work_done_once_gives_the_gallery_of_the_per_client_path(synth_split,
                                                                       tmp_path, monkeypatch):
    """The fold work done once per compress (shared folds refitted once) against the
    per-client path it replaces (every fold of every
    client refitted for that client); then eigenface's refits from the Gram matrix
    against refits by EigenfaceMatcher.fit."""
    from helpers import assert_rounding_equal

    from ssgallery.app.fold_spaces import FoldSpaces
    from ssgallery.formats.gallery import read_gallery
    from ssgallery.matchers.eigenface import EigenfaceMatcher
    from ssgallery.matchers.refits import Refits

    root, clients = synth_split
    opts, run = CompressOptions(target_far=0.05), CompressRun(clients=clients[:4])
    compress(root / "e.h5", tmp_path / "once.h5", opts, run)
    with monkeypatch.context() as patch:
        patch.setattr(FoldSpaces, "share", lambda self, keys: None)
        compress(root / "e.h5", tmp_path / "per-client.h5", opts, run)
    monkeypatch.setattr(EigenfaceMatcher, "subset_refits",
                        classmethod(lambda cls, config, images: Refits(cls, config, images)))
    compress(root / "e.h5", tmp_path / "fitted.h5", opts, run)
    once, per_client, fitted = (read_gallery(tmp_path / f"{g}.h5", arrays=True)
                                for g in ("once", "per-client", "fitted"))
    for c in clients[:4]:
        a, b, f = once.clients[c], per_client.clients[c], fitted.clients[c]
        for key in ("prototypes", "beta", "threshold"):
            assert_rounding_equal(getattr(a, key), getattr(b, key), tol=1e-4, err_msg=key)
        np.testing.assert_array_equal(a.prototypes, f.prototypes)  # no fold in the model
    cal = [json.loads(g.header["calibration"]) for g in (once, per_client, fitted)]
    assert cal[0]["global_threshold"] == pytest.approx(cal[1]["global_threshold"], rel=1e-4)
    # Gram vs fit: the spaces differ by ~3e-9 of their scale (tests/test_refits.py), which
    # the fold learners carry much further: noise of 3e-9 on the fitted spaces alone moves
    # these clients' held-out scores by up to 0.17 and their thresholds by up to 1e-2
    assert cal[0]["accepted"] == cal[2]["accepted"] and cal[0]["impostors"] == cal[2]["impostors"]
    assert cal[0]["global_threshold"] == pytest.approx(cal[2]["global_threshold"], rel=1e-2)


def test_client_mode_thresholds_are_the_per_client_cv_ones(synth_split, tmp_path):
    root, _ = synth_split
    s = compress(root / "e.h5", tmp_path / "g.h5",
                 CompressOptions(threshold_mode="client", cv_folds=3),
                 CompressRun(clients=["c01", "c02", "c03"]))
    assert s.calibration["global_threshold"] is None
    for row in s.clients:
        assert row["threshold"] == row["client_threshold"] and row["threshold_mode"] == "client"


def test_info_shows_mode_and_expected_far(synth_split, tmp_path):
    from ssgallery.cli import main

    root, _ = synth_split
    compress(root / "e.h5", tmp_path / "g.h5",
             CompressOptions(threshold_mode="shrink", cv_folds=3),
             CompressRun(clients=["c01", "c02", "c03"]))
    out = CliRunner().invoke(main, ["info", "--gallery", str(tmp_path / "g.h5")])
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.output.splitlines() if ln.startswith("thresholds:"))
    assert line.startswith("thresholds: shrink (normalised T = ")
    # a pooled rate, said so: one client can accept strangers far more often (far18)
    assert "expected FAR over all clients" in line and "95% Clopper-Pearson" in line
    assert "held-out impostor scores)" in line
    # the interval takes the impostor person as the trial, the FRR's the client
    # (ssgallery.biometrics.intervals), and the line says so
    assert re.search(r"Clopper-Pearson [0-9.]+-[0-9.]+% by impostor person: \d+ impostor "
                     r"people, design effect [0-9.]+; \d+ of \d+ held-out", line), line
    frr = next(ln for ln in out.output.splitlines() if ln.startswith("expected FRR"))
    assert re.search(r"by client: 3 clients, design effect [0-9.]+; \d+ of", frr), frr


def test_gallery_without_calibration_attrs_still_works(synth_split, tmp_path):
    from helpers import rehash_gallery

    from ssgallery.app.verify import verify
    from ssgallery.cli import main
    from ssgallery.formats.gallery import gallery_summary

    root, _ = synth_split
    g = tmp_path / "g.h5"
    compress(root / "e.h5", g, CompressOptions(threshold_mode="client", cv_folds=3),
             CompressRun(clients=["c01", "c02"]))
    with h5py.File(g, "a") as f:  # as written before threshold modes existed
        del f.attrs["threshold_mode"], f.attrs["calibration"]
    rehash_gallery(g)
    summary = gallery_summary(g)
    assert summary["threshold_mode"] == "client" and summary["calibration"] is None
    out = CliRunner().invoke(main, ["info", "--gallery", str(g)])
    assert "thresholds: client (per-client; no expected FAR recorded)" in out.output
    probe = next((root / "probes" / "c01").iterdir())
    assert verify(g, [probe], "c01")[0].score is not None


def test_new_attrs_are_covered_by_the_digest(synth_split, tmp_path):
    from ssgallery.errors import FormatError
    from ssgallery.formats.gallery import read_gallery

    root, _ = synth_split
    g = tmp_path / "g.h5"
    compress(root / "e.h5", g, CompressOptions(cv_folds=3), CompressRun(clients=["c01", "c02"]))
    with h5py.File(g, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        f.attrs["calibration"] = json.dumps(cal | {"expected_far": 0.0}, sort_keys=True)
    with pytest.raises(FormatError):
        read_gallery(g)


def test_parts_keep_the_heldout_scores(tmp_path):
    parts = PartsFolder(tmp_path / "g.h5")
    result = ClientResult(client="a", prototypes=np.ones((2, 3)), beta=np.ones(2),
                          intercept=0.5, threshold=0.1, provenance={"m": 2},
                          heldout={"impostor": np.arange(5.0), "genuine": np.ones(2)})
    parts.write(result, "k")
    back = parts.read("a", "k")
    np.testing.assert_array_equal(back.heldout["impostor"], np.arange(5.0))
    np.testing.assert_array_equal(back.heldout["genuine"], np.ones(2))


def test_update_keeps_the_calibration_and_refuses_another_mode(tmp_path):
    from helpers import growing_faces

    from ssgallery.formats.gallery import read_gallery

    add = growing_faces(str(tmp_path))
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(tmp_path / "faces", store)
    first = compress(store, gallery, CompressOptions(m=1, cv_folds=2)).calibration
    add()
    enroll(tmp_path / "faces", store, add=True)
    with pytest.raises(InputError, match="threshold_mode` 'znorm-global', not 'client'"):
        compress(store, gallery, CompressOptions(m=1, cv_folds=2, threshold_mode="client"),
                 CompressRun(update=True))
    with pytest.raises(InputError, match="target_far` 0.01, not 0.02"):  # c00..c05 kept
        compress(store, gallery, CompressOptions(m=1, cv_folds=2, target_far=0.02),
                 CompressRun(update=True, clients="c06,c07"))
    s = compress(store, gallery, CompressOptions(m=1, cv_folds=2), CompressRun(update=True))
    cal = s.calibration
    assert s.trained == ["c06", "c07"] and cal["global_threshold"] == first["global_threshold"]
    assert cal["impostors"] > first["impostors"] and cal["clients"] == 8
    g = read_gallery(gallery)
    n = g.clients["c07"].normalization
    assert g.clients["c07"].threshold == pytest.approx(n["mean"] + n["std"] * cal["global_threshold"])


def test_a_client_with_constant_impostor_scores_keeps_its_own_threshold():
    from ssgallery.biometrics.calibration import calibrate_thresholds
    from ssgallery.biometrics.metrics import threshold_at_far

    rng = np.random.default_rng(0)
    flat, spread = np.full(50, -0.2), rng.normal(0.0, 1.0, 400)
    norms = [{"kind": "znorm", "mean": -0.2, "std": 1e-12},
             {"kind": "znorm", "mean": float(spread.mean()), "std": float(spread.std(ddof=1))}]
    t, info = calibrate_thresholds([flat, spread], norms, 0.01, "znorm-global")
    assert t[0] == threshold_at_far(flat, 0.01) and t[0] > -0.2
    assert t[1] == pytest.approx(norms[1]["mean"] + norms[1]["std"] * info["global_threshold"])


@pytest.fixture(scope="module")
def sample15(tmp_path_factory, hard_sample_faces):
    """sample_data as it was (`hard_sample_faces`: these tests pin what its c07 and its
    strangers made compress do) c01-c15 enrolled (eigenface, defaults), and a claims file:
    every image of c16-c20 (never enrolled: strangers) claimed against every client (750
    claims)."""
    root = tmp_path_factory.mktemp("sample15")
    faces = root / "faces"
    faces.mkdir()
    for i in range(1, 16):
        (faces / f"c{i:02d}").symlink_to(f"{hard_sample_faces}/c{i:02d}")
    enroll(faces, root / "e.h5")
    (root / "strangers.txt").write_text("".join(
        f"{p} c{k:02d}\n" for c in ("c16", "c17", "c18", "c19", "c20")
        for p in sorted((hard_sample_faces / c).iterdir()) for k in range(1, 16)))
    return root


def _accepted(gallery, claims, client=None):
    """Claims of ``claims`` (of ``client`` only, if given) that ``verify --claims``
    accepts, and how many there were."""
    from ssgallery.cli import main

    if client is not None:
        mine = claims.parent / f"{claims.stem}-{client}.txt"
        mine.write_text("".join(line + "\n" for line in claims.read_text().splitlines()
                                if line.endswith(f" {client}")))
        claims = mine
    r = CliRunner().invoke(main, ["verify", "--claims", str(claims), "--gallery",
                                  str(gallery), "--csv"])
    status = [line.split(",")[3] for line in r.stdout.splitlines()[1:]]
    return status.count("accept"), len(status)


def test_a_client_whose_svm_cv_ranked_first_a_c_with_no_free_sv_is_held_out_on_its_scale(
        sample15, tmp_path):
    """sample_data c01-c15 with compress's defaults: c07's SVM CV ranked C = 0.1 first,
    where each of its 150 images is a bounded support vector and the intercept is not
    determined by the data; libsvm put it at the middle of its KKT interval in the final
    fit (-0.09) and at an end in the threshold CV's fold fits (-0.84 to -0.88), so the
    held-out scores were off the final model's scale. Before: compress thresholded c07 on
    its training scores and named it (off_scale c07 [140, 140]). Now the teacher passes
    over C = 0.1 (no free SV) to the next C of its CV ranking, C = 1000 (balanced
    accuracy 0.85 at every other C, AUC 0.996 at C >= 10, then the larger C; 40 SVs):
    c07 is held out like the others and accepts none of the 50 stranger claims."""
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    r = CliRunner().invoke(main, ["compress", "--store", str(sample15 / "e.h5"), "-o",
                                  str(tmp_path / "g.h5"), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["off_scale"] == {} and s["not_held_out"] == []
    c07 = next(row for row in s["clients"] if row["client"] == "c07")
    assert c07["svm_n_support"] == 40 and c07["cv_frr"] == 0.6
    model = read_gallery(tmp_path / "g.h5").clients["c07"]
    assert model.provenance["svm_C"] == 1000.0
    assert model.provenance["threshold_method"] != "training scores"
    # the provenance says so: C = 0.1 passed over, the kept SVM has free SVs
    assert model.provenance["svm_C_passed"] == [0.1]
    assert 0 < model.provenance["svm_n_free"] <= 40
    assert read_gallery(tmp_path / "g.h5").clients["c01"].provenance["svm_C_passed"] == []
    assert _accepted(tmp_path / "g.h5", sample15 / "strangers.txt", "c07") == (0, 50)


def _one_iteration(sample15, tmp_path, seed):
    """compress --m 1 --init random --max-iter 1 --seed SEED --json of `sample15`: the
    summary, stderr and the gallery."""
    from ssgallery.cli import main

    gallery = tmp_path / f"g{seed}.h5"
    r = CliRunner().invoke(main, ["compress", "--store", str(sample15 / "e.h5"), "-o",
                                  str(gallery), "--m", "1", "--init", "random",
                                  "--max-iter", "1", "--seed", str(seed), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), r.stderr, gallery


def test_a_client_whose_cv_models_score_off_its_scale_is_named_not_refused(sample15,
                                                                          tmp_path):
    """The threshold CV's models must describe the final model's scale. With one random
    start and one iteration (--m 1 --init random --max-iter 1 --seed 1) c02's and c11's
    fold models are not their final models either: at the threshold their held-out
    impostor scores gave, c02's final model accepted 10 of its 140 training impostors,
    images of 5 of its 14 impostor people (target FAR 1 %), c11's 32 (5 people). Their
    thresholds are set on their training scores, a warning names them, and c02 rejects
    most strangers of c16-c20. (The case this fallback was written for, c07's teacher at
    a C with no free SV, is gone: the test above.) Counting scores, not people, main
    named 6 clients here (`test_one_person_accepted_is_not_off_scale`)."""
    from ssgallery.formats.gallery import read_gallery

    s, err, gallery = _one_iteration(sample15, tmp_path, 1)
    assert s["off_scale"] == {"c02": [10, 140], "c11": [32, 140]}
    assert s["not_held_out"] == []
    c02 = next(row for row in s["clients"] if row["client"] == "c02")
    assert c02["frr"] == 0.0 and c02["teacher_gap"] == 0.0  # held-out ranking kept
    assert ("warning: 2 client(s) thresholded on their training scores (held-out scores "
            "off their scale; FAR optimistic, see docs/operating-points.md): c02, c11\n") \
        in err  # one short line (the detail is in the docs and in --json)
    model = read_gallery(gallery).clients["c02"]
    assert model.provenance["threshold_method"] == "training scores"
    assert model.provenance["cv_off_scale"] == [10, 140]
    assert _accepted(gallery, sample15 / "strangers.txt", "c02") == (5, 50)


def test_one_person_accepted_is_not_off_scale(sample15, tmp_path):
    """The off-scale check counts impostor people, not images (`accepts_too_many`): with
    --m 1 --init random --max-iter 1 (seed 0), c03's final model at its CV threshold
    accepted 8 of its 140 training impostor images, all of one person (c02, of 14): 1 of
    14 people is within the noise of a 1 % target, not evidence of another scale. Before,
    counted as 140 independent scores (Clopper-Pearson of 8 of 140 from 2.5 %), c03 was
    named off scale ({"c03": [8, 140]}) and thresholded on its training scores. Now it is
    held out like the others, and still rejects the 50 stranger claims of c16-c20."""
    from ssgallery.formats.gallery import read_gallery

    s, err, gallery = _one_iteration(sample15, tmp_path, 0)
    assert s["off_scale"] == {} and s["not_held_out"] == []
    assert "thresholded on their training scores" not in err
    model = read_gallery(gallery).clients["c03"]
    assert model.provenance["threshold_method"] != "training scores"
    assert "cv_off_scale" not in model.provenance
    assert _accepted(gallery, sample15 / "strangers.txt", "c03") == (0, 50)


@pytest.mark.parametrize("cap, people, far, old_bound", [(2, 2, 1 / 3, 0.1157),
                                                        (3, 3, 1 / 4, 0.0787)])
def test_a_far_its_thresholds_cannot_resolve_is_not_printed_as_estimated(
        sample15, tmp_path, cap, people, far, old_bound):
    """--max-impostors 2 (3): each client holds out 2 (3) impostor scores of as many
    people, too few to cross-fit its Z-norm, so its threshold sits on those very scores
    and none is accepted by construction. Before: 'expected FAR 0.00% (95%
    Clopper-Pearson 0.00-11.57%, 0 of 30 held-out impostor scores)' (7.87 %, 0 of 45)
    while 302 (129) of 750 stranger claims were accepted. Now: 'not estimated', with
    the (a + 1) / (n + 1) of a threshold on n people, which the strangers' rate is near,
    and a warning naming --max-impostors."""
    from ssgallery.cli import main

    gallery = tmp_path / "g.h5"
    args = ["compress", "--store", str(sample15 / "e.h5"), "-o", str(gallery),
            "--max-impostors", str(cap)]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)["calibration"]
    assert cal["accepted"] == 0 and cal["impostors"] == 15 * cap
    assert cal["unresolved"] == {"clients": 15, "people": [people, people],
                                 "far": pytest.approx(far), "training": 0}
    # the exact count moves with the BLAS threads (302 or 347 of 750 at cap 2, 129 or
    # 132 at cap 3) and with the teacher (199 and 109 since it passes over a C at which
    # no SV is free: 9 and 5 of the 15 clients had one): its order is what is asserted,
    # from 5 stranger people
    accepted, claims = _accepted(gallery, sample15 / "strangers.txt")
    assert claims == 750 and accepted / claims > 1.5 * old_bound
    assert 0.5 * far < accepted / claims < 1.5 * far
    r = CliRunner().invoke(main, [*args, "--force"])
    assert r.exit_code == 0, r.output
    assert (f"expected FAR not estimated: 0 of {15 * cap} held-out impostor scores accepted, "
            f"but each client's threshold sits on those very scores, of {people} impostor "
            f"people; a new person passes such a threshold about {100 * far:.1f}%") in r.stdout
    assert "Clopper-Pearson 0.00" not in r.stdout
    assert ("warning: the target FAR (1%) cannot be estimated for 15 of 15 clients"
            in r.stderr) and "raise --max-impostors" in r.stderr


def test_training_scores_are_called_so_and_have_no_bound(sample15, tmp_path):
    """--max-impostors 1: one impostor person per client, nothing held out. Before: '0 of
    15 held-out impostor scores' (they are training scores) and 'expected FAR 0.00%
    (0.00-21.80%)', while every one of the 750 stranger claims was accepted: no
    (a + 1) / (n + 1) holds on scores the models were fitted to push down."""
    from ssgallery.cli import main

    gallery = tmp_path / "g.h5"
    args = ["compress", "--store", str(sample15 / "e.h5"), "-o", str(gallery),
            "--max-impostors", "1"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert ("expected FAR not estimated: 0 of 15 training impostor scores accepted, but "
            "each client's threshold sits on those very scores, of 1 impostor person, whose "
            "models were fitted to reject those very people: new people pass such "
            "thresholds more often than these scores can tell") in r.stdout
    assert "of 150 training genuine scores" in r.stdout
    assert _accepted(gallery, sample15 / "strangers.txt") == (750, 750)
    r = CliRunner().invoke(main, ["info", "--gallery", str(gallery)])
    assert r.exit_code == 0, r.output
    assert "cannot be estimated for 15 of 15 clients" in r.stderr \
        and "raise compress --max-impostors" in r.stderr


def test_a_target_below_one_pooled_score_is_not_an_estimate(sample15, tmp_path):
    """znorm-global at a target FAR below 1 / (pooled held-out impostor scores): T sits
    above every one of them. Before (review26, AT&T at 0.0001): 'expected FAR 0.00%' and
    no warning, while 0.5% of strangers' claims passed; now 'not estimated', as client
    mode says, with the (a + 1) / (n + 1) bound, and the warning names the floor."""
    from ssgallery.cli import main

    gallery = tmp_path / "g.h5"
    r = CliRunner().invoke(main, ["compress", "--store", str(sample15 / "e.h5"), "-o",
                                  str(gallery), "--target-far", "0.00001", "--json"])
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)["calibration"]
    assert cal["mode"] == "znorm-global" and cal["accepted"] == 0
    assert 0 < cal["impostors"] < 1 / 0.00001
    assert cal["unresolved"]["clients"] == 15 and cal["unresolved"]["far"] > 0
    r = CliRunner().invoke(main, ["info", "--gallery", str(gallery)])
    assert r.exit_code == 0, r.output
    assert "expected FAR not estimated: 0 of" in r.stdout
    assert (f"a target below 1 / {cal['impostors']} held-out impostor scores "
            f"({100 / cal['impostors']:.3g}%) puts the threshold above all of them: raise "
            "compress --target-far to that or more") in r.stderr
