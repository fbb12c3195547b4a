"""benchmarks/paper_lfw_dlibbox.py's per-client results: kept in a file between runs
(`results_file`, `read_results`, `add_record`: a run stopped by ``--time-budget``
continues where it stopped) and printed from the arms' rows: the table of methods
(`HEAD`, `table_rows`), every client's EER (`client_lines`), the clients much worse than
their SVM (`worst_lines`), what the SSVM variants did to their prototypes
(`move_lines`) and issue 21's goals (`goal_lines`)."""

import hashlib
import json
from pathlib import Path

import numpy as np

WORSE = 0.05  # a client model "much worse" than its SVM: more than 5 points of EER


def move_lines(arm):
    """Per SSVM variant: the prototypes' moves and the training objective."""
    lines = []
    for name, rs in arm.rows.items():
        if "move" in rs[0]:
            mean = lambda key, rs=rs: np.mean([r[key] for r in rs])
            rose = sum(r["omega"] > r["omega0"] * (1 + 1e-9) for r in rs)
            lines.append(f"  {name}: RMS move {mean('move'):5.1f} grey levels, "
                         f"{100 * mean('clip'):4.1f} % of pixels clipped to 0/255; training "
                         f"Omega {mean('omega0'):.4f} -> {mean('omega'):.4f}, higher at the "
                         f"end for {rose} of {len(rs)} clients")
            start = arm.rows.get(f"ssvm start {name.split()[-1]}")
            if start is not None and start is not rs:
                d = 100 * np.array([r["eer"] - r0["eer"] for r, r0 in zip(rs, start)])
                done = "swapping" if name.startswith("ssvm swap") else "moving"
                lines.append(f"    {done} them changed the client EER by {d.mean():+.2f} "
                             f"points on average: better for {int((d < -0.5).sum())}, worse "
                             f"for {int((d > 0.5).sum())} of {len(d)} clients (by more than "
                             f"0.5 point) than at the start")
    return lines


HEAD = ["arm", "method", "client EER %", "FRR@FAR=1% %", "matches", "runs/client",
        "pairs/client", "train s/client", "gap to SVM", "> 5 worse", "largest gap"]


def table_rows(title, arm):
    """One row per method: the means, then the per-client gap to its SVM (points)."""
    svm = 100 * np.array([r["eer"] for r in arm.rows["svm"]])
    rows = []
    for name, rs in arm.rows.items():
        mean = lambda key, rs=rs: np.mean([r[key] for r in rs])
        cost = ([f"{mean('runs'):.1f}", f"{mean('pairs'):.0f}", f"{mean('wall'):.2f}"]
                if "runs" in rs[0] else ["-", "-", "-"])
        gap = 100 * np.array([r["eer"] for r in rs]) - svm
        gaps = (["-", "-", "-"] if name == "svm" else
                [f"{gap.mean():+.2f}", f"{int((gap > 100 * WORSE).sum())}/{len(gap)}",
                 f"{gap.max():+.1f}"])
        rows.append([title, name, f"{100 * mean('eer'):.2f}", f"{100 * mean('frr1'):.2f}",
                     f"{mean('matches'):.1f}"] + cost + gaps)
    return rows


def worst_lines(arm, clients, k=5):
    """Per reduced model, every client more than 5 points worse than its SVM, or the
    k of largest gap when fewer are."""
    svm = 100 * np.array([r["eer"] for r in arm.rows["svm"]])
    lines = []
    for name, rs in arm.rows.items():
        if name != "svm":
            gap = 100 * np.array([r["eer"] for r in rs]) - svm
            top = np.argsort(-gap, kind="stable")[: max(k, int((gap > 100 * WORSE).sum()))]
            lines.append(f"  {name}: " + ", ".join(f"{clients[i]} {gap[i]:+.1f}" for i in top))
    return lines


def client_lines(bb, an, clients):
    """Every client's EER (%) in every method: the whole tail, not only its worst."""
    arms = [("", bb), ("dlib ", an)]
    names = [(prefix, arm, name) for prefix, arm in arms for name in arm.rows]
    head = ["client"] + [prefix + name for prefix, _, name in names]
    rows = [[c] + [f"{100 * arm.rows[name][i]['eer']:.1f}" for _, arm, name in names]
            for i, c in enumerate(clients)]
    return text_table(head, rows).splitlines()


def goal_lines(arm):
    """Issue 21's goals per SSVM: mean client EER within 1 point of its SVM (item 4's
    goal), and no client more than 5 points worse than its SVM (the tail target the
    issue states for EBGM)."""
    svm = 100 * np.array([r["eer"] for r in arm.rows["svm"]])
    lines = []
    for name, rs in arm.rows.items():
        if name.startswith("ssvm"):
            e = 100 * np.array([r["eer"] for r in rs])
            worse = int((e - svm > 100 * WORSE).sum())
            lines += [(f"  {'PASS' if e.mean() <= svm.mean() + 1 else 'MISS'}  {name}: mean "
                      f"client EER {e.mean():.2f} % vs its SVM's {svm.mean():.2f} %"),
                      (f"  {'PASS' if worse == 0 else 'MISS'}  {name}: {worse} of {len(e)} "
                      f"clients more than 5 points worse than their SVM")]
    return lines


def text_table(head, rows):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(head), "-" * len(line(head))] + [line(r) for r in rows])


def results_file(args, folder):
    """The per-client results of this configuration (one JSON line per client), so a
    run stopped by ``--time-budget`` continues where it stopped."""
    config = {k: getattr(args, k) for k in ("faces", "people", "repetitions", "seed", "m",
                                            "max_iter", "eta", "lam", "variants")}
    tag = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    return Path(folder) / f"results-{tag}.jsonl"


def read_results(path):
    """{(repetition, client): record} of the clients already measured."""
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            done[(rec["repetition"], rec["client"])] = rec
    return done


def add_record(rec, bb, an, clients, loads, commits):
    """Put one client's rows (measured now or read back) into the arms."""
    for arm, key in ((bb, "bb"), (an, "an")):
        for name, row in rec[key].items():
            arm.rows.setdefault(name, []).append(row)
    clients.append(f"{rec['client']}/{rec['repetition']}")
    loads.append(rec["load"])
    commits.add(rec["commit"])
