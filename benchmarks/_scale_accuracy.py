"""What the impostor cap costs in accuracy (issue 11): the accuracy stage of scale.py.

Each subject's last ``n_test`` images are held out; the rest are enrolled. For every
seed, the chosen clients are compressed (``m = 2``) uncapped and with each impostor
mode and cap K, with that seed as ``random_state``; every model scores every held-out
image and its EER is computed (genuine: the client's own images). The comparison is
paired: same clients, same seed, capped minus uncapped, per client.

The seed matters: it draws the impostor sample and also the learner's own random
choices (the folds that select the SVM's C, the learner's starts), which move the
uncapped run's mean client EER by itself. A single seed cannot tell a cost of the
cap from that noise, so every figure is a mean over seeds, with each seed's
difference and the standard error over clients.

The threshold CV is skipped (``cv_folds=0``): it sets thresholds only, the trained
models (prototypes, beta, intercept) are the same with or without it
(tests/test_scale.py asserts it), and an EER does not depend on the threshold.
"""

from itertools import pairwise
from pathlib import Path

import numpy as np

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.biometrics.client_gaps import WORSE_BY
from ssgallery.biometrics.metrics import eer
from ssgallery.formats.gallery import read_gallery
from ssgallery.formats.store import load_store
from ssgallery.images.ingest import load_faces


def client_eers(store, gallery, test_images, test_labels, matcher_cmd=None):
    """EER of g(x) on the held-out images for each of the gallery's clients, sorted by
    client id (genuine: the client's own images, impostors: everyone else's).
    ``matcher_cmd``: the host's program of an external matcher."""
    from ssgallery.matchers.host import host_matcher

    g = read_gallery(gallery, arrays=True)
    matcher = load_store(store, images=False).matcher(
        host=host_matcher(matcher_cmd) if matcher_cmd else None)
    F = matcher.transform(test_images)
    out = []
    for cid in sorted(g.clients):
        model = g.clients[cid]
        scores = model.decision_function(F, model.similarity_function(matcher))
        own = test_labels == cid
        out.append(eer(scores[~own], scores[own]))
    return np.asarray(out)


def split_folder(src_dir, dst, n_test):
    """Symlink the last n_test images of each subject into dst/test, the rest into dst/train."""
    for subject in sorted(p for p in Path(src_dir).iterdir() if p.is_dir()):
        files = sorted(f for f in subject.iterdir() if f.is_file())
        for part, chosen in (("train", files[:-n_test]), ("test", files[-n_test:])):
            (dst / part / subject.name).mkdir(parents=True, exist_ok=True)
            for f in chosen:
                (dst / part / subject.name / f.name).symlink_to(f.resolve())


def run_accuracy(tmp, name, faces_dir, *, n_test=3, n_clients=0, caps=(600,),
                 modes=("sample",), seeds=(0,), matcher="eigenface", jobs=2):
    """Per-client EERs of each run: ``{(mode, K, seed): (n_clients,)}``, the uncapped
    runs under ``("all", 0, seed)``; and the number of training images.

    ``n_clients`` = 0: every enrolled client."""
    dst = Path(tmp) / f"acc-{name}-{matcher}".replace(" ", "_")
    split_folder(faces_dir, dst, n_test)
    store = dst / "e.h5"
    enroll(dst / "train", store, matcher=matcher)
    info = load_store(store, images=False)
    test = load_faces(dst / "test", size=info.image_shape[::-1])
    clients = info.clients[:n_clients or None]
    runs = [("all", 0)] + [(mode, k) for mode in modes for k in caps]
    res = {}
    for seed in seeds:
        for mode, cap in runs:
            out = dst / f"g-{mode}-{cap}-{seed}.h5"
            compress(store, out,
                     CompressOptions(m=2, max_impostors=cap, seed=seed, cv_folds=0,
                                     impostors="sample" if mode == "all" else mode),
                     CompressRun(clients=clients, jobs=jobs))
            res[(mode, cap, seed)] = client_eers(store, out, test.images,
                                                 np.asarray(test.labels))
            out.unlink()
    return res, len(info.labels), len(clients)


def paired(res, mode, cap, seeds):
    """Capped vs uncapped over seeds: dict with the mean EERs, the mean difference, each
    seed's difference and the standard error over clients of the seed-averaged
    per-client difference (all fractions, not %)."""
    diffs = np.array([res[(mode, cap, s)] - res[("all", 0, s)] for s in seeds])
    per_client = diffs.mean(axis=0)
    se = per_client.std(ddof=1) / np.sqrt(len(per_client)) if len(per_client) > 1 else 0.0
    return {"capped": float(np.mean([res[(mode, cap, s)].mean() for s in seeds])),
            "uncapped": float(np.mean([res[("all", 0, s)].mean() for s in seeds])),
            "diff": float(diffs.mean()), "per_seed": diffs.mean(axis=1), "se": float(se),
            "worse": int(np.sum(np.round(diffs, 12) > WORSE_BY)), "models": diffs.size,
            "worst": float(diffs.max()), "noise": seed_noise(res, seeds)}


def seed_noise(res, seeds):
    """Client models of the uncapped run more than `WORSE_BY` above the same client's
    model of the previous seed: how many a mean hides when nothing but the learner's
    seed changes, the yardstick for the capped runs' count. None with one seed."""
    if len(seeds) < 2:
        return None
    d = np.array([res[("all", 0, b)] - res[("all", 0, a)] for a, b in pairwise(seeds)])
    return int(np.sum(np.round(d, 12) > WORSE_BY)), d.size


def describe(name, matcher, n_img, n_clients, seeds, mode, cap, p):
    """One printed line per (mode, K) comparison."""
    return (f"{name}, {matcher}, --impostors {mode}, K = {cap}: {n_clients} clients x "
            f"{len(seeds)} seeds ({n_img} training images), mean client EER "
            f"{100 * p['capped']:.2f} % vs {100 * p['uncapped']:.2f} % uncapped "
            f"({100 * p['diff']:+.2f} pp, SE {100 * p['se']:.2f} pp; per seed "
            + ", ".join(f"{100 * d:+.2f}" for d in p["per_seed"]) + "); " + worse_text(p))


def worse_text(p):
    """'k of n client models more than 5 points worse (largest +x; seed to seed: j of
    n')': the per-client count the mean hides, beside the uncapped run's own."""
    noise = "" if p["noise"] is None else \
        f"; uncapped, seed to seed: {p['noise'][0]} of {p['noise'][1]}"
    return (f"{p['worse']} of {p['models']} client models more than {100 * WORSE_BY:g} "
            f"points worse (largest {100 * p['worst']:+.1f}{noise})")


def uncapped_spread(res, seeds):
    """(min, max) over seeds of the uncapped run's mean client EER."""
    means = [res[("all", 0, s)].mean() for s in seeds]
    return float(min(means)), float(max(means))
