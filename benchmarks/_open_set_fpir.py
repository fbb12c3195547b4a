"""benchmarks/open_set.py's stage ``fpir`` (its docstring says what it measures): one
gallery per data set, size and repetition, enrolled and compressed with every default,
searched by ``identify``'s own code path with the gallery's operating point and with the
verification thresholds (`run_fpir`), the repetitions aggregated (`aggregate_fpir`) and
their table rows (`fpir_rows`, `worst_rows`)."""

import tempfile
import time
from collections import Counter
from pathlib import Path

import _results
import numpy as np
from calibration import enrol_split

MATCHERS = {"att": "eigenface", "lfw": "dlib", "synth": "eigenface",
            "lfw-eigenface": "eigenface"}  # the last: LFW's faces (open_set_strangers.py)


def _rates(results, probes, clients):
    """Achieved FPIR and FNIR of one identify run, the search counts and the worst
    cases: the client that draws the most false alarms, the stranger (person) whose
    images are returned most often, the client whose mated searches fail most; and per
    stranger (``strangers``: person -> [searches, {client returned: searches}],
    benchmarks/_open_set_strangers.py)."""
    subject = [Path(p).parent.name for p in probes]
    drawn, fooled, seen, missed, mated = (Counter() for _ in range(5))
    returned = {}
    for r, s in zip(results, subject):
        if s in clients:
            mated[s] += 1
            missed[s] += r.identified != s  # unknown, another client or a failure to acquire
        else:
            seen[s] += 1
            returned.setdefault(s, Counter())
            if r.identified is not None:
                drawn[r.identified] += 1
                fooled[s] += 1
                returned[s][r.identified] += 1
    fp, fn = sum(drawn.values()), sum(missed.values())
    n_non, n_mated = sum(seen.values()), sum(mated.values())
    client = max(sorted(drawn), key=drawn.get, default=None)
    person = max(sorted(seen), key=lambda p: (fooled[p], fooled[p] / seen[p]))
    miss = max(sorted(mated), key=lambda c: (missed[c] / mated[c], mated[c]))
    return {"fpir": fp / n_non, "fnir": fn / n_mated, "false_positives": fp,
            "non_mated": n_non, "false_negatives": fn, "mated": n_mated,
            "worst_client": [client, drawn[client] if client else 0],
            "worst_stranger": [person, fooled[person], seen[person]],
            "worst_client_fnir": [miss, missed[miss], mated[miss]],
            "clients_missing_half": sum(2 * missed[c] >= mated[c] for c in mated),
            "strangers": {p: [seen[p], dict(sorted(returned[p].items()))]
                          for p in sorted(seen)}}


def gallery_clients(size, subjects, args):
    """A gallery size (``--sizes``): a number of clients, or "all" but the held-out
    fraction (``--holdout``); shared with open_set.py's between stage."""
    return len(subjects) - round(args.holdout * len(subjects)) if size == "all" \
        else int(size)


def run_fpir(name, size, rep, subjects, args):
    from ssgallery.app.compress import CompressOptions, compress
    from ssgallery.app.enroll import enroll
    from ssgallery.app.identify import identify

    n = gallery_clients(size, subjects, args)
    rng = np.random.default_rng(1000 * args.seed + rep)
    with tempfile.TemporaryDirectory(prefix="ssg-open-") as tmp:
        work = Path(tmp)
        clients = enrol_split(subjects, n, args.train_images, rng, work)
        enroll(work / "train", work / "e.h5", matcher=MATCHERS[name], warn=lambda m: None)
        t0 = time.perf_counter()
        summary = compress(work / "e.h5", work / "g.h5",
                           CompressOptions(seed=rep, target_fpir=args.target_fpir))
        seconds = time.perf_counter() - t0
        probes = sorted(str(p) for d in (work / "probes").iterdir() for p in d.iterdir())
        out = {"repetition": rep, "clients": n, "compress_seconds": seconds,
               "record": {k: v for k, v in summary.open_set.items() if k != "curve"}
               | {"interval_people": summary.open_set["curve"].get("interval_people")}}
        for arm, kwargs in (("operating point", {}),
                            ("verification thresholds", {"verification_thresholds": True})):
            results, _, _ = identify(work / "g.h5", probes, top=1, open_set=True,
                                     warn=lambda m: None, **kwargs)
            out[arm] = _rates(results, probes, clients)
    return out


def aggregate_fpir(reps):
    row = {"clients": reps[0]["clients"], "repetitions": len(reps),
           "resolved": sum(r["record"]["resolved"] for r in reps),
           "extrapolated": sum(r["record"].get("extrapolated", False) for r in reps),
           "expected": float(np.mean([r["record"]["expected_fpir"] for r in reps])),
           "compress_seconds": float(np.mean([r["compress_seconds"] for r in reps]))}
    for arm in ("operating point", "verification thresholds"):
        fpir = np.array([r[arm]["fpir"] for r in reps])
        fnir = np.array([r[arm]["fnir"] for r in reps])
        row[arm] = {"fpir": float(fpir.mean()), "fpir_sd": float(fpir.std()),
                    "fpir_worst": float(fpir.max()), "fnir": float(fnir.mean()),
                    "fnir_worst": float(fnir.max()),
                    "false_positives": int(sum(r[arm]["false_positives"] for r in reps)),
                    "non_mated": int(sum(r[arm]["non_mated"] for r in reps))}
        if "worst_client" in reps[0][arm]:  # results written before the worst cases: none
            row[arm]["worst"] = _worst(reps, arm)
    return row


def _worst(reps, arm):
    """The worst repetition's worst client, stranger and client FNIR (rep, name, counts)
    and the mean number of clients that miss at least half of their mated searches."""
    def top(field, key):
        i = max(range(len(reps)), key=lambda j: key(reps[j][arm][field]))
        return [i, *reps[i][arm][field]]

    return {"client": top("worst_client", lambda w: w[1]) + [reps[0][arm]["non_mated"]],
            "stranger": top("worst_stranger", lambda w: (w[1], w[1] / w[2])),
            "client_fnir": top("worst_client_fnir", lambda w: (w[1] / w[2], w[2])),
            "clients_missing_half": float(np.mean([r[arm]["clients_missing_half"]
                                                   for r in reps]))}


FPIR_HEAD = ["data set (matcher)", "clients", "arm", "achieved FPIR % (mean ± sd)",
             "worst repetition FPIR %", "false positives / non-mated searches",
             "FNIR % (mean)", "worst FNIR %", "expected FPIR %",
             "resolved (extrapolated)"]


def fpir_rows(key, row):
    out = []
    for arm in ("operating point", "verification thresholds"):
        a = row[arm]
        first = arm == "operating point"
        out.append([key, str(row["clients"]), arm,
                    f"{_results.pct(a['fpir'])} ± {_results.pct(a['fpir_sd'])}", _results.pct(a["fpir_worst"]),
                    f"{a['false_positives']} / {a['non_mated']}", _results.pct(a["fnir"], 1),
                    _results.pct(a["fnir_worst"], 1), _results.pct(row["expected"]) if first else "",
                    f"{row['resolved']} of {row['repetitions']}"
                    f" ({row.get('extrapolated', 0)})" if first else ""])
    return out


WORST_HEAD = ["data set (matcher)", "clients", "arm",
              "client drawing the most false alarms: alarms / non-mated searches",
              "stranger returned most: images / their images",
              "worst client FNIR: missed / mated searches",
              "clients missing >= half (mean)"]


def worst_rows(key, row):
    out = []
    for arm in ("operating point", "verification thresholds"):
        w = row[arm].get("worst")
        if w is None:
            continue
        (rc, client, k, n), (rs, person, f, m), (rf, miss, x, y) = \
            w["client"], w["stranger"], w["client_fnir"]
        out.append([key, str(row["clients"]), arm,
                    f"{client or '—'}: {k} / {n} ({_results.pct(k / n)} %, rep {rc})",
                    f"{person}: {f} / {m} (rep {rs})",
                    f"{miss}: {x} / {y} ({_results.pct(x / y, 0)} %, rep {rf})",
                    f"{w['clients_missing_half']:.1f}"])
    return out
