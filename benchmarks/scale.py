"""Compress at scale (issue 11): ratios measured side by side in one run.

- per-client compress time at S0 vs S2 identities (synthetic, 6 images each, m = 2,
  the impostor cap active), and peak RSS of ``ssgallery compress`` at each size
  (subprocesses, ``getrusage(RUSAGE_CHILDREN)`` of a wrapper whose only child is it);
- the per-client cost of each regime: uncapped (100 identities) with the calibration's
  fold refits (the default) and without, capped and uncapped at 300 identities
  (benchmarks/_scale_regimes.py);
- ``--jobs 2`` vs ``--jobs 1`` and a Dask LocalCluster (2 single-threaded worker
  processes) vs serial, same clients, same galleries;
- ``verify`` start-up on a 10,000-client gallery vs a 20-client one, and ``info`` on it
  (galleries of random valid models written with write_gallery: no training)
  (both: benchmarks/_scale_parallel.py);
- accuracy with vs without the cap: mean client EER of the compressed models (m = 2) on
  held-out images, synthetic and LFW (eigenface, dlib), paired over seeds
  (benchmarks/_scale_accuracy.py).

    OMP_NUM_THREADS=1 python benchmarks/scale.py            # writes docs/benchmarks/scale.md
    OMP_NUM_THREADS=1 python benchmarks/scale.py --quick    # small sizes, no page
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _results import archive_tree, markdown_table, write_page
from _scale_accuracy import describe, paired, run_accuracy, uncapped_spread, worse_text
from _scale_parallel import parallel_ratios, startup
from _scale_regimes import cli_run, regime_rows, run_regimes

from ssgallery.app.enroll import enroll
from ssgallery.app.training_sets import DEFAULT_MAX_IMPOSTORS
from ssgallery.datasets import lfw_path
from ssgallery.images.synth import client_names, write_sample_data

FIT_IDENTITIES = 200  # the eigenface basis is fitted on these; the rest join with --add
LOG = []


def say(text):
    print(text, flush=True)
    LOG.append(text)


def synth_store(tmp, identities, images=6):
    """Synthetic faces -> store (basis fitted on the first identities, then ``enroll --add``
    of the rest in a subprocess): (store, names, synth s, enroll --add peak RSS MiB)."""
    root = Path(tmp) / f"s{identities}"
    t0 = time.perf_counter()
    write_sample_data(root, identities=identities, images=images, probes=0, jobs=2)
    t_synth = time.perf_counter() - t0
    store = root / "e.h5"
    names = client_names(identities)
    enroll(root / "faces", store, clients=names[:FIT_IDENTITIES])
    rss = float("nan")
    if identities > FIT_IDENTITIES:
        rss = cli_run(["enroll", str(root / "faces"), "--store", str(store), "--add",
                       "--json"])["rss"]
    return store, names, t_synth, rss


def compress_subprocess(store, clients, out, extra=()):
    """``ssgallery compress --json`` in a subprocess: (summary, peak RSS MiB, wall s)."""
    res = cli_run(["compress", "--store", str(store), "-o", str(out), "--m", "2",
                   "--clients", ",".join(clients), "--json", *extra])
    return json.loads(res["out"]), res["rss"], res["wall"]


def per_client(tmp, sizes, n_clients):
    rows, out = [], {}
    for n in sizes:
        store, names, t_synth, enroll_rss = synth_store(tmp, n)
        summary, rss, wall = compress_subprocess(store, names[:n_clients], Path(tmp) / "g.h5")
        secs = [c["cpu_seconds"] for c in summary["clients"]]
        n_impostor = summary["clients"][0]["n_impostor"]
        out[n] = {"train": float(np.mean(secs)), "rss": rss, "wall": wall, "synth": t_synth,
                  "enroll_rss": enroll_rss, "n_impostor": n_impostor, "store": store,
                  "names": names, "regime": _regime(n, n_impostor)}
        added = (f"enroll --add peak RSS {enroll_rss:.0f} MiB" if n > FIT_IDENTITIES else
                 f"no enroll --add (all {n} identities in the basis)")
        say(f"{n} identities: synth {t_synth:.1f} s ({n * 6} images), compress of "
            f"{n_clients} clients: {np.mean(secs):.3f} CPU s/client training, wall {wall:.1f} s, "
            f"peak RSS {rss:.0f} MiB, {n_impostor} impostor images/client "
            f"({out[n]['regime']}); {added}")
        rows.append(n)
    return out


def _regime(identities, n_impostor):
    """Which compress regime a store of ``identities`` is in: capped (every client trains
    on at most K impostor images) or uncapped (on every stored image, with the threshold
    CV's fold refits of the matcher)."""
    stored = identities * 6
    if n_impostor < DEFAULT_MAX_IMPOSTORS:
        return (f"uncapped: {stored} stored images < K + 6, every client trains on all of "
                "them, fold refits")
    return f"capped: K = {DEFAULT_MAX_IMPOSTORS} impostor images per client"


def _per_client_rows(pc, sizes):
    small, big = sizes[0], sizes[-1]
    ratio = pc[big]["train"] / pc[small]["train"]
    rows = [[f"per-client training CPU time, {big:,} vs {small:,} identities",
             f"{pc[big]['train']:.3f} s vs {pc[small]['train']:.3f} s = {ratio:.2f}x",
             "<= 1.5x"]]
    rows += [[f"peak RSS of compress at {n:,} identities ({pc[n]['regime']})",
              f"{pc[n]['rss']:.0f} MiB", "<= 1024 MiB at 2,000; sublinear"] for n in sizes]
    rows += [[(f"peak RSS of enroll --add at {n:,} identities (basis on "
               f"{FIT_IDENTITIES})"), f"{pc[n]['enroll_rss']:.0f} MiB", ""]
             for n in sizes if n > FIT_IDENTITIES]
    rows += [[f"synth --jobs 2, {n:,} identities x 6 images", f"{pc[n]['synth']:.1f} s", ""]
             for n in sizes]
    return rows


def _parallel_rows(args, pc, tmp):
    par = pc.get(args.parallel_identities)
    if par is None:
        store, names, _, _ = synth_store(tmp, args.parallel_identities)
    else:
        store, names = par["store"], par["names"]
    serial, jobs2, dask, same = parallel_ratios(store, names[:args.parallel_clients], tmp,
                                                say=say)
    return [[(f"--jobs 2 vs --jobs 1, {args.parallel_clients} clients of "
              f"{args.parallel_identities:,} identities"),
             f"{jobs2:.1f} s vs {serial:.1f} s = {serial / jobs2:.2f}x", ">= 1.7x"],
            ["Dask LocalCluster (2 workers x 1 thread) vs serial",
             f"{dask:.1f} s vs {serial:.1f} s = {serial / dask:.2f}x", ">= 1.6x"],
            ["galleries of --jobs 2 and Dask equal the serial one", str(same), "True"]]


def _startup_rows(args, pc, tmp):
    v20, vbig, info = startup(tmp, args.big_gallery, say=say)
    return [[f"verify start-up, {args.big_gallery:,} vs 20 clients",
             f"{vbig:.3f} s vs {v20:.3f} s = {vbig / v20:.2f}x", "<= 1.1x"],
            [f"info on {args.big_gallery:,} clients", f"{info:.2f} s", "< 2 s"]]


def _accuracy_rows(args, pc, tmp):
    rows, sets = [], []
    if "synthetic" in args.acc_sets:
        acc_dir = Path(tmp) / "acc-synth-src"
        write_sample_data(acc_dir, identities=args.acc_identities, images=9, probes=0, jobs=2)
        sets.append((f"synthetic {args.acc_identities} identities", acc_dir / "faces",
                     args.acc_clients, "eigenface"))
    if "lfw" in args.acc_sets and (lfw_path() / "MANIFEST.sha256").exists():
        sets += [("LFW", lfw_path(), args.lfw_clients, m) for m in args.lfw_matchers.split(",")]
    caps = [int(k) for k in args.acc_caps.split(",")]
    modes = args.acc_impostors.split(",")
    seeds = [int(s) for s in args.acc_seeds.split(",")]
    for name, faces, n_clients, matcher in sets:
        res, n_img, n_cl = run_accuracy(tmp, name, faces, n_clients=n_clients, caps=caps,
                                        modes=modes, seeds=seeds, matcher=matcher,
                                        jobs=args.acc_jobs)
        lo, hi = uncapped_spread(res, seeds)
        say(f"{name}, {matcher}, uncapped: {n_cl} clients, mean client EER per seed "
            + ", ".join(f"{100 * res[('all', 0, s)].mean():.2f} %" for s in seeds))
        label = f"{name}, {matcher} ({n_img:,} training images, {n_cl} clients x " \
                f"{len(seeds)} seeds)"
        rows.append([f"mean client EER, {label}, uncapped: lowest and highest seed",
                     f"{100 * lo:.2f} % to {100 * hi:.2f} % ({100 * (hi - lo):.2f} pp)", ""])
        for mode in modes:
            for k in caps:
                p = paired(res, mode, k, seeds)
                say(describe(name, matcher, n_img, n_cl, seeds, mode, k, p))
                rows.append([f"mean client EER, {label}, --impostors {mode}, K = {k} vs all",
                             (f"{100 * p['capped']:.2f} % vs {100 * p['uncapped']:.2f} % "
                              f"({100 * p['diff']:+.2f} pp, SE {100 * p['se']:.2f}); "
                              + worse_text(p)),
                             "within 0.3 pp"])
    return rows


def _regime_rows(args, pc, tmp):
    sizes = [int(s) for s in args.regime_sizes.split(",")]
    stores = {}
    for n in sizes:
        store, names = (pc[n]["store"], pc[n]["names"]) if n in pc \
            else synth_store(tmp, n)[:2]
        stores[n] = (store, names)
    baseline = None
    if args.baseline:
        baseline = (args.baseline, archive_tree(args.baseline, Path(tmp) / "baseline"))
    res = run_regimes(stores, args.regime_clients, args.regime_rounds,
                      args.regime_max_impostors, baseline, say=say)
    return regime_rows(res, args.regime_max_impostors)


STAGES = {"regimes": _regime_rows, "parallel": _parallel_rows, "startup": _startup_rows,
          "accuracy": _accuracy_rows}


def _parse(argv):
    """The command line; ``--quick`` sets its small sizes here."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,500,2000", help="identities (6 images each)")
    ap.add_argument("--clients", type=int, default=20, help="clients timed per size")
    ap.add_argument("--parallel-identities", type=int, default=200)
    ap.add_argument("--parallel-clients", type=int, default=40)
    ap.add_argument("--big-gallery", type=int, default=10_000)
    ap.add_argument("--regime-sizes", default="100,300",
                    help="identities of the regimes stage (uncapped and capped sizes)")
    ap.add_argument("--regime-clients", type=int, default=10,
                    help="clients compressed by each arm of the regimes stage")
    ap.add_argument("--regime-rounds", type=int, default=1,
                    help="interleaved rounds of the regimes stage's arms (median)")
    ap.add_argument("--regime-max-impostors", type=int, default=DEFAULT_MAX_IMPOSTORS,
                    help="--max-impostors of the regimes stage's capped arms")
    ap.add_argument("--baseline", default=None,
                    help="git ref: the regimes stage also runs its smallest size's arms "
                         "with that commit's code (before/after)")
    ap.add_argument("--acc-identities", type=int, default=400)
    ap.add_argument("--acc-clients", type=int, default=100,
                    help="synthetic clients compressed (0 = all)")
    ap.add_argument("--lfw-clients", type=int, default=0, help="LFW clients (0 = all 158)")
    ap.add_argument("--acc-seeds", default="0,1,2",
                    help="seeds (random_state) of the paired capped/uncapped runs")
    ap.add_argument("--acc-jobs", type=int, default=2, help="compress --jobs of the accuracy runs")
    ap.add_argument("--acc-caps", default=str(DEFAULT_MAX_IMPOSTORS),
                    help="impostor caps K compared with the uncapped run (comma-separated)")
    ap.add_argument("--acc-impostors", default="sample",
                    help="impostor modes compared with the uncapped run (comma-separated)")
    ap.add_argument("--acc-sets", default="synthetic,lfw", help="accuracy data sets")
    ap.add_argument("--lfw-matchers", default="eigenface,dlib",
                    help="matchers of the LFW accuracy rows (comma-separated)")
    ap.add_argument("--stages", default="per_client," + ",".join(STAGES),
                    help="stages to run (comma-separated)")
    ap.add_argument("--page", default=None,
                    help="page name under docs/benchmarks (default: 'scale' when every "
                         "stage runs; a partial run writes a page only when named)")
    ap.add_argument("--quick", action="store_true", help="small sizes; no page written")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.clients, args.parallel_clients = "100,300", 6, 8
        args.regime_clients = 4
        args.big_gallery, args.acc_identities, args.acc_clients, args.lfw_clients = \
            500, 60, 10, 10
        args.acc_seeds = "0"
    return args


def main(argv=None):
    args = _parse(argv)
    stages = args.stages.split(",")
    partial = set(stages) != {"per_client", *STAGES}
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = tempfile.mkdtemp(prefix="ssgallery-scale-")
    rows = []
    pc = {}
    try:
        if "per_client" in stages:
            pc = per_client(tmp, sizes, args.clients)
            rows += _per_client_rows(pc, sizes)
        for stage in (STAGES[name] for name in stages if name in STAGES):
            try:
                rows += stage(args, pc, tmp)
            except Exception as exc:  # noqa: BLE001 - a failed stage is reported, not fatal
                say(f"{stage.__name__} failed: {exc!r}")
                rows.append([stage.__name__.strip("_").replace("_rows", ""), "failed", ""])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = markdown_table(["measure", "value", "target"], rows)
    print(table)
    if args.quick or (partial and not args.page):
        return
    title = {("accuracy",): "Compress at scale: what the impostor cap costs in accuracy",
             ("regimes",): "Compress: what one client costs in each regime",
             ("per_client",): "Compress at scale: bounded work per client",
             ("parallel", "startup"): "Compress at scale: parallel and distributed"}.get(
        tuple(stages), "Compress at scale: bounded, parallel, distributed")
    write_page(args.page or "scale", title, table,
               notes=" ".join(NOTES[name](args, pc, sizes) for name in stages),
               output="\n".join(LOG))


NOTES = {
    "per_client": lambda args, pc, sizes: (
        f"Synthetic faces (`ssgallery synth`, 6 images per identity; eigenface basis fitted "
        f"on the first {FIT_IDENTITIES} identities, the others added with `enroll --add`), "
        f"`compress --m 2`, default impostor cap K = {DEFAULT_MAX_IMPOSTORS}. Per-client "
        f"time is the CPU time of training a client (mean over {args.clients} clients, "
        "`cpu_seconds` of `compress --json`: CPU time because the machine's load varies), "
        "peak RSS that of the whole `ssgallery compress` (or `enroll --add`) process. "
        f"A store of fewer than K + 6 = {DEFAULT_MAX_IMPOSTORS + 6} images is compressed "
        "uncapped (every client trains on every stored image, and the threshold CV refits "
        "the matcher per fold, from the stores' Gram matrix): a different regime, whose "
        "cost is on [the regimes page](scale_regimes.md), so its peak RSS is not a point of "
        "the capped curve."),
    "regimes": lambda args, pc, sizes: (
        f"Regimes: `compress --m 2` of the first {args.regime_clients} clients of synthetic "
        f"stores of {args.regime_sizes} identities (6 images each), every arm in a "
        "subprocess, the arms interleaved over "
        f"{args.regime_rounds} round(s) (median). Per client: CPU time (user + sys) of "
        "the whole process divided by the clients (start-up, store, features and the "
        "refits shared by every client included), the training CPU (`cpu_seconds` of "
        "`--json`: the per-client job, the client's own fold refit included) and wall "
        "time (meaningful only on an otherwise idle machine); peak RSS of the process. "
        "Uncapped: every client trains on every stored image; the default then refits "
        "the matcher per threshold-CV fold (docs/operating-points.md). The baseline "
        "arms, if any, run the named commit's code on the same store."),
    "parallel": lambda args, pc, sizes: (
        f"Parallel: wall time of `compress` of {args.parallel_clients} clients of "
        f"{args.parallel_identities} synthetic identities, serial, `--jobs 2` and a Dask "
        "LocalCluster of 2 single-threaded worker processes on 127.0.0.1 (wall time: "
        "meaningful only on an otherwise idle machine; see the load average above)."),
    "startup": lambda args, pc, sizes: (
        f"Start-up: the 20- and {args.big_gallery:,}-client galleries are random valid "
        "models written with write_gallery (no training); median wall time of `ssgallery "
        "verify` (one probe) and `ssgallery info`."),
    "accuracy": lambda args, pc, sizes: (
        "Accuracy: each subject's last 3 images held out; mean over the first clients (all "
        "of LFW unless `--lfw-clients`) of the EER of the compressed model (m = 2) on every "
        "held-out image (genuine: the client's own), each cap K against the uncapped run "
        f"with the same clients and the same seed (`random_state`), seeds {args.acc_seeds}; "
        "mean over seeds, SE = standard error over clients of the seed-averaged per-client "
        "difference. The seed also drives the learner's own random choices (the folds "
        "selecting the SVM's C), so the uncapped run's EER varies with it (first row of "
        "each set). A mean can hide a failed person: each comparison also counts the "
        "client models (client and seed) whose EER is more than 5 points above the same "
        "client's uncapped model, beside the same count between the uncapped runs of "
        "successive seeds (nothing but the seed changed: the count's noise). Thresholds "
        "are not used by an EER; the runs skip the threshold CV (`cv_folds=0`), which "
        "leaves the trained models unchanged."),
}


if __name__ == "__main__":
    main()
