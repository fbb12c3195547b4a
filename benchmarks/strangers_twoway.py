"""Does clustering the FAR interval by person and client cover the strangers' FAR better?

`info`'s interval of the expected FAR is clustered by impostor person only; a stranger's
claims against one client model share that model too. Per run of
benchmarks/strangers.py (the same galleries, seeds and strangers: its `person` pool,
what compress ships), the measured stranger FAR beside the interval by impostor person
(`info`'s) and the two-way interval by person and client (benchmarks/_strangers_twoway.py,
Cameron-Gelbach-Miller), with their design effects; under the table, per data set, how
many runs' measured FAR each interval holds, and their mean width.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/strangers_twoway.py \
        [--datasets synth,att] [--repetitions 10] [--page]
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _inside(m, ci):
    return ci[0] <= m["accepted"] / m["claims"] <= ci[1]


def _row(r, pct):
    m = r["rows"]["person"]
    far = m["accepted"] / m["claims"]
    return [r["dataset"], str(r["run"]),
            f"{pct(far)} [{pct(m['interval'][0])}, {pct(m['interval'][1])}]",
            f"[{pct(m['person_ci'][0])}, {pct(m['person_ci'][1])}] ({m['design_effect']:.2f})",
            "yes" if _inside(m, m["person_ci"]) else "no",
            f"[{pct(m['twoway_ci'][0])}, {pct(m['twoway_ci'][1])}] ({m['twoway_d']:.2f})",
            "yes" if _inside(m, m["twoway_ci"]) else "no"]


HEAD = ["data set", "run", "measured stranger FAR % [95 % over people]",
        "[95 % by impostor person] (d; info)", "inside",
        "[95 % by person and client] (d)", "inside"]


def summary(runs, pct):
    """Per data set: runs inside each interval, misses below / above, mean widths."""
    lines = []
    for d in dict.fromkeys(r["dataset"] for r in runs):
        ms = [r["rows"]["person"] for r in runs if r["dataset"] == d]
        parts = []
        for key, name in (("person_ci", "by impostor person"),
                          ("twoway_ci", "by person and client")):
            inside = sum(_inside(m, m[key]) for m in ms)
            below = sum(m["accepted"] / m["claims"] < m[key][0] for m in ms)
            width = sum(m[key][1] - m[key][0] for m in ms) / len(ms)
            parts.append(f"{name} {inside} of {len(ms)} ({below} below, "
                         f"{len(ms) - inside - below} above; mean width {pct(width)} points)")
        lines.append(f"- {d}: the measured FAR inside the interval " + ", ".join(parts))
    return "\n".join(lines)


def main(argv=None):
    sys.path.insert(0, str(HERE))
    import _results as r
    import strangers

    args = strangers.run_options(__doc__, "strangers_twoway", 10).parse_args(argv)

    runs = []
    for dataset in [d for d in args.datasets.split(",") if d]:
        for run in range(args.repetitions):
            runs.append(strangers.run_one(dataset, run, args))
            m = runs[-1]["rows"]["person"]
            print(f"{dataset} run {run}: {m['accepted']}/{m['claims']}, by person "
                  f"{m['person_ci']}, two-way {m['twoway_ci']}", file=sys.stderr, flush=True)
    r.save_results("strangers_twoway", runs)
    if args.page:
        r.write_page("strangers_twoway", "Strangers: the FAR interval by person and client",
                     r.markdown_table(HEAD, [_row(x, r.pct) for x in runs]) + "\n\n"
                     + summary(runs, r.pct),
                     notes=r.docstring(__doc__) + "\n\n"
                     + r.docstring(sys.modules["_strangers_twoway"].__doc__))
    return runs


if __name__ == "__main__":
    main()
