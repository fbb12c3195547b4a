"""Paper Fig. 2 on a 2-D toy: an RBF SVM against super-sparse prototypes (m = 2).

Renders benchmarks/out/toy_fig2.png (left: the SVM's decision function, support vectors
circled; right: the SSVM's g(x) with the prototypes' start (black circles) and end
(green stars) positions), and prints, measured side by side in one run, the fraction of
a dense 100 x 100 grid where each method at m = 2 agrees in sign with the SVM, over 10
toy draws (seed 0 is the one pictured and asserted by tests/test_toy.py).

    OMP_NUM_THREADS=1 python benchmarks/toy_fig2.py
"""

import argparse
from pathlib import Path

import numpy as np
from _results import OUT as BENCH_OUT
from _results import docstring, printed, write_page

from ssgallery.biometrics.methods import METHOD_NAMES, make_method
from ssgallery.datasets import toy_two_gaussians
from ssgallery.learn.teacher import SimilaritySVM

OUT = BENCH_OUT


def grid(X, margin=0.5, steps=100):
    lo, hi = X.min(0) - margin, X.max(0) + margin
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], steps), np.linspace(lo[1], hi[1], steps))
    return gx, gy, np.c_[gx.ravel(), gy.ravel()]


def render(X, y, svm, ssvm, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ssgallery.formats.atomic import atomic_path

    gx, gy, G = grid(X)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, model, title in ((axes[0], svm, f"SVM ({svm.n_support_total_} SVs)"),
                             (axes[1], ssvm, "SSVM (2 virtual prototypes)")):
        f = model.decision_function(G).reshape(gx.shape)
        lim = np.abs(f).max()
        im = ax.contourf(gx, gy, f, levels=30, cmap="coolwarm", vmin=-lim, vmax=lim)
        ax.contour(gx, gy, f, levels=[0], colors="k", linewidths=2)
        ax.scatter(*X[y < 0].T, c="tab:blue", edgecolors="w", s=40, label="class -1")
        ax.scatter(*X[y > 0].T, c="tab:red", edgecolors="w", s=40, label="class +1")
        ax.set_title(title)
        ax.set_aspect("equal")
        fig.colorbar(im, ax=ax, shrink=0.8)
    # the SVM's dashed zero line on the SSVM panel, for comparison
    axes[1].contour(gx, gy, svm.decision_function(G).reshape(gx.shape), levels=[0],
                    colors="k", linestyles="--", linewidths=1)
    sv = svm.support_vectors_
    axes[0].scatter(*sv.T, s=140, facecolors="none", edgecolors="k", linewidths=1.5,
                    label="support vectors")
    z0, z = ssvm.initial_prototypes_, ssvm.prototypes_
    axes[1].scatter(*z0.T, s=140, facecolors="none", edgecolors="k", linewidths=2, label="start")
    axes[1].scatter(*z.T, s=260, marker="*", c="lime", edgecolors="k", label="end")
    for a, b in zip(z0, z):
        axes[1].annotate("", xy=b, xytext=a, arrowprops={"arrowstyle": "->", "color": "k"})
    for ax in axes:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("-o", "--out", type=Path, default=OUT / "toy_fig2.png")
    args = ap.parse_args(argv)
    names = [n for n in METHOD_NAMES if n != "svm"]
    agree = {n: [] for n in names}
    n_sv = []
    for seed in range(args.seeds):
        X, y = toy_two_gaussians(seed)
        svm = SimilaritySVM(gamma=0.25, C=1.0).fit(X, y)
        n_sv.append(svm.n_support_total_)
        _, _, G = grid(X)
        sign = np.sign(svm.decision_function(G))
        for n in names:
            est = make_method(n, 2).fit(X, y, teacher=svm)
            agree[n].append(np.mean(np.sign(est.decision_function(G)) == sign))
            if seed == 0 and n == "ssvm":
                render(X, y, svm, est, args.out)
    print(f"toy: 25 points, RBF gamma = 0.25, C = 1; SVM support vectors: "
          f"{n_sv[0]} (seed 0), {min(n_sv)}-{max(n_sv)} over {args.seeds} seeds")
    print("sign agreement with the SVM on a 100 x 100 grid, m = 2:")
    print(f"{'method':<12}{'seed 0':>8}{'median':>8}{'min':>8}")
    for n in names:
        a = np.array(agree[n])
        print(f"{n:<12}{a[0]:>8.3f}{np.median(a):>8.3f}{a.min():>8.3f}")
    print(f"figure: {args.out}")
    return args.out


if __name__ == "__main__":
    with printed() as out:
        figure = main()
    write_page("toy_fig2", "Toy reproduction of the paper's Fig. 2 (m = 2)",
               notes=docstring(__doc__), output=out.getvalue(), figures=[figure])
