"""The ``compress --guard`` arm of ``benchmarks/paper_att_ebgm.py``: each client trained
by ``compress``'s own function (`ssgallery.app.client_fit.train_client`) in a fresh
matcher process, scored on the test claims, and the guard's detection against the
truth on those claims (the arms and the report are described in the script's
docstring)."""

import os
import resource
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from ssgallery.biometrics.metrics import eer, frr_at_far
from ssgallery.matchers.external import ExternalMatcher

GUARD_ARMS = ("compress", "compress --guard", "guard + svm fallback", "flag -> svm")
COMPRESS_SWAP = "compress, swaps"  # compress --swap-rounds N: train_client, no guard
BAD = 5.0  # EER points above the client's SVM on the test claims: a bad client model


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def training_cost(matcher):
    """What the block costs, in a dict filled on exit: ``train_wall``, ``train_cpu``
    (seconds, the matcher processes' CPU included), ``calls`` (program runs) and
    ``pairs`` (pairs the program scored)."""
    cost = {}
    calls, pairs = matcher.n_calls_, matcher.n_pairs_
    t0, c0 = time.perf_counter(), cpu_seconds()
    yield cost
    cost.update(train_wall=time.perf_counter() - t0, train_cpu=cpu_seconds() - c0,
                calls=matcher.n_calls_ - calls, pairs=matcher.n_pairs_ - pairs)


def ebgm_command(cache):
    exe = shutil.which("ssgallery-ebgm") or os.path.join(os.path.dirname(sys.executable),
                                                         "ssgallery-ebgm")
    return [exe, "--cache-dir", cache]


def score(model, matches, gen, imp):
    """EER and FRR at FAR = 1 % of ``model`` on one client's test claims."""
    s_gen, s_imp = model.decision_function(gen), model.decision_function(imp)
    return {"eer": eer(s_imp, s_gen), "frr1": frr_at_far(s_imp, s_gen, 0.01),
            "matches": matches}


def guard_job(args, images_tr, y, groups, gen, imp, jets):
    """One client as ``compress --guard`` trains it, in a matcher of its own (fitted on
    the training images, holding their similarities S(X, X) as compress's shared Gram
    matrix does), and its rows: the first fit, the kept fit and its SVM on the test
    claims, the guard's record, and the matcher runs and wall/CPU time of the whole
    ``train_client`` call (first fit, threshold-CV refits, repairs)."""
    from ssgallery.app.client_fit import GUARD_GAP, train_client
    from ssgallery.app.options import CompressOptions

    matcher = ExternalMatcher(ebgm_command(jets), timeout_per_pair=0.05,
                              cache_dir=args.pair_cache).fit(images_tr)
    try:
        sim, X = matcher.similarity(), matcher.transform(images_tr)
        gram = sim(X, X)  # compress: one S(X, X) for every client, before any training
        opts = CompressOptions(m=args.m, lam=args.lam, solver=args.solver, init=args.init,
                               max_iter=args.max_iter, refresh_every=args.refresh_every,
                               guard=True, swap_rounds=0)  # the arm as published: no swaps
        with training_cost(matcher) as cost:
            fit = train_client(X, y, sim, opts, groups=groups, bounds=matcher.bounds(),
                               gram=gram)
        guard = fit.cv.get("guard") or {"attempts": [["first fit", fit.cv["teacher_gap"]]],
                                        "ok": True}
        first = fit.first_distiller if fit.first_distiller is not None else fit.distiller
        gen, imp = matcher.transform(gen), matcher.transform(imp)
        swap = None
        if args.swap_rounds:  # compress --swap-rounds N: the same call, its own cost
            with training_cost(matcher) as swap_cost:
                swapped = train_client(X, y, sim, replace(opts, guard=False,
                                                          swap_rounds=args.swap_rounds),
                                       groups=groups, bounds=matcher.bounds(), gram=gram)
            swap = {**score(swapped.distiller, len(swapped.distiller.beta_), gen, imp),
                    **swap_cost}
        return {"first": score(first, len(first.beta_), gen, imp), "swap": swap,
                "kept": score(fit.distiller, len(fit.distiller.beta_), gen, imp),
                "svm": score(fit.svm, int(fit.svm.n_support_total_), gen, imp),
                "attempts": guard["attempts"], "ok": guard["ok"],
                "flagged": bool((guard["attempts"][0][1] or 0.0) > GUARD_GAP),
                "gap_before": guard["attempts"][0][1], "gap_after": fit.cv["teacher_gap"],
                "cost": cost}
    finally:
        matcher.close()


def record_guard(results, out, svm_row):
    """Append one client's `guard_job` rows to the four `GUARD_ARMS` and print its line.

    ``guard + svm fallback`` is the client's SVM where the guard still fails, ``flag ->
    svm`` as soon as the first fit is flagged. The cost of ``compress`` and ``flag -> svm``
    on a flagged client (its first fit and threshold CV alone) is not measured: None."""
    rows = {"compress": out["first"], "compress --guard": out["kept"],
            "guard + svm fallback": out["kept"] if out["ok"] else out["svm"],
            "flag -> svm": out["svm"] if out["flagged"] else out["first"]}
    info = {k: out[k] for k in ("flagged", "ok", "gap_before", "gap_after", "attempts")}
    for name in GUARD_ARMS:
        alone = name in ("compress", "flag -> svm") and out["flagged"]  # not timed alone
        cost = dict.fromkeys(out["cost"]) if alone else out["cost"]
        results[name].append({**rows[name], "client": svm_row["client"],
                              "svm_eer": svm_row["eer"], **info, **cost})
    if out["swap"] is not None:
        results[COMPRESS_SWAP].append({**out["swap"], "client": svm_row["client"],
                                       "svm_eer": svm_row["eer"]})
    tried = ", ".join(f"{a} {g:.3f}" for a, g in out["attempts"][1:])
    print(f"  {svm_row['client']}: guard gap {_gap(out['gap_before'])}"
          + (" flagged" if out["flagged"] else "")
          + (f"; tried {tried}; kept gap {out['gap_after']:.3f}"
             f" ({'ok' if out['ok'] else 'still above'})" if tried else "")
          + f"; test EER svm {100 * svm_row['eer']:.1f} (train_client's "
          f"{100 * out['svm']['eer']:.1f}, {out['svm']['matches']} SVs), first fit "
          f"{100 * out['first']['eer']:.1f}, kept {100 * out['kept']['eer']:.1f}; "
          f"{out['cost']['calls']} runs, {out['cost']['train_wall']:.1f} s"
          + (f"; swap-rounds {100 * out['swap']['eer']:.1f}, {out['swap']['calls']} runs, "
             f"{out['swap']['train_wall']:.1f} s" if out["swap"] else ""), flush=True)


def _gap(value):
    """A held-out gap as printed: None when the threshold CV held nothing out."""
    return "n/a" if value is None else f"{value:.3f}"


def run_guard_arm(args, jobs, results, svm_rows, jets):
    """`guard_job` for each client of a repetition (``jobs``: argument tuples), on
    ``args.jobs`` worker processes, recorded in order."""
    from joblib import Parallel, delayed

    outs = Parallel(n_jobs=args.jobs)(delayed(guard_job)(args, *job, jets) for job in jobs)
    for out, svm_row in zip(outs, svm_rows):
        record_guard(results, out, svm_row)


# issue 21's targets against the SVM: mean client EER, FRR at FAR 1 % (points), client
# models more than BAD points worse; cost: matcher runs or wall per client of the
# published SSVM arm (docs/benchmarks/paper_att_ebgm.md at e391b4a: 34.9 runs, 5.8 s)
TARGET_EER, TARGET_FRR, TARGET_RUNS, TARGET_WALL = 0.5, 1.5, 34.9, 1.5 * 5.8


def targets(results):
    """Issue 21's targets, MET or MISSED, for every arm distilled from the SVM."""
    svm = results["svm"]
    arms = [name for name in results if name not in ("svm", "svm-sel", "svm-red")
            and results[name] and len(results[name]) == len(svm)]
    if not svm or not arms:
        return
    mean = lambda rows, k: 100 * np.mean([r[k] for r in rows])
    print("\nIssue 21's targets (against the svm row; cost: matcher runs or wall per client)")
    for name in arms:
        rows = results[name]
        d_eer, d_frr = mean(rows, "eer") - mean(svm, "eer"), mean(rows, "frr1") - mean(svm, "frr1")
        worse = int(sum(100 * (r["eer"] - s["eer"]) > BAD for r, s in zip(rows, svm)))
        measured = [r for r in rows if r.get("calls") is not None]
        runs = np.mean([r["calls"] for r in measured])
        wall = np.mean([r["train_wall"] for r in measured])
        verdict = lambda ok: "MET" if ok else "MISSED"
        print(f"  {name:20s} EER {d_eer:+5.2f} {verdict(d_eer <= TARGET_EER):6s} FRR@1% "
              f"{d_frr:+5.2f} {verdict(d_frr <= TARGET_FRR):6s} worse > {BAD:g}: {worse:2d} "
              f"{verdict(worse == 0):6s} cost {runs:6.1f} runs {wall:5.1f} s "
              f"{verdict(runs <= TARGET_RUNS or wall <= TARGET_WALL)}")


def _confusion(label, bad, flag, what):
    print(f"  {label:9s} {what:24s} bad {int((bad & flag).sum()):3d}  fine "
          f"{int((~bad & flag).sum()):3d}")
    print(f"  {label:9s} {'not ' + what.split(' (')[0]:24s} bad {int((bad & ~flag).sum()):3d}"
          f"  fine {int((~bad & ~flag).sum()):3d}")


def guard_report(results):
    """The guard's detection against the truth on the test claims, and its cost."""
    rows = results["compress --guard"]
    if not rows:
        return
    svm = 100 * np.array([r["svm_eer"] for r in rows])
    first = 100 * np.array([r["eer"] for r in results["compress"]]) - svm > BAD
    kept = 100 * np.array([r["eer"] for r in rows]) - svm > BAD
    flagged = np.array([r["flagged"] for r in rows])
    failed = ~np.array([r["ok"] for r in rows])
    print(f"\nThe guard's detection (bad: test EER more than {BAD:g} points above the SVM's), "
          f"{len(rows)} client models")
    _confusion("first fit", first, flagged, "flagged (gap > 0.05)")
    _confusion("kept fit", kept, failed, "still failed (gap > 0.05)")
    names = lambda mask: ", ".join(r["client"] for r, b in zip(rows, mask) if b) or "none"
    print(f"  bad first fits the guard did not flag: {names(first & ~flagged)}")
    print(f"  bad kept fits: {names(kept)}")
    print("  flagged (held-out gap first -> kept; test EER first -> kept, svm):")
    for r, r0 in zip(rows, results["compress"]):
        if r["flagged"]:
            print(f"    {r['client']}: {_gap(r['gap_before'])} -> {_gap(r['gap_after'])}"
                  f"{'' if r['ok'] else ' (still failed)'}; {100 * r0['eer']:.1f} -> "
                  f"{100 * r['eer']:.1f}, svm {100 * r['svm_eer']:.1f}")
    for label, mask in (("not flagged", ~flagged), ("flagged", flagged)):
        if mask.any():
            runs = np.array([r["calls"] for r, b in zip(rows, mask) if b])
            wall = np.array([r["train_wall"] for r, b in zip(rows, mask) if b])
            print(f"  train_client cost, {label} ({int(mask.sum())}): {runs.mean():.1f} matcher "
                  f"runs (worst {runs.max()}), {wall.mean():.1f} s wall (worst {wall.max():.1f} s)")
