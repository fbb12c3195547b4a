"""benchmarks/open_set_strangers.py's tables (its docstring says what it measures): per
split, the strangers behind the achieved FPIR (`split_facts`); per data set and size, the
people identified, the worst of them and whether they recur (`stranger_rows`), whether
the interval ``info`` prints holds the FPIR the strangers met (`cover_rows`) and the
splits it did not hold (`miss_rows`). The splits are benchmarks/_open_set_fpir.py's
(``run_fpir``: its ``strangers`` record, the gallery's operating point)."""

from collections import Counter

import numpy as np
from _results import pct

from ssgallery.tables import counted

ARM = "operating point"


def _where(value, ci):
    return "below" if value < ci[0] else "above" if value > ci[1] else "inside"


def split_facts(rep):
    """One split: its achieved FPIR (``fp`` of ``searches``), the strangers identified
    (``hits``: person -> searches returned; ``people`` strangers in all), the
    most-identified one (``top``, ``top_hits``), where the FPIR falls against the
    printed interval (``where``: inside, below, above; ``ci``) and where it falls once
    that one stranger is left out (``without_top``)."""
    strangers, record = rep[ARM]["strangers"], rep["record"]
    hits = {p: sum(c.values()) for p, (_, c) in strangers.items() if c}
    fp, n = sum(hits.values()), sum(v[0] for v in strangers.values())
    top = max(sorted(hits), key=hits.get, default=None)
    ci = record["expected_fpir_ci"]
    rest = (fp - hits[top]) / (n - strangers[top][0]) if top else 0.0
    return {"fp": fp, "searches": n, "fpir": fp / n, "people": len(strangers),
            "hits": hits, "top": top, "top_hits": hits.get(top, 0), "ci": ci,
            "expected": record["expected_fpir"], "where": _where(fp / n, ci),
            "without_top": _where(rest, ci), "repetition": rep["repetition"]}


def pooled_strangers(reps):
    """Person -> splits as a stranger, splits identified, searches returned, searches,
    and the clients returned (Counter), pooled over the splits."""
    out = {}
    for rep in reps:
        for person, (n, clients) in rep[ARM]["strangers"].items():
            p = out.setdefault(person, {"splits": 0, "hit_splits": 0, "hits": 0,
                                        "searches": 0, "as": Counter()})
            p["splits"] += 1
            p["hit_splits"] += bool(clients)
            p["hits"] += sum(clients.values())
            p["searches"] += n
            p["as"].update(clients)
    return out


def _named(person, p, shown=2):
    clients = ", ".join(f"{c} x{k}" for c, k in p["as"].most_common(shown))
    more = len(p["as"]) - shown
    return (f"{person}: {p['hits']} / {p['searches']} ({p['hit_splits']} of "
            f"{p['splits']} splits; as {clients}" + (f" +{more} more" if more > 0 else "")
            + ")")


STRANGER_HEAD = [
    "data set (matcher)", "clients", "splits", "achieved FPIR % (mean; searches returned)",
    "strangers identified per split: mean of n (max)",
    "people identified in any split / strangers in any split",
    "share of a split's false positives from its most-identified stranger",
    "identified in >= 2 splits / identified at all",
    ("worst strangers (pooled): returned / searches (splits identified of splits a "
    "stranger; returned as)")]


def stranger_rows(key, reps, worst=3):
    """One row per data set and size (`STRANGER_HEAD`)."""
    facts = [split_facts(r) for r in reps]
    pool = pooled_strangers(reps)
    hit = [p for p in pool.values() if p["hits"]]
    fp = sum(f["fp"] for f in facts)
    per = [len(f["hits"]) for f in facts]
    order = sorted((p for p in pool if pool[p]["hits"]),
                   key=lambda p: (-pool[p]["hits"], -pool[p]["hit_splits"], p))
    return [[key, str(reps[0]["clients"]), str(len(reps)),
             (f"{pct(np.mean([f['fpir'] for f in facts]))} ({fp} / "
             f"{sum(f['searches'] for f in facts)})"),
             f"{np.mean(per):.1f} of {facts[0]['people']} ({max(per)})",
             f"{len(hit)} / {len(pool)}",
             f"{sum(f['top_hits'] for f in facts)} / {fp}" if fp else "—",
             f"{sum(p['hit_splits'] >= 2 for p in hit)} / {len(hit)}",
             "; ".join(_named(p, pool[p]) for p in order[:worst]) or "—"]]


COVER_HEAD = [
    "data set (matcher)", "clients", "splits",
    "printed interval: by probe person (people, mean) / the tail's (extrapolated)",
    ("expected FPIR % (mean) [printed 95 % interval, mean]"),
    "achieved FPIR % median / 90th percentile / max",
    "achieved inside / below / above the interval",
    "above: one stranger >= half of the false positives",
    "above: inside without that stranger",
    "splits with a stranger returned in >= 3 searches"]


def cover_rows(key, reps):
    """One row per data set and size (`COVER_HEAD`)."""
    facts = [split_facts(r) for r in reps]
    where = Counter(f["where"] for f in facts)
    above = [f for f in facts if f["where"] == "above"]
    fpir = np.array([f["fpir"] for f in facts])
    ci = np.mean([f["ci"] for f in facts], axis=0)
    tail = sum(bool(r["record"].get("extrapolated")) for r in reps)
    people = [r["record"].get("interval_people") for r in reps
              if not r["record"].get("extrapolated")]
    people = [p for p in people if p]
    return [[key, str(reps[0]["clients"]), str(len(reps)),
             (f"{len(people)} ({np.mean(people):.0f})" if people else "0")
             + f" / {tail}",
             f"{pct(np.mean([f['expected'] for f in facts]))} [{pct(ci[0])}, {pct(ci[1])}]",
             " / ".join(pct(v) for v in (np.median(fpir), np.quantile(fpir, 0.9),
                                         fpir.max())),
             f"{where['inside']} / {where['below']} / {where['above']}",
             f"{sum(2 * f['top_hits'] >= f['fp'] for f in above)} of {len(above)}",
             f"{sum(f['without_top'] == 'inside' for f in above)} of {len(above)}",
             str(sum(f["top_hits"] >= 3 for f in facts))]]


MISS_HEAD = ["data set (matcher)", "clients", "split", "expected FPIR % [printed 95 %]",
             "achieved: returned / searches (%)",
             "strangers returned (searches; as; splits identified of splits a stranger)"]


def miss_rows(key, reps, most=8):
    """The splits whose achieved FPIR lies above the printed interval (`MISS_HEAD`),
    the first ``most``; each stranger with the splits they were identified in of those
    they were strangers in (a repeat offender)."""
    out, pool = [], pooled_strangers(reps)
    for rep in reps:
        f = split_facts(rep)
        if f["where"] != "above":
            continue
        named = []
        for person in sorted(f["hits"], key=lambda p: (-f["hits"][p], p)):
            clients = rep[ARM]["strangers"][person][1]
            named.append(f"{person} x{f['hits'][person]} ("
                         + ", ".join(f"{c} x{k}" for c, k in sorted(
                             clients.items(), key=lambda kv: (-kv[1], kv[0])))
                         + f"; identified in {pool[person]['hit_splits']} of its "
                         f"{pool[person]['splits']} splits)")
        out.append([key, str(rep["clients"]), str(f["repetition"]),
                    f"{pct(f['expected'])} [{pct(f['ci'][0])}, {pct(f['ci'][1])}]",
                    f"{f['fp']} / {f['searches']} ({pct(f['fpir'])})", "; ".join(named)])
    return out[:most]


def first_mean(reps, k):
    """The mean achieved FPIR of the first ``k`` splits (open_set.md's repetitions)."""
    return pct(np.mean([split_facts(r)["fpir"] for r in reps[:k]]))


def expect_line(key, reps):
    """What a user of such a gallery should expect, in one sentence from the splits."""
    facts = [split_facts(r) for r in reps]
    n, above = len(facts), sum(f["where"] == "above" for f in facts)
    one = sum(f["where"] == "above" and 2 * f["top_hits"] >= f["fp"] for f in facts)
    people = facts[0]["people"]
    worst = max(facts, key=lambda f: (f["fpir"], f["top_hits"]))
    return (f"- {key}: {people} strangers per split; the FPIR they met lay above the "
            f"printed interval in {above} of {n} splits ({one} of them with one stranger "
            f"making at least half of the false positives); worst split {worst['fp']} of "
            f"{worst['searches']} ({pct(worst['fpir'])} %, split {worst['repetition']}, "
            f"{worst['top'] or '—'} returned in {counted(worst['top_hits'], 'search', 'searches')}"
            f") against an "
            f"expected {pct(worst['expected'])} % ({pct(worst['ci'][0])}-"
            f"{pct(worst['ci'][1])} %)")
