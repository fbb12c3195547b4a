"""Stage ``protocol`` of benchmarks/open_set.py, the diagnosis of the FNIR gap: where SSVM
m = 2 loses FNIR at FPIR 1 % against its SVM, per repetition, on the searches as
deployed (centred scores, `ssgallery.biometrics.identification.normalised_searches`).

Per repetition: FNIR at FPIR 1 % and 5 % of both methods; how many non-mated searches
set the 1 % threshold (the threshold passes ``floor(0.01 n)`` of the n searches, so it
sits just above the next one) and whose they are (the strangers, by person); where SVM ranks
the searches that set SSVM's threshold among its own non-mated searches; the mated
searches one method finds and the other misses, split into "below the threshold" (the
mate ranks first but scores under T) and "another client first". Over repetitions: the
clients whose mated searches SSVM misses and SVM finds, and a bootstrap interval of the
mean gap that resamples the stranger persons and the mated probes of every repetition;
and the same searches under other 1:N normalisations, two of them oracles that use the
strangers' own scores (bounds on what any per-client normalisation could do).
"""

from collections import Counter

import numpy as np

FPIRS = (0.01, 0.05)
BOOTSTRAP = 500


def _searches(table):
    """(clients, centred scores (n_probes, n_clients), true column, person of each probe)."""
    from ssgallery.biometrics import identification as ident

    clients, probes, raw, true = ident.score_matrix(table)
    person = dict(zip(np.asarray(table.probe, dtype=str), np.asarray(table.real, dtype=str)))
    _, centred, _ = ident.normalised_searches(table, clients, raw)
    return clients, centred, true, np.array([person[p] for p in probes])


def _found(scores, true, fpir):
    """FNIR at ``fpir``, and per mated search: found, ranked first."""
    from ssgallery.biometrics import identification as ident

    fnir, t = ident.fnir_at_fpir(scores, true, fpir)
    known = true >= 0
    first = ident.ranks(scores, true) == 1
    if t is None:
        return None, None, first
    return fnir, first & (scores[known, true[known]] >= t), first


def _top_searches(scores, true, fpir):
    """The ``floor(fpir n) + 1`` best non-mated searches (rows, best first): the threshold
    at ``fpir`` passes all but the last and sits just above it."""
    unknown = np.flatnonzero(true < 0)
    top = np.argsort(-scores[unknown].max(axis=1), kind="stable")
    return unknown[top[:int(np.floor(fpir * unknown.size)) + 1]]


def _rank_among_non_mated(scores, true, rows):
    """1-based rank of each of ``rows``' best score among the non-mated searches' best."""
    best = scores[true < 0].max(axis=1)
    return [int(np.sum(best > scores[r].max())) + 1 for r in rows]


def _repetition(svm, ssvm, fpir):
    clients, a, true, person = svm
    b = ssvm[1]
    row = {"non_mated": int(np.sum(true < 0)), "mated": int(np.sum(true >= 0)),
           "allowed": int(np.floor(fpir * np.sum(true < 0)))}
    fa, found_a, _ = _found(a, true, fpir)
    fb, found_b, first_b = _found(b, true, fpir)
    row["fnir"] = {"svm": fa, "ssvm": fb}
    row["fnir_5pct"] = {m: _found(s, true, FPIRS[1])[0] for m, s in (("svm", a), ("ssvm", b))}
    tops = {m: _top_searches(s, true, fpir) for m, s in (("svm", a), ("ssvm", b))}
    row["set_by"] = {m: sorted(Counter(person[rows].tolist()).items())
                     for m, rows in tops.items()}
    # SSVM's threshold-setting searches as SVM ranks them among its non-mated searches
    row["ssvm_setters_svm_rank"] = _rank_among_non_mated(a, true, tops["ssvm"])
    if found_a is None or found_b is None:
        return row, Counter()
    lost = found_a & ~found_b
    row["ssvm_misses_svm_finds"] = {"below_threshold": int(np.sum(lost & first_b)),
                                    "another_client_first": int(np.sum(lost & ~first_b))}
    row["svm_misses_ssvm_finds"] = int(np.sum(found_b & ~found_a))
    mates = clients[true[true >= 0]]
    return row, Counter(mates[lost].tolist())


def _bootstrap(pairs, fpir, seed=0):
    """90 % interval of the mean gap (points) over repetitions, resampling each
    repetition's stranger persons and mated probes (paired: both methods alike)."""
    from ssgallery.biometrics.identification import fnir_at_fpir

    rng = np.random.default_rng(seed)
    draws = np.zeros(BOOTSTRAP)
    for svm, ssvm in pairs:
        _, a, true, person = svm
        b = ssvm[1]
        unknown = true < 0
        people = np.unique(person[unknown])
        by_person = {p: np.flatnonzero(unknown & (person == p)) for p in people}
        mated = np.flatnonzero(~unknown)
        for i in range(BOOTSTRAP):
            rows = np.concatenate([rng.choice(mated, mated.size)]
                                  + [by_person[p] for p in rng.choice(people, people.size)])
            fa = fnir_at_fpir(a[rows], true[rows], fpir)[0]
            fb = fnir_at_fpir(b[rows], true[rows], fpir)[0]
            draws[i] += np.nan if None in (fa, fb) else 100 * (fb - fa) / len(pairs)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return None
    return [float(np.percentile(draws, 5)), float(np.percentile(draws, 95))]


def _variants(table):
    """The same search under other 1:N normalisations: name -> (scores, true column).
    "oracle" ones use the strangers' own scores (a bound, not deployable)."""
    from ssgallery.biometrics import identification as ident

    clients, _, raw, true = ident.score_matrix(table)
    info = [table.clients[str(c)] for c in clients]
    mean = np.array([i["norm_mean"] for i in info], dtype=float)
    std = np.array([i["norm_std"] for i in info], dtype=float)
    centred = ident.normalised_searches(table, clients, raw)[1]
    strangers = raw[true < 0]
    s_mean, s_std = strangers.mean(axis=0), strangers.std(axis=0, ddof=1)
    row_mean = centred.mean(axis=1, keepdims=True)
    return {"centred (deployed)": centred, "raw": raw, "Z-norm (held-out)": (raw - mean) / std,
            "centred minus the search's mean": centred - row_mean,
            "T-norm of centred (the search's mean and sd)":
                (centred - row_mean) / np.maximum(centred.std(axis=1, keepdims=True), 1e-12),
            "oracle: centred on the strangers' mean, pooled sd":
                (raw - s_mean) / np.sqrt(np.mean(s_std ** 2)),
            "oracle: Z-norm on the strangers' mean and sd": (raw - s_mean) / s_std}, true


def normalisation_gaps(searches, fpir=FPIRS[0], method="ssvm"):
    """FNIR at ``fpir`` of SVM and SSVM (the searches of ``method``) under each
    normalisation of `_variants`: name -> {"svm": mean, "ssvm": mean, "gaps": [points
    per repetition]} (None: unresolvable)."""
    from ssgallery.biometrics.identification import fnir_at_fpir

    per = {}
    for t in sorted(searches, key=lambda t: t.repetition):
        if t.method not in ("svm", method):
            continue
        variants, true = _variants(t)
        role = "svm" if t.method == "svm" else "ssvm"
        for name, scores in variants.items():
            per.setdefault(name, {}).setdefault(role, []).append(
                fnir_at_fpir(scores, true, fpir)[0])
    out = {}
    for name, v in per.items():
        ok = None not in v["svm"] + v["ssvm"]
        out[name] = {m: float(np.mean(v[m])) if ok else None for m in ("svm", "ssvm")} | {
            "gaps": [100 * (b - a) for a, b in zip(v["svm"], v["ssvm"])] if ok else None}
    return out


NORM_HEAD = ["data set (matcher)", "1:N score", "FNIR@FPIR=1% % SVM", "SSVM",
             "gap (points)", "per repetition"]


def norm_rows(key, gaps):
    """Rows of the normalisation table (`NORM_HEAD`)."""
    return [[key, name, "—" if v["svm"] is None else f"{100 * v['svm']:.1f}",
             "—" if v["ssvm"] is None else f"{100 * v['ssvm']:.1f}",
             "—" if v["gaps"] is None else f"{np.mean(v['gaps']):+.1f}",
             "—" if v["gaps"] is None else ", ".join(f"{g:+.0f}" for g in v["gaps"])]
            for name, v in gaps.items()]


def gap_diagnosis(searches, fpir=FPIRS[0], method="ssvm"):
    """The FNIR gap of SSVM (the searches of ``method``) against SVM at ``fpir``.

    Parameters
    ----------
    searches : list of Scores
        Full-search tables (``table.search`` of `run_protocol` with identification),
        both methods, every repetition, carrying each client's held-out normalisation.

    Returns
    -------
    dict
        ``repetitions`` (per repetition, see the module), ``worst_clients`` ([client,
        mated searches SSVM misses and SVM finds] over all repetitions, most first) and
        ``bootstrap_90`` (interval of the mean gap in points, None when unresolvable),
        ``normalisations`` (`normalisation_gaps`).
    """
    by = {(t.method, t.repetition): t for t in searches}
    reps = sorted(r for (m, r) in by if m == "svm" and (method, r) in by)
    rows, lost, pairs = [], Counter(), []
    for r in reps:
        svm, ssvm = _searches(by[("svm", r)]), _searches(by[(method, r)])
        row, clients = _repetition(svm, ssvm, fpir)
        rows.append({"repetition": r} | row)
        lost.update(clients)
        pairs.append((svm, ssvm))
    worst = sorted(lost.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"fpir": fpir, "repetitions": rows, "worst_clients": [list(w) for w in worst],
            "bootstrap_90": _bootstrap(pairs, fpir) if pairs else None,
            "normalisations": normalisation_gaps(searches, fpir, method), "method": method}


GAP_HEAD = ["data set (matcher)", "repetition", "FNIR@FPIR=1% % SVM / SSVM (gap)",
            "FNIR@FPIR=5% % SVM / SSVM (gap)",
            "non-mated searches (false positives allowed at 1 %)",
            "strangers whose searches set T: SVM", "SSVM",
            "SSVM's setting searches: their rank among SVM's non-mated searches",
            "mated searches SSVM misses, SVM finds: below T / another client first",
            "SVM misses, SSVM finds"]


def _pair(f):
    a, b = f["svm"], f["ssvm"]
    if None in (a, b):
        return "—"
    return f"{100 * a:.0f} / {100 * b:.0f} ({100 * (b - a):+.0f})"


def gap_rows(key, diagnosis):
    """Rows of the per-repetition table (`GAP_HEAD`)."""
    out = []
    for r in diagnosis["repetitions"]:
        lost = r.get("ssvm_misses_svm_finds")
        out.append([key, str(r["repetition"]), _pair(r["fnir"]), _pair(r["fnir_5pct"]),
                    f"{r['non_mated']} ({r['allowed']})",
                    ", ".join(f"{p} x{k}" for p, k in r["set_by"]["svm"]),
                    ", ".join(f"{p} x{k}" for p, k in r["set_by"]["ssvm"]),
                    ", ".join(map(str, r["ssvm_setters_svm_rank"])),
                    "—" if lost is None else
                    f"{lost['below_threshold']} / {lost['another_client_first']}",
                    str(r.get("svm_misses_ssvm_finds", "—"))])
    return out


def gap_summary(key, diagnosis):
    """One line per data set: the spread of the gap, the bootstrap interval, the worst
    clients."""
    gaps = [100 * (r["fnir"]["ssvm"] - r["fnir"]["svm"]) for r in diagnosis["repetitions"]
            if None not in r["fnir"].values()]
    if not gaps:
        return f"- {key}: the non-mated searches cannot resolve FPIR 1 %"
    ci = diagnosis["bootstrap_90"]
    worst = ", ".join(f"{c} ({k})" for c, k in diagnosis["worst_clients"][:5]) or "none"
    lost = sum(sum(r.get("ssvm_misses_svm_finds", {}).values())
               for r in diagnosis["repetitions"])
    return (f"- {key}: gap {np.mean(gaps):+.1f} points, sd {np.std(gaps, ddof=1) if len(gaps) > 1 else 0:.1f} "
            f"over {len(gaps)} repetitions (min {min(gaps):+.1f}, max {max(gaps):+.1f})"
            + ("" if ci is None else
               f"; 90 % bootstrap interval of the mean [{ci[0]:+.1f}, {ci[1]:+.1f}]")
            + f". Mated searches SSVM misses and SVM finds: {lost}; most per client: {worst}")
