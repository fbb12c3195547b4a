"""What one client costs in each regime of compress (issue 25): the regimes stage of
scale.py.

Synthetic stores (6 images per identity). At a size where nobody is capped (every
client trains on every stored image: up to --max-impostors + 1 people's images, i.e.
100 identities), compress refits the matcher per threshold-CV fold by default
(`--refit-matcher`, the calibration's refit); the arms are the default and
`--no-refit-matcher`. At a size where the cap bites (300 identities), the default is
capped (K impostor images per client, no refit), and the uncapped regime
(`--max-impostors 0`) is measured with and without the refit.

Each arm is one ``ssgallery compress --m 2`` of the same first clients, in a subprocess:
CPU time (user + sys) of the whole process per client (what a run costs: start-up, the
store, the features and the shared refits included), the training CPU per client
(``cpu_seconds`` of ``--json``: the per-client job, a client's own fold refit included),
wall time per client, and the process's peak RSS. The arms run in rounds, one run of
each per round in turn, so that a change of the machine's load hits every arm alike; a
figure is the median over rounds. ``--baseline REF`` adds the same commands run by
another tree (``git archive REF``) at the smallest size, for before/after figures.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent


def cli_run(args, tree=None):
    """``ssgallery ARGS`` in a subprocess (run by ``tree``'s code when given, through
    $PYTHONPATH, from a folder outside the repository): dict with ``out`` (stdout),
    ``rss`` (peak MiB), ``cpu`` (user + sys s) and ``wall`` (s), measured by a wrapper
    whose only child it is (``getrusage(RUSAGE_CHILDREN)``)."""
    code = ("import json, resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "w = time.perf_counter() - t; sys.stderr.write(r.stderr); "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(json.dumps({'out': r.stdout, 'rc': r.returncode, 'wall': w, "
            "'rss': u.ru_maxrss, 'cpu': u.ru_utime + u.ru_stime}))")
    env = dict(os.environ)
    command = [str(BIN / "ssgallery")]
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
        command = [sys.executable, "-m", "ssgallery"]
    r = subprocess.run([sys.executable, "-c", code, *command, *args], capture_output=True,
                       text=True, check=True, env=env, cwd=tempfile.gettempdir())
    res = json.loads(r.stdout)
    if res["rc"] != 0:
        raise SystemExit(f"ssgallery {args[0]} failed: {r.stderr[-500:]}")
    return {"out": res["out"], "rss": res["rss"] / 1024, "cpu": res["cpu"],
            "wall": res["wall"]}


def arms(sizes, max_impostors, baseline=None):
    """``(identities, label, extra compress args, tree label)`` of every arm."""
    out, cap = [], ["--max-impostors", str(max_impostors)]
    for n in sizes:
        if (n - 1) * 6 <= max_impostors:  # nobody capped
            out += [(n, "default (uncapped: refit)", cap, None),
                    (n, "--no-refit-matcher", [*cap, "--no-refit-matcher"], None)]
            if baseline is not None and n == min(sizes):
                out += [(n, "default (uncapped: refit)", cap, baseline),
                        (n, "--no-refit-matcher", [*cap, "--no-refit-matcher"], baseline)]
        else:
            out += [(n, f"default (capped, K = {max_impostors})", cap, None),
                    (n, "--max-impostors 0 (uncapped: refit)", ["--max-impostors", "0"], None),
                    (n, "--max-impostors 0 --no-refit-matcher",
                     ["--max-impostors", "0", "--no-refit-matcher"], None)]
    return out


def run_regimes(stores, n_clients, rounds, max_impostors, baseline=None, say=print):
    """Every arm ``rounds`` times, interleaved. ``stores``: identities -> (store path,
    client names); ``baseline``: (label, tree folder) or None. Returns {arm: medians}."""
    todo = arms(sorted(stores), max_impostors, baseline and baseline[0])
    runs = {arm[:2] + (arm[3],): [] for arm in todo}
    for r in range(rounds):
        for n, label, extra, tree in todo:
            store, names = stores[n]
            res = cli_run(["compress", "--store", str(store), "-o",
                           str(Path(store).parent / "regime.h5"), "--m", "2",
                           "--clients", ",".join(names[:n_clients]), "--json", *extra],
                          tree=baseline[1] if tree else None)
            summary = json.loads(res["out"])
            k = len(summary["clients"])
            row = {"cpu": res["cpu"] / k, "wall": res["wall"] / k, "rss": res["rss"],
                   "train": float(np.mean([c["cpu_seconds"] for c in summary["clients"]])),
                   "n_impostor": summary["clients"][0]["n_impostor"], "clients": k}
            runs[(n, label, tree)].append(row)
            say(f"round {r + 1}: {n} identities, {label}"
                + (f" [{tree}]" if tree else "") + f": {k} clients, "
                f"{row['cpu']:.2f} CPU s/client ({row['train']:.2f} training), "
                f"{row['wall']:.2f} s wall/client, peak RSS {row['rss']:.0f} MiB, "
                f"{row['n_impostor']} impostor images/client")
    return {arm: {key: float(np.median([x[key] for x in rs])) for key in rs[0]}
            for arm, rs in runs.items()}


def regime_rows(res, max_impostors):
    """Table rows: every arm's per-client cost, then the refit's price against
    ``--no-refit-matcher`` at each uncapped size (target <= 1.5x CPU and RSS)."""
    rows = []
    for (n, label, tree), r in res.items():
        who = f" ({tree})" if tree else ""
        rows.append([f"compress per client, {n:,} identities, {label}{who}",
                     (f"{r['cpu']:.2f} CPU s ({r['train']:.2f} training), "
                      f"{r['wall']:.2f} s wall; peak RSS {r['rss']:.0f} MiB; "
                      f"{r['n_impostor']:.0f} impostor images"), ""])
    for (n, label, tree), r in res.items():
        base = res.get((n, "--no-refit-matcher", tree))
        if base is None or not label.startswith("default (uncapped"):
            continue
        who = f" ({tree})" if tree else ""
        target = "" if tree else "<= 1.5x"
        rows.append([f"refit vs --no-refit-matcher, {n:,} identities{who}: CPU per client",
                     f"{r['cpu']:.2f} s vs {base['cpu']:.2f} s = {r['cpu'] / base['cpu']:.2f}x",
                     target])
        rows.append([f"refit vs --no-refit-matcher, {n:,} identities{who}: peak RSS",
                     f"{r['rss']:.0f} vs {base['rss']:.0f} MiB = {r['rss'] / base['rss']:.2f}x",
                     target])
    return rows
