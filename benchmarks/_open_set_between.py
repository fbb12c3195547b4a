"""Stage ``between`` of benchmarks/open_set.py: what ``compress --between W`` costs, side
by side with ``--between 0``, on the same enrollment and the same claims.

Per data set, gallery size and repetition (the fpir stage's split: the same clients,
training images and probes for a seed): one ``enroll``, then ``compress`` with
``--between 0`` (the paper's fit) and with ``--between W``, ``--between-runs`` times each in this process (jobs
1), the arm that runs first alternating (A B B A ...): CPU seconds of the process per
client (median of the runs) and the ratio of the two arms. Then each arm's gallery is
measured as ``roc --gallery G --probes DIR`` measures it (`ssgallery.app.roc.score_gallery`:
every probe against every client; the clients' other images are genuine claims, every
image of a person never enrolled and of the other clients an impostor claim): mean client
EER, FRR at FAR 1 % (the averaged curve), FAR and FRR at the stored verification
thresholds, the worst client's EER and the client whose EER rises most with W, and FPIR
and FNIR at the gallery's stored 1:N operating point, and FNIR where the probes' own
non-mated searches give FPIR 1 % (as the protocol stage reads it: the models without
the stored threshold).
"""

import tempfile
import time
from pathlib import Path

import _results
import numpy as np
from calibration import enrol_split

BETWEEN_HEAD = ["data set (matcher)", "clients", "compress", "CPU s per client",
                "CPU ratio to 0: mean (worst rep)", "mean client EER %",
                "FRR@FAR=1% % (averaged curve)", "FAR / FRR % at stored thresholds",
                "worst client EER %", "FPIR / FNIR % at the stored 1:N point",
                "FNIR % at FPIR 1 % of the probes' own searches"]


def _verification(gallery, probes):
    """``roc --gallery``'s figures of one gallery on its probe folder."""
    from ssgallery.app.roc import score_gallery
    from ssgallery.biometrics import metrics
    from ssgallery.biometrics.evaluation import client_curves, evaluate
    from ssgallery.biometrics.identification import evaluate_identification

    table = score_gallery(gallery, probes, warn=lambda m: None)
    s = evaluate([table], n_boot=0)[0]
    found = evaluate_identification([table.search])[0] if table.search is not None else {}
    return {"eer_client_mean": s["eer_client_mean"],
            "frr_at_far_1pct": s["frr_at_far_1pct_averaged_curve"],
            "far_stored": s["far_at_stored_thresholds"],
            "frr_stored": s["frr_at_stored_thresholds"],
            "client_eer": {c: float(metrics.curve_eer(far, frr))
                           for c, far, frr in client_curves(table)},
            "fpir_stored": found.get("fpir_at_stored_threshold"),
            "fnir_stored": found.get("fnir_at_stored_threshold"),
            "fnir_at_fpir_1pct": found.get("fnir_at_fpir_1pct")}


def run_between(matcher, n, rep, subjects, args):
    """One repetition: both arms' compress CPU per run and their verification figures."""
    from ssgallery.app.compress import CompressOptions, CompressRun, compress
    from ssgallery.app.enroll import enroll

    weights = (0.0, float(args.between))
    rng = np.random.default_rng(1000 * args.seed + rep)  # the fpir stage's split
    with tempfile.TemporaryDirectory(prefix="ssg-between-") as tmp:
        work = Path(tmp)
        enrol_split(subjects, n, args.train_images, rng, work)
        enroll(work / "train", work / "e.h5", matcher=matcher, warn=lambda m: None)
        cpu, wall = {w: [] for w in weights}, {w: [] for w in weights}
        for run in range(args.between_runs):
            for w in (weights if run % 2 == 0 else weights[::-1]):
                c0, t0 = time.process_time(), time.perf_counter()
                compress(work / "e.h5", work / f"g{w:g}-{run}.h5",
                         CompressOptions(seed=rep, between=w), CompressRun(jobs=1))
                cpu[w].append(time.process_time() - c0)
                wall[w].append(time.perf_counter() - t0)
        return {"repetition": rep, "clients": n,
                "arms": {f"{w:g}": {"cpu_s": cpu[w], "wall_s": wall[w]}
                         | _verification(work / f"g{w:g}-0.h5", work / "probes")
                         for w in weights}}


def aggregate_between(reps, weight):
    """Per arm: CPU per client (median of the runs, mean over repetitions), the ratio to
    the default per repetition, the verification figures' means and worst clients."""
    n = reps[0]["clients"]
    base = [float(np.median(r["arms"]["0"]["cpu_s"])) for r in reps]
    out = {"clients": n, "repetitions": len(reps), "weight": weight, "arms": {}}
    for arm in ("0", f"{weight:g}"):
        per = [r["arms"][arm] for r in reps]
        cpu = [float(np.median(a["cpu_s"])) for a in per]
        worst = max(((i, c, e) for i, a in enumerate(per) for c, e in a["client_eer"].items()),
                    key=lambda x: x[2])
        row = {"cpu_per_client_s": float(np.mean(cpu)) / n,
               "cpu_ratio": [c / b for c, b in zip(cpu, base)],
               "runs": len(per[0]["cpu_s"]), "worst_client_eer": list(worst)}
        for key in ("eer_client_mean", "frr_at_far_1pct", "far_stored", "frr_stored",
                    "fpir_stored", "fnir_stored", "fnir_at_fpir_1pct"):
            vals = [a[key] for a in per if a.get(key) is not None]
            row[key] = float(np.mean(vals)) if vals else None
        out["arms"][arm] = row
    rise = [(i, c, r["arms"][f"{weight:g}"]["client_eer"][c] - e)
            for i, r in enumerate(reps) for c, e in r["arms"]["0"]["client_eer"].items()
            if c in r["arms"][f"{weight:g}"]["client_eer"]]
    out["client_eer_rise"] = list(max(rise, key=lambda x: x[2]))
    out["clients_worse"] = sum(d > 1e-12 for _, _, d in rise)
    out["clients_better"] = sum(d < -1e-12 for _, _, d in rise)
    out["client_models"] = len(rise)
    return out


def between_table(results):
    """The stage's markdown table and its worst-case lines."""
    rows, lines = [], []
    for key, row in results.items():
        for arm, a in row["arms"].items():
            ratio = a["cpu_ratio"]
            rep, client, eer = a["worst_client_eer"]
            rows.append([key, str(row["clients"]),
                         "--between 0" if arm == "0" else f"--between {arm}",
                         f"{a['cpu_per_client_s']:.3f}",
                         "1" if arm == "0" else f"{np.mean(ratio):.2f} ({max(ratio):.2f})",
                         _results.pct(a["eer_client_mean"]), _results.pct(a["frr_at_far_1pct"]),
                         f"{_results.pct(a['far_stored'])} / {_results.pct(a['frr_stored'])}",
                         f"{_results.pct(eer)} ({client}, rep {rep})",
                         f"{_results.pct(a['fpir_stored'])} / {_results.pct(a['fnir_stored'], 1)}",
                         _results.pct(a.get("fnir_at_fpir_1pct"), 1)])
        rep, client, rise = row["client_eer_rise"]
        lines.append(f"- {key}, {row['clients']} clients x {row['repetitions']} repetitions "
                     f"({row['arms'][next(iter(row['arms']))]['runs']} compress runs per arm"
                     f"): with --between {row['weight']:g} the client EER is higher for "
                     f"{row['clients_worse']} and lower for {row['clients_better']} of "
                     f"{row['client_models']} client models; largest rise "
                     f"{100 * rise:+.2f} points ({client}, rep {rep})")
    return ("What `compress --between` costs (stage `between`: the same enrollment "
            "compressed with both, interleaved; verification as `roc --gallery` measures "
            "it, on the same claims):\n\n" + _results.markdown_table(BETWEEN_HEAD, rows)
            + "\n\n" + "\n".join(lines))
