"""Stage ``protocol`` of benchmarks/open_set.py: the paper's protocol with a full search, as
``roc`` runs it, SVM against SSVM m = 2 as ``compress`` trains it by default and with
``--between 0`` (the paper's fit), FNIR at FPIR 1 % and 0.1 %, the verification figure
of the same claims, the same searches on raw scores, and the diagnosis of the paper's
fit's gap (benchmarks/_open_set_gap.py)."""

import time

import _results
import numpy as np
from _open_set_gap import gap_diagnosis


def _fnir_per_repetition(searches):
    """FNIR at FPIR 1 % of every table on its centred scores (as deployed): method ->
    [per repetition] (None when unresolvable)."""
    from ssgallery.biometrics import identification as ident

    out = {}
    for t in searches:
        clients, _, scores, true = ident.score_matrix(t)
        _, centred, _ = ident.normalised_searches(t, clients, scores)
        out.setdefault(t.method, []).append(ident.fnir_at_fpir(centred, true, 0.01)[0])
    return out


def run_protocol_stage(faces_dir, matcher, args):
    """The protocol stage on the faces of ``faces_dir`` with the matcher ``matcher``."""
    from ssgallery.biometrics.evaluation import evaluate
    from ssgallery.biometrics.identification import evaluate_identification
    from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
    from ssgallery.images.ingest import load_faces
    from ssgallery.matchers import get_matcher_class

    faces = load_faces(faces_dir, warn=lambda m: None)
    cls = get_matcher_class(matcher)
    from ssgallery.learn.defaults import DEFAULT_BETWEEN

    options = ProtocolOptions(methods=("svm", "ssvm", PAPER_FIT), m=2,
                              n_train=args.train_images,
                              repetitions=args.protocol_repetitions, seed=args.seed,
                              n_jobs=args.jobs, identification=True,
                              n_enrolled=args.protocol_enrolled,
                              method_options={PAPER_FIT: {"method": "ssvm", "between": 0.0}})
    t0 = time.perf_counter()
    tables = run_protocol(faces.images, faces.labels, options, matcher_factory=cls)
    searches = [t.search for t in tables]
    deployed = evaluate_identification(searches)
    verification = {v["label"]: v["eer_client_mean"] for v in evaluate(tables, n_boot=0)}
    for s in deployed:  # verification on the same claims
        s["eer_client_mean"] = verification.get(s["label"])
    per_rep = _fnir_per_repetition(searches)
    gap = gap_diagnosis(searches, method=PAPER_FIT)  # the gap --between is there for
    for s in searches:  # the same searches without the normalisation: raw scores
        s.clients = {c: {"matches": v["matches"]} for c, v in s.clients.items()}
    raw = evaluate_identification(searches)
    return {"deployed": deployed, "raw": raw, "seconds": time.perf_counter() - t0,
            "clients": len(tables[0].clients), "repetitions": options.repetitions,
            "fnir_at_fpir_1pct_per_repetition": per_rep, "gap": gap,
            "default_between": DEFAULT_BETWEEN}


PROTOCOL_HEAD = ["data set (matcher)", "ranking", "method", "rank-1 %", "FNIR@FPIR=1% %",
                 "FNIR@FPIR=0.1% %", "minus SVM at FPIR 1 % (points)",
                 "per repetition (worst last)", "verification: mean client EER %"]
PAPER_FIT = "ssvm-paper-fit"  # SSVM m = 2 with --between 0: the paper's training points
BETWEEN = "ssvm-between"  # results before the default's --between: SSVM m = 2 with W


def gaps_per_repetition(res, method="ssvm"):
    """``method`` - SVM FNIR at FPIR 1 % per repetition, in points (None: unresolvable)."""
    per = res.get("fnir_at_fpir_1pct_per_repetition")
    if not per or method not in per:
        return None
    return [None if None in (a, b) else 100 * (b - a) for a, b in zip(per["svm"], per[method])]


def _gap(by, method):
    a, b = by["svm"]["fnir_at_fpir_1pct"], by[method]["fnir_at_fpir_1pct"]
    return None if None in (a, b) else 100 * (b - a)


def method_label(res, s):
    if s["method"] == BETWEEN:
        return f"ssvm m=2, --between {res['between']:g}"
    if s["method"] == PAPER_FIT:
        return "ssvm m=2, --between 0 (the paper's fit)"
    if s["method"] == "ssvm":  # the default's W (0 in results from before it)
        return f"ssvm m=2 (default: --between {res.get('default_between', 0):g})"
    return s["label"]


def protocol_rows(key, res):
    rows = []
    for ranking, label in (("deployed", "held-out Z-norm (CMC), centred (FNIR)"),
                           ("raw", "raw scores (before)")):
        by = {s["method"]: s for s in res[ranking]}
        for method in [m for m in ("svm", "ssvm", PAPER_FIT, BETWEEN) if m in by]:
            s, gap = by[method], None if method == "svm" else _gap(by, method)
            gaps = gaps_per_repetition(res, method) if ranking == "deployed" else None
            shown = "" if gaps is None else ", ".join(
                "—" if g is None else f"{g:+.1f}"
                for g in sorted(gaps, key=lambda g: -np.inf if g is None else g))
            eer = s.get("eer_client_mean")
            rows.append([key, label, method_label(res, s), _results.pct(s["rank1"], 1),
                         _results.pct(s["fnir_at_fpir_1pct"], 1), _results.pct(s["fnir_at_fpir_01pct"], 1),
                         "" if gap is None else f"{gap:+.1f}", "" if method == "svm" else shown,
                         "" if eer is None or ranking == "raw" else _results.pct(eer)])
    return rows
