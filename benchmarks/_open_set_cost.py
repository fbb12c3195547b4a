"""Stage ``cost`` of benchmarks/open_set.py: ``identify --open-set`` on one gallery, this
tree against a baseline commit, runs interleaved (cold start and per-probe cost)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _results
import numpy as np

COST_MARGIN = 1.1  # "unchanged" cost: within the interleaved runs' noise on a shared machine
PER_PROBE = """import sys, time
from ssgallery.app.identify import identify
gallery, flag, probes = sys.argv[1], sys.argv[2], sys.argv[3:]
kw = {"verification_thresholds": True} if flag else {}
identify(gallery, probes[:1], open_set=True, **kw)  # warm: imports, first read
t = time.perf_counter(); identify(gallery, probes[:1], open_set=True, **kw); one = time.perf_counter() - t
t = time.perf_counter(); identify(gallery, probes, open_set=True, **kw); all_ = time.perf_counter() - t
print((all_ - one) / (len(probes) - 1))
"""
# arm -> (tree, identify's flag): this tree at its 1:N operating point, this tree with
# each client's verification threshold (the rule before; isolates the operating
# point's own cost), and the baseline commit's identify --open-set
ARMS = ("this tree", "this tree, --verification-thresholds", "baseline")


def _cost_gallery(work, n, rng):
    """A gallery of ``n`` clients (m = 2 points of a real eigenface space, as
    benchmarks/identify.py builds them) with a 1:N record, and probe images."""
    from identify import face_images, fake_models
    from PIL import Image

    from ssgallery.app.open_set import DEFAULT_TARGET_FPIR
    from ssgallery.biometrics import openset
    from ssgallery.formats.gallery import write_gallery
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    images, _ = face_images()
    matcher = EigenfaceMatcher().fit(images[:200])
    z = rng.normal(size=(200, n))
    curve = openset.search_curve(z.ravel(), np.repeat(np.arange(200), n), n)
    t, resolved = openset.threshold_at_fpir(curve, DEFAULT_TARGET_FPIR)
    fpir, ci = openset.fpir_at(curve, t)
    record = {"kind": "top-candidate-centred", "target_fpir": DEFAULT_TARGET_FPIR,
              "threshold": t, "resolved": resolved, "expected_fpir": fpir,
              "expected_fpir_ci": list(ci), "clients": n, "searches": 200,
              "search_size": n, "blocks": 1, "score": "centred", "scale": 1.0,
              "curve": {k: curve[k] for k in ("thresholds", "hazard", "hazard_low",
                                               "hazard_high")}}
    gallery = work / "g.h5"
    write_gallery(gallery, matcher_name="eigenface", matcher_config=matcher.get_config(),
                  matcher_state=matcher.get_state(), image_shape=images.shape[1:],
                  clients=fake_models(n, 2, matcher, rng),
                  attrs={"open_set": json.dumps(record)})
    probes = []
    for i in range(min(200, len(images) - 200)):
        probes.append(str(work / f"p{i}.png"))
        Image.fromarray(images[200 + i].astype(np.uint8)).save(probes[-1])
    return gallery, probes


def run_cost(args):
    """identify --open-set on one gallery, this tree against ``--baseline`` (the code
    before the 1:N operating point: per-client thresholds), runs interleaved: the cold
    start of the command on one probe and the per-probe cost of a batch in process."""
    with tempfile.TemporaryDirectory(prefix="ssg-open-cost-") as tmp:
        work = Path(tmp)
        gallery, probes = _cost_gallery(work, args.cost_clients, np.random.default_rng(0))
        base = _results.archive_tree(args.baseline, work / "baseline")
        trees = dict(zip(ARMS, ((_results.REPO, ""), (_results.REPO, "--verification-thresholds"),
                                (base, ""))))
        cold, per = {k: [] for k in trees}, {k: [] for k in trees}
        for run in range(args.cost_runs):
            for arm in (list(trees) if run % 2 == 0 else list(trees)[::-1]):
                tree, flag = trees[arm]
                env = dict(os.environ, PYTHONPATH=str(tree))
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "ssgallery", "identify",
                                       probes[0], "--gallery", str(gallery), "--open-set",
                                       *([flag] if flag else [])],
                                      env=env, capture_output=True, text=True, check=False)
                cold[arm].append(time.perf_counter() - t0)
                if done.returncode not in (0, 1):  # identified or unknown; else it failed
                    raise RuntimeError(f"{arm}: identify failed: {done.stderr[-500:]}")
                out = subprocess.run([sys.executable, "-c", PER_PROBE, str(gallery), flag,
                                      *probes], env=env, capture_output=True, text=True,
                                     check=True)
                per[arm].append(float(out.stdout.strip().splitlines()[-1]))
    return {"clients": args.cost_clients, "probes": len(probes), "runs": args.cost_runs,
            "baseline": args.baseline, "load": os.getloadavg()[0],
            "cold_s": {k: float(np.median(v)) for k, v in cold.items()},
            "per_probe_ms": {k: 1e3 * float(np.median(v)) for k, v in per.items()}}


def cost_table(res):
    a, b = res["per_probe_ms"], res["cold_s"]
    head = ["identify --open-set", f"{res['clients']} clients: ms per probe (median)",
            "cold start s (median)"]
    base = res["baseline"]
    names = {"this tree": f"this tree ({res['commit']}), the 1:N operating point",
             "this tree, --verification-thresholds": "this tree, --verification-thresholds",
             "baseline": f"baseline {base} (per-client thresholds)"}
    rows = [[names[k], f"{a[k]:.2f}", f"{b[k]:.3f}"] for k in ARMS if k in a]
    for k in ARMS[1:]:
        if k in a:
            rows.append([f"ratio this tree / {names[k].split(' (')[0]}",
                         f"{a['this tree'] / a[k]:.3f}", f"{b['this tree'] / b[k]:.3f}"])
    return (f"Search cost, side by side ({res['runs']} interleaved runs, "
            f"{res['probes']} probes, load {res['load']:.1f}):\n\n"
            + _results.markdown_table(head, rows))
