"""Can compress name the clients that accept strangers far more often than the target?

`compress --target-far F` sets one normalised threshold T for every client
(znorm-global, the default) and promises about F of the strangers' claims on average;
`info` names the clients whose held-out FRR is high, but no client that accepts
strangers far more often than F. At compress time each client's own FAR can be read
only off its held-out impostor scores: the threshold CV's accepts that compress already
counts for the expected FAR (`ssgallery.biometrics.calibration.calibrate_thresholds`,
``by_client``: the same accepts, per client), with a 95 % interval by impostor person
(`ssgallery.biometrics.intervals.sums_interval` of that client's `person_sums`: one
person's images are accepted together).

Per run: a gallery compressed with compress's defaults (the library function behind the
command, seed = run), every image of every stranger (never enrolled, not even as
background) claimed against every client at the thresholds it stores (`roc --gallery`'s
scoring). Per client: its held-out FAR and interval beside its FAR on the strangers.

- synth: 20 identities x 10 images enrolled (seed 1 + run), 300 strangers of seed 1000
  (benchmarks/strangers.py's split).
- att: 20 AT&T subjects enrolled with 5 images, the other 20 subjects are the strangers
  (benchmarks/strangers.py's split), eigenface.
- lfw: 40 LFW people enrolled with 5 images each and 60 others as background
  (`enroll --background`: impostors at compress time), dlib; the other people (every
  image) are the strangers (benchmarks/calibration.py's split, seed 1000 * 0 + run).

An **over-acceptor** is a client whose stranger FAR is above 2 F with at least
``--min-accepts`` (5) stranger claims accepted. Two rules that compress could apply,
both on clients whose count is held out (not fitted on its own scores, not on training
scores): "point": held-out FAR above 2 F; "interval": the lower end of the client's
95 % interval by impostor person above F (the whole interval above the target). For
each: how many clients it names, how many of those are over-acceptors ("right") and
how many accept strangers at no more than F ("fine"), and how many over-acceptors it
misses. "held-out people": the impostor people behind one client's held-out scores
(the clusters of its interval).

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/client_far.py \
        [--datasets lfw,att,synth] [--repetitions 4] [--page]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

HERE = Path(__file__).resolve().parent
RULES = ("point", "interval")


def _bench(name):
    sys.path.insert(0, str(HERE))
    return __import__(name)


def _lfw_run(work, run, args):
    """(store, probes folder, background names) of one LFW run (dlib)."""
    split = _bench("calibration")
    from ssgallery.app.enroll import enroll
    from ssgallery.datasets import lfw_path

    subjects = split.face_subjects(Path(lfw_path()), 6)
    rng = np.random.default_rng(run)
    chosen = split.enrol_split(subjects, args.lfw_enrolled, 5, rng, work)
    background = split._background(subjects, chosen, args.lfw_background, rng, work)
    enroll(work / "train", work / "e.h5", matcher="dlib", warn=lambda m: None,
           background=work / "background")
    return work / "e.h5", work / "probes", background


def _store(dataset, work, run, args):
    strangers = _bench("strangers")
    if dataset == "lfw":
        return _lfw_run(work, run, args)
    sizes = SimpleNamespace(identities=args.identities, strangers=args.strangers, fresh=2,
                            att_enrolled=20)
    store, probes = (strangers._synth_run if dataset == "synth" else
                     strangers._att_run)(work, run, sizes)
    return store, probes, []


def run_one(dataset, run, args):
    """Per client of one run: held-out accepts, people and interval; stranger accepts."""
    from ssgallery.app.compress import CompressOptions, compress
    from ssgallery.app.roc import score_gallery
    from ssgallery.biometrics.calibration import calibrate_thresholds
    from ssgallery.biometrics.intervals import person_sums, sums_interval
    from ssgallery.formats.store import load_store

    with tempfile.TemporaryDirectory(prefix="ssg-clientfar-") as tmp:
        work = Path(tmp)
        store, probes, background = _store(dataset, work, run, args)
        summary = compress(store, work / "g.h5", CompressOptions(seed=run))
        table = score_gallery(work / "g.h5", probes, warn=lambda m: None)
        labels = np.asarray(load_store(store, images=False).labels).astype(str)
    order = [r["client"] for r in summary.clients]
    held = [summary.heldout[c] for c in order]
    people = [labels[np.asarray(h["impostor_row"], dtype=int)] for h in held]
    t, info = calibrate_thresholds([h["impostor"] for h in held],
                                   [r["normalization"] for r in summary.clients],
                                   summary.target_far, "znorm-global", people=people)
    assert np.allclose(t, [table.clients[c]["threshold"] for c in order]), "not compress's"
    stranger = ~np.isin(table.real, [*order, *background])
    rows = []
    for c, tc, h, sums in zip(order, t, held, info["by_client"]):
        mine = stranger & (table.claimed == c)
        acc = table.score[mine] >= tc  # NaN (failure to acquire): rejected
        fitted = sums is None  # its threshold sits on the very scores counted
        sums = person_sums([[]], [[]]) if fitted else sums
        low, high, _ = sums_interval(sums)
        rows.append({"client": c, "held_k": int(sums["k"]), "held_n": int(sums["n"]),
                     "held_people": sums["clusters"], "low": low, "high": high,
                     "counted": c not in (summary.not_held_out or ()) and not fitted,
                     "k": int(acc.sum()), "n": int(acc.size),
                     "people_accepted": int(np.unique(table.real[mine][acc]).size)})
    return {"dataset": dataset, "run": run, "target_far": summary.target_far,
            "strangers": int(np.unique(table.real[stranger]).size),
            "expected_far": info["expected_far"], "clients": rows}


def over(row, far, min_accepts):
    """An over-acceptor: stranger FAR above 2 F with at least ``min_accepts`` accepts."""
    return row["n"] > 0 and row["k"] / row["n"] > 2 * far and row["k"] >= min_accepts


def named(row, far, rule):
    """Whether ``rule`` names the client (held-out counts only)."""
    if not row["counted"] or row["held_n"] <= 0:
        return False
    if rule == "point":
        return row["held_k"] / row["held_n"] > 2 * far
    return row["low"] > far


def tally(rows, far, min_accepts):
    """{rule: (named, right, fine, missed)} and the over-acceptors' count."""
    bad = [over(r, far, min_accepts) for r in rows]
    out = {}
    for rule in RULES:
        n = [named(r, far, rule) for r in rows]
        fine = [x and r["k"] / max(r["n"], 1) <= far for x, r in zip(n, rows)]
        out[rule] = (sum(n), sum(x and b for x, b in zip(n, bad)), sum(fine),
                     sum(b and not x for x, b in zip(n, bad)))
    return out, sum(bad)


def _pct(x):
    return f"{100 * x:.2f}"


def _client(r):
    return (f"{r['client']} {_pct(r['k'] / max(r['n'], 1))} ({r['k']}/{r['n']}; held out "
            f"{r['held_k']}/{r['held_n']}, [{_pct(r['low'])}, {_pct(r['high'])}])")


def run_rows(runs, min_accepts):
    rows = []
    for x in runs:
        far = x["target_far"]
        t, _ = tally(x["clients"], far, min_accepts)
        worst = sorted(x["clients"], key=lambda r: -r["k"] / max(r["n"], 1))
        rows.append([x["dataset"], str(x["run"]), str(len(x["clients"])),
                     str(x["strangers"]),
                     str(int(np.median([r["held_people"] for r in x["clients"]]))),
                     _pct(x["expected_far"]),
                     _pct(sum(r["k"] for r in x["clients"])
                          / max(sum(r["n"] for r in x["clients"]), 1)),
                     ", ".join(_client(r) for r in worst if over(r, far, min_accepts))
                     or "none",
                     *(f"{t[rule][0]} ({t[rule][1]} right, {t[rule][2]} fine); "
                       f"missed {t[rule][3]}" for rule in RULES),
                     "; ".join(_client(r) for r in x["clients"]
                               if named(r, far, "interval")) or "none"])
    return rows


HEAD = ["data set", "run", "clients", "strangers", "held-out people per client (median)",
        "expected FAR % (info)", "stranger FAR % (all clients)",
        "over-acceptors: stranger FAR % (accepted/claims; held out k/n, [95 % by person])",
        "point rule: named (right, fine); missed", "interval rule: named (right, fine); missed",
        "named by the interval rule"]


def summary_lines(runs, min_accepts):
    """Per data set over its runs: over-acceptors, and per rule named / right / fine /
    missed; the Spearman correlation of held-out and stranger FAR."""
    from scipy.stats import spearmanr

    lines = []
    for d in dict.fromkeys(x["dataset"] for x in runs):
        mine = [x for x in runs if x["dataset"] == d]
        total, bad = np.zeros((len(RULES), 4), int), 0
        for x in mine:
            t, b = tally(x["clients"], x["target_far"], min_accepts)
            total += np.array([t[rule] for rule in RULES])
            bad += b
        pairs = np.array([(r["held_k"] / max(r["held_n"], 1), r["k"] / max(r["n"], 1))
                          for x in mine for r in x["clients"]])
        rho = spearmanr(*pairs.T).statistic
        models = len(pairs)
        counted = [r for x in mine for r in x["clients"] if r["counted"]]
        low, high = (np.median([r[k] for r in counted]) for k in ("low", "high"))
        lines.append(f"- {d}: {bad} over-acceptors among {models} client models "
                     f"({len(mine)} runs); "
                     + "; ".join(f"{rule} rule names {n} ({r} over-acceptors, {f} fine), "
                                 f"misses {m}" for rule, (n, r, f, m) in zip(RULES, total))
                     + f"; Spearman {rho:+.2f} between held-out and stranger FAR; a "
                     f"client's 95 % interval by person: median [{_pct(low)}, {_pct(high)}] %"
                     + ("; no client's interval lies wholly above the target (the rule "
                        "compress and info apply): too few held-out scores per client to "
                        "name one" if total[1][0] == 0 else ""))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="lfw,att,synth")
    parser.add_argument("--repetitions", type=int, default=4)
    parser.add_argument("--identities", type=int, default=20, help="synth: enrolled")
    parser.add_argument("--strangers", type=int, default=300, help="synth: strangers")
    parser.add_argument("--lfw-enrolled", type=int, default=40)
    parser.add_argument("--lfw-background", type=int, default=60)
    parser.add_argument("--min-accepts", type=int, default=5)
    parser.add_argument("--dlib-cache", default=None,
                        help="dlib descriptor cache (deep.save_cache) read and updated "
                             "[benchmarks/out/client_far/dlib_descriptors.npz]")
    parser.add_argument("--page", action="store_true",
                        help="write docs/benchmarks/client_far.md")
    args = parser.parse_args(argv)
    r = _bench("_results")
    out = r.OUT / "client_far"
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.dlib_cache or out / "dlib_descriptors.npz")
    datasets = [d for d in args.datasets.split(",") if d]
    if "lfw" in datasets and cache.exists():
        from ssgallery.matchers import deep

        print(f"{deep.load_cache(cache)} cached dlib descriptors", file=sys.stderr)
    runs = []
    for dataset in datasets:
        for run in range(args.repetitions):
            runs.append(run_one(dataset, run, args))
            t, bad = tally(runs[-1]["clients"], runs[-1]["target_far"], args.min_accepts)
            print(f"{dataset} run {run}: {bad} over-acceptors; " + ", ".join(
                f"{k} names {v[0]} ({v[1]} right)" for k, v in t.items()),
                file=sys.stderr, flush=True)
        if dataset == "lfw":
            from ssgallery.matchers import deep

            deep.save_cache(cache)
    (out / "results.json").write_text(json.dumps(runs, indent=1) + "\n")
    if args.page:
        r.write_page("client_far", "Per client: clients that accept strangers",
                     r.markdown_table(HEAD, run_rows(runs, args.min_accepts)) + "\n\n"
                     + "\n".join(summary_lines(runs, args.min_accepts)),
                     notes=r.docstring(__doc__))
    return runs


if __name__ == "__main__":
    main()
