"""Algorithm 1 ("paper") against variable projection ("varpro") on AT&T faces.

Protocol (the library's ``make_splits``, Sect. IV-A): per repetition (seeded), half of
the 40 subjects are enrolled clients with 5 training images each; the eigenface matcher
(PCA 95 %, RBF, gamma = 1/d) is fitted on the clients' training images; for each client
the SVM teacher (``ssgallery.learn.teacher.SimilaritySVM`` on the same similarity) is
trained one-vs-all, and its decision values are distilled into m prototypes with class-balancing weights. Each
solver/init is run from the same start; we report, relative to ``solver="paper"`` with
the same init in the same run (mean over clients x repetitions):

- final training Omega, similarity evaluations, wall time (ratios to paper);
- the EER on the client's held-out genuine images against every image of the
  non-enrolled subjects (absolute, %; the teacher SVM's EER for reference);
- for varpro: the evaluations it needs to reach Algorithm 1's final Omega (raw step,
  eta = 0.5), as a speed-up factor, and how often its own final Omega is lower.

Usage:  OMP_NUM_THREADS=1 python benchmarks/solvers.py [--quick] [--repetitions R]
"""

import argparse
import os
import sys
import time
from collections import defaultdict

import numpy as np
from _results import docstring, printed, write_page

from ssgallery.biometrics.metrics import eer
from ssgallery.biometrics.protocol import make_splits
from ssgallery.datasets import att_faces_path
from ssgallery.images.ingest import load_faces
from ssgallery.learn.supersparse import SuperSparseRegressor, balanced_weights
from ssgallery.learn.teacher import SimilaritySVM
from ssgallery.matchers.eigenface import EigenfaceMatcher

# (label, solver, extra params); every one is run with each init
SOLVERS = [
    ("paper", "paper", {}),
    ("paper-norm", "paper", {"normalize_step": True}),
    ("varpro", "varpro", {}),
]
INITS = ["class", "kmeans", "random"]


def steps_to_reach(path, target):
    """Similarity evaluations at which a (evals, Omega) path first reaches <= target."""
    hit = np.flatnonzero(path[:, 1] <= target * (1 + 1e-12))
    return path[hit[0], 0] if len(hit) else np.nan


def run(args):
    faces = load_faces(args.data)
    labels = faces.labels
    rows = defaultdict(list)  # (m, label, init) -> list of dicts
    teacher_eer = []
    splits = make_splits(labels, n_train=5, repetitions=args.repetitions, seed=args.seed)
    for rep, sp in enumerate(splits):
        clients, test, impostors = sp.enrolled, sp.genuine, sp.impostors
        tr = sp.train_indices()
        matcher = EigenfaceMatcher().fit(faces.images[tr])
        sim = matcher.similarity()
        F = matcher.transform(faces.images)
        Xtr, ytr = F[tr], labels[tr]
        D = np.sqrt(((Xtr[:, None] - Xtr[None]) ** 2).sum(2))
        typical = np.median(D[np.triu_indices(len(Xtr), 1)])  # median face-to-face distance
        for ci, c in enumerate(clients[: args.clients]):
            yb = np.where(ytr == c, 1.0, -1.0)
            svm = SimilaritySVM(similarity=sim).fit(Xtr, yb)
            t, u = svm.decision_function(Xtr), balanced_weights(yb)
            neg_X, pos_X = F[impostors], F[test[c]]
            teacher_eer.append(eer(svm.decision_function(neg_X), svm.decision_function(pos_X)))
            for m in args.m:
                for label, solver, extra in SOLVERS:
                    for init in INITS:
                        est = SuperSparseRegressor(
                            m, similarity=sim, lam=args.lam, solver=solver, init=init,
                            max_iter=args.max_iter, random_state=rep, **extra)
                        t0 = time.perf_counter()
                        est.fit(Xtr, t, sample_weight=u)
                        wall = time.perf_counter() - t0
                        move = np.linalg.norm(est.prototypes_ - est.initial_prototypes_,
                                              axis=1).mean() / typical
                        rows[m, label, init].append({
                            "omega": est.objective_, "evals": est.n_similarity_evals_,
                            "wall": wall, "move": move,
                            "eer": eer(est.predict(neg_X), est.predict(pos_X)),
                            "path": est.objective_path_})
                if m in (2, 10) and ci < args.long_clients:
                    # Algorithm 1 (raw step) allowed to run on: eps = 1e-10, 1000 sweeps
                    est = SuperSparseRegressor(m, similarity=sim, lam=args.lam, solver="paper",
                                               tol=1e-10, max_iter=1000, random_state=rep)
                    est.fit(Xtr, t, sample_weight=u)
                    vp = rows[m, "varpro", "class"][-1]
                    rows[m, "long"].append({
                        "omega": est.objective_, "evals": est.n_similarity_evals_,
                        "reach": steps_to_reach(vp["path"], est.objective_),
                        "lower": vp["omega"] < est.objective_, "vp_omega": vp["omega"]})
        print(f"repetition {rep + 1}/{args.repetitions} done (d={matcher.n_components_})",
              file=sys.stderr, flush=True)
    return rows, teacher_eer


def report(rows, teacher_eer, args):
    n = len(teacher_eer)
    print(f"AT&T, eigenface (PCA 95%, RBF gamma=1/d), {args.clients} clients x "
          f"{args.repetitions} repetitions = {n} client models per cell, lam={args.lam:g}")
    print(f"teacher SVM (SimilaritySVM): mean EER {100 * np.mean(teacher_eer):.2f}%")
    print("ratios are per client model against solver=paper (raw step eta=0.5) with the "
          "same init, then averaged (geometric mean)")
    print()
    print(f"{'m':>3} {'solver':<11} {'init':<7} {'Omega':>10} {'Omega/pap':>9} "
          f"{'evals':>8} {'evals/pap':>9} {'time/pap':>8} {'moved':>6} {'EER%':>6}")
    gm = lambda a: float(np.exp(np.mean(np.log(a))))
    for m in args.m:
        for label, _, _ in SOLVERS:
            for init in INITS:
                cell, ref = rows[m, label, init], rows[m, "paper", init]
                om = np.array([r["omega"] for r in cell])
                ev = np.array([r["evals"] for r in cell])
                wt = np.array([r["wall"] for r in cell])
                print(f"{m:>3} {label:<11} {init:<7} {om.mean():>10.4g} "
                      f"{gm(om / [r['omega'] for r in ref]):>9.3f} {ev.mean():>8.0f} "
                      f"{gm(ev / np.array([r['evals'] for r in ref])):>9.3f} "
                      f"{gm(wt / np.array([r['wall'] for r in ref])):>8.3f} "
                      f"{np.mean([r['move'] for r in cell]):>6.3f} "
                      f"{100 * np.mean([r['eer'] for r in cell]):>6.2f}")
        print()
    print("varpro vs Algorithm 1 (raw step eta=0.5), same init: evaluations Algorithm 1 used "
          "/ evaluations varpro needed to reach Algorithm 1's final Omega")
    print(f"{'m':>3} {'init':<7} {'paper evals':>11} {'varpro to reach':>15} {'speed-up':>9} "
          f"{'reached':>8} {'varpro Omega lower':>18}")
    for m in args.m:
        for init in INITS:
            pap, vp = rows[m, "paper", init], rows[m, "varpro", init]
            pe = np.array([r["evals"] for r in pap], dtype=float)
            reach = np.array([steps_to_reach(v["path"], p["omega"]) for p, v in zip(pap, vp)])
            ok = np.isfinite(reach)
            # a start that is already at paper's final Omega counts as one objective evaluation
            first = np.array([v["path"][0, 0] for v in vp])
            reach_c = np.maximum(reach, first)
            lower = np.mean([v["omega"] < p["omega"] for p, v in zip(pap, vp)])
            speed = gm(pe[ok] / reach_c[ok]) if ok.any() else np.nan
            print(f"{m:>3} {init:<7} {pe.mean():>11.0f} {np.nanmean(reach_c):>15.0f} "
                  f"{speed:>8.1f}x {ok.mean():>8.0%} {lower:>18.0%}")
    long = [m for m in (2, 10) if rows.get((m, "long"))]
    if long:
        print()
        print("Algorithm 1 (raw step eta=0.5) run on with eps=1e-10 and up to 1000 sweeps, class "
              f"init, first {args.long_clients} clients per repetition, vs varpro (defaults)")
        print(f"{'m':>3} {'paper Omega':>11} {'paper evals':>11} {'varpro to reach':>15} "
              f"{'speed-up':>9} {'varpro Omega':>12} {'varpro lower':>12}")
        for m in long:
            cell = rows[m, "long"]
            pe = np.array([r["evals"] for r in cell], dtype=float)
            reach = np.array([r["reach"] for r in cell], dtype=float)
            print(f"{m:>3} {np.mean([r['omega'] for r in cell]):>11.4g} {pe.mean():>11.0f} "
                  f"{np.nanmean(reach):>15.0f} {gm(pe / reach):>8.1f}x "
                  f"{np.mean([r['vp_omega'] for r in cell]):>12.4g} "
                  f"{np.mean([r['lower'] for r in cell]):>12.0%}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=None, help="AT&T root (default: ssgallery.datasets)")
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--clients", type=int, default=20, help="clients per repetition")
    p.add_argument("--m", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2, 5, 10])
    p.add_argument("--lam", type=float, default=SuperSparseRegressor().lam)
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--long-clients", type=int, default=5,
                   help="clients per repetition for the long Algorithm 1 comparison")
    p.add_argument("--quick", action="store_true", help="2 repetitions x 5 clients")
    args = p.parse_args()
    if args.quick:
        args.repetitions, args.clients, args.long_clients = 2, 5, 2
    args.data = args.data or os.fspath(att_faces_path())
    rows, teacher_eer = run(args)
    report(rows, teacher_eer, args)


if __name__ == "__main__":
    with printed() as out:
        main()
    write_page("solvers", "Algorithm 1 against varpro on AT&T",
               notes=docstring(__doc__), output=out.getvalue())
