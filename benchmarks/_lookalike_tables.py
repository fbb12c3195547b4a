"""benchmarks/lookalike_pairs.py's tables (its docstring says what it measures): per run
the pairs flagged at compress time with what their unseen claims met, the pairs missed,
the clients named (`run_rows`); per data set precision and recall of the flag for (a),
(b), (c) and the bar's verdict (`summary_lines`)."""

from _results import markdown_table, pct
from client_far import over

BAR = {"precision": 0.5, "recall": 0.25, "lift": 5.0}
REAL = ("att", "lfw")


def _ratio(k, n):
    return f"{k} / {n}" + (f" ({100 * k / n:.0f} %)" if n else "")


def _pair(p):
    return (f"{p['client']} accepts {p['person']} ({p['k']} of {p['n']} held out, "
            f"{p['fit_k']} by the deployed model; test "
            f"{p['test_k']}/{p['test_n']}; 1:N {p['returned']}/{p['searches']})")


def counts(runs, min_accepts):
    """Pooled over ``runs``: the counts the precision and recall of (a), (b), (c) need."""
    pairs = [p for x in runs for p in x["pairs"]]
    flag = [p for p in pairs if p["flag"]]
    rest = [p for p in pairs if not p["flag"]]
    named, bad = 0, 0
    both = 0
    for x in runs:
        has = {p["client"] for p in x["pairs"] if p["flag"]}
        worse = {r["client"] for r in x["clients"] if over(r, x["target_far"], min_accepts)}
        named, bad, both = named + len(has), bad + len(worse), both + len(has & worse)
    return {"pairs": len(pairs), "flagged": len(flag),
            "flag_accepted": sum(p["test_k"] > 0 for p in flag),
            "rest_accepted": sum(p["test_k"] > 0 for p in rest), "rest": len(rest),
            "test_flag": sum(p["test_flag"] for p in pairs),
            "both_flag": sum(p["test_flag"] for p in flag),
            "flag_held": sum(p["k"] for p in flag), "flag_fit": sum(p["fit_k"] for p in flag),
            "flag_n": sum(p["n"] for p in flag),
            "flag_returned": sum(p["returned"] > 0 for p in flag),
            "returns": sum(p["returned"] for p in pairs),
            "flag_returns": sum(p["returned"] for p in flag),
            "returned_pairs": sum(p["returned"] > 0 for p in pairs),
            "clients": sum(len(x["clients"]) for x in runs), "named": named,
            "over": bad, "named_over": both}


def verdict(c):
    """(passes, precision, recall, lift) of (a) against `BAR`."""
    prec = c["flag_accepted"] / c["flagged"] if c["flagged"] else 0.0
    rec = c["both_flag"] / c["test_flag"] if c["test_flag"] else 0.0
    base = c["rest_accepted"] / c["rest"] if c["rest"] else 0.0
    lift = prec / base if base else float("inf") if prec else 0.0
    ok = prec >= BAR["precision"] and rec >= BAR["recall"] and lift >= BAR["lift"]
    return ok, prec, rec, lift


def run_line(x, min_accepts):
    c = counts([x], min_accepts)
    return (f"{x['dataset']} run {x['run']}: {c['flagged']} of {c['pairs']} pairs flagged, "
            f"(a) precision {_ratio(c['flag_accepted'], c['flagged'])}, recall "
            f"{_ratio(c['both_flag'], c['test_flag'])}; (b) named {c['named']}, "
            f"{c['named_over']} of {c['over']} over-acceptors; (c) flagged pairs make "
            f"{_ratio(c['flag_returns'], c['returns'])} wrong 1:N returns; held-out accepts "
            f"{x['held_out']} counted here, {x['recorded']} recorded by compress")


HEAD = ["data set", "run", "clients + background (strangers)", "pairs counted",
        ("flagged at compress time: client accepts person (held out k of n, accepted by "
         "the deployed model of the same n; test accepted/claims; 1:N returned as that "
         "client/searches)"),
        "look-alike on test, not flagged", "clients named: stranger FAR % (accepted/claims)",
        "over-acceptors not named"]


def run_rows(runs, min_accepts):
    rows = []
    for x in runs:
        far = x["target_far"]
        flagged = [p for p in x["pairs"] if p["flag"]]
        missed = [p for p in x["pairs"] if p["test_flag"] and not p["flag"]]
        has = {p["client"] for p in flagged}
        by = {r["client"]: r for r in x["clients"]}
        stranger = lambda c, by=by, far=far: (
            f"{c} {pct(by[c]['k'] / max(by[c]['n'], 1))} ({by[c]['k']}/{by[c]['n']}"
            + ("; over-acceptor" if over(by[c], far, min_accepts) else "") + ")")
        bad = [c for c in by if over(by[c], far, min_accepts) and c not in has]
        people = {p["person"] for p in x["pairs"]}
        rows.append([x["dataset"], str(x["run"]),
                     (f"{len(x['clients'])} + {len(people) - len(x['clients'])} "
                      f"({x['strangers']})"), str(len(x["pairs"])),
                     "; ".join(map(_pair, flagged)) or "none",
                     "; ".join(map(_pair, missed)) or "none",
                     "; ".join(stranger(c) for c in sorted(has)) or "none",
                     "; ".join(stranger(c) for c in bad) or "none"])
    return rows


SUM_HEAD = ["data set", "runs", "pairs", "flagged",
            "flagged: held-out accepts / deployed model's accepts of the same images",
            "(a) precision: flagged pairs accepted on test",
            "(a) not flagged, accepted on test", "(a) lift",
            "(a) recall: look-alike on test, flagged",
            "(b) clients named that are over-acceptors", "(b) over-acceptors named",
            "(c) flagged pairs returned in 1:N", "(c) wrong 1:N returns made by flagged pairs",
            "meets the bar"]


def summary_rows(runs, min_accepts):
    rows = []
    for d in dict.fromkeys(x["dataset"] for x in runs):
        mine = [x for x in runs if x["dataset"] == d]
        c = counts(mine, min_accepts)
        ok, _, _, lift = verdict(c)
        rows.append([d, str(len(mine)), str(c["pairs"]), str(c["flagged"]),
                     f"{c['flag_held']} / {c['flag_fit']} of {c['flag_n']}",
                     _ratio(c["flag_accepted"], c["flagged"]),
                     _ratio(c["rest_accepted"], c["rest"]),
                     "—" if not c["flagged"] else f"{lift:.1f}",
                     _ratio(c["both_flag"], c["test_flag"]),
                     _ratio(c["named_over"], c["named"]), _ratio(c["named_over"], c["over"]),
                     _ratio(c["flag_returned"], c["flagged"]),
                     _ratio(c["flag_returns"], c["returns"]), "yes" if ok else "no"])
    return rows


def summary_lines(runs, min_accepts):
    """Per data set one line, and the verdict on the real data sets."""
    lines = ["- " + " | ".join(f"{h}: {v}" for h, v in zip(SUM_HEAD, row))
             for row in summary_rows(runs, min_accepts)]
    real = [d for d in REAL if any(x["dataset"] == d for x in runs)]
    passed = [d for d in real
              if verdict(counts([x for x in runs if x["dataset"] == d], min_accepts))[0]]
    lines.append(f"- verdict: the flag meets the bar on {len(passed)} of {len(real)} real "
                 "data sets (" + (", ".join(passed) or "none") + ")"
                 + ("" if real and len(passed) == len(real) else
                    "; the bar needs both: the tool names no pairs"))
    return lines


def page_tables(runs, min_accepts):
    return (markdown_table(SUM_HEAD, summary_rows(runs, min_accepts))
            + "\n\nPer run: the pairs flagged, the pairs missed and the clients named:\n\n"
            + markdown_table(HEAD, run_rows(runs, min_accepts)))
