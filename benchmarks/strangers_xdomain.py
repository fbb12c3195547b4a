"""Strangers from another domain: AT&T faces claimed against an LFW gallery.

`compress --target-far F` sets its thresholds on held-out impostors drawn from the
enrolled faces ([strangers](strangers.md): the promise holds for strangers of the same
population). Here the strangers are of two kinds. Per run (seed = run): 20 LFW people
drawn at random are enrolled with their first 8 images and compressed with compress's
defaults (the library function behind the command); the strangers are (a) 40 other LFW
people, every image, and (b) 30 of AT&T's 40 subjects, every image (lab photos,
92 x 112, resized to the gallery's image size by the probe reading `verify` and `roc
--gallery` share, `ssgallery.images.ingest`). Every image of every stranger is claimed
against every client at the thresholds the gallery stores (`roc --gallery`'s scoring),
as benchmarks/strangers.py does (its `_measure`: the bootstrap interval over stranger
people, the clients above 3 F, the worst three by name).

Models: "ssvm, compress's thresholds" is what compress ships (default
--threshold-mode znorm-global; T, the printed expected FAR and its intervals are the
gallery's: the one counting held-out claims as independent, printed before, and the
one by impostor person `info` prints, `ssgallery.biometrics.intervals`; "above": the
measured FAR above each). Is it the distillation or the domain? Each client trained again as compress
trains it (its plan, jobs and `train_client`, same seed: the distilled model's scores
are the gallery's), then its full SVM ("svm") and its distilled model ("ssvm") at their
own per-client held-out thresholds at F (compress's `client` mode, the SVM's threshold
the one compress stores beside the prototypes): one rule for both, so a gap between
these two rows is the distillation's, and the rows' gap between AT&T and LFW strangers
is the domain's.

Rows with background "AT&T x 10": the same clients enrolled with `enroll --background`
given the 10 AT&T subjects that are not among the strangers (impostor-only subjects:
every client's training and held-out impostors then include faces of the strangers'
domain, never the strangers themselves). "failures to acquire": stranger claims the
matcher could not score (not a face for it, as `verify` decides: rejected, counted in
the claims).

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/strangers_xdomain.py \
        [--matchers eigenface,dlib] [--repetitions 2] [--page]
"""

import argparse
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ssgallery.app.options import CompressOptions

HERE = Path(__file__).resolve().parent


def _strangers():
    sys.path.insert(0, str(HERE))
    import strangers

    return strangers


def _link(dst, src, files=None):
    """``dst/`` holding symbolic links to ``files`` of ``src`` (default: all of ``src``)."""
    if files is None:
        dst.symlink_to(src)
        return
    dst.mkdir(parents=True)
    for f in files:
        (dst / f.name).symlink_to(f)


def split(work, run, args):
    """Folders of one run: ``faces`` (the enrolled clients), ``background`` (the AT&T
    background subjects), ``probes`` (LFW strangers, AT&T strangers, one client: `roc
    --gallery` needs a client among the probes; its claims are not counted); returns
    them and {domain: stranger names}."""
    from ssgallery.datasets import att_faces_path, lfw_path
    from ssgallery.images.ingest import natural_key

    rng = np.random.default_rng(run)
    lfw = sorted((p for p in Path(lfw_path()).iterdir() if p.is_dir()), key=lambda p: p.name)
    lfw = [lfw[i] for i in rng.permutation(len(lfw))]
    att = sorted((p for p in Path(att_faces_path()).iterdir() if p.is_dir()),  # no README
                 key=lambda p: natural_key(p.name))
    att = [att[i] for i in rng.permutation(len(att))]
    clients, lfw_s = lfw[:args.clients], lfw[args.clients:args.clients + args.lfw_strangers]
    background, att_s = att[:args.background], att[args.background:]
    for p in clients:
        _link(work / "faces" / p.name,
              p, sorted(p.iterdir(), key=lambda f: natural_key(f.name))[:args.images])
    (work / "background").mkdir()
    (work / "probes").mkdir()
    for p in background:
        _link(work / "background" / p.name, p)
    for p in lfw_s + att_s + clients[:1]:
        _link(work / "probes" / p.name, p)
    return work, {"LFW": [p.name for p in lfw_s], "AT&T": [p.name for p in att_s]}


def _gallery(work, tag, matcher, background, run):
    from ssgallery.app.compress import CompressOptions, compress
    from ssgallery.app.enroll import enroll
    from ssgallery.app.roc import score_gallery

    store, gallery = work / f"e-{tag}.h5", work / f"g-{tag}.h5"
    enroll(work / "faces", store, matcher=matcher, background=background,
           warn=lambda m: None)
    summary = compress(store, gallery, CompressOptions(seed=run))
    return summary, score_gallery(gallery, work / "probes", warn=lambda m: None), gallery


def teachers(store, run):
    """Every client trained as compress trains it (its plan, jobs and `train_client`,
    compress's defaults, seed = run), the `ClientFit` kept: {client: fit} and the
    store's matcher."""
    from ssgallery.app.client_fit import train_client
    from ssgallery.app.client_training import SharedBlocks, job_blocks
    from ssgallery.app.compress_plan import client_jobs, prepare, setup_blocks
    from ssgallery.app.options import CompressRun
    from ssgallery.progress import as_progress

    plan = prepare(store, store.with_name("unused.h5"), CompressOptions(seed=run),
                   CompressRun())
    setup_blocks(plan, plan.todo, as_progress(None))
    shared = None if plan.gram is None else SharedBlocks(plan.X, plan.gram, plan.fold_spaces)
    fits = {}
    for job in client_jobs(plan, plan.todo):
        X, gram, spaces = job_blocks(job, shared)
        fits[job.client] = train_client(X, job.y, job.similarity, job.options,
                                        groups=job.groups, bounds=job.bounds, gram=gram,
                                        folds=job.folds, fold_spaces=spaces)
    return fits, plan.matcher


def teacher_tables(work, gallery, table, run):
    """The stranger claims of ``table`` scored by each client's full SVM and by its
    distilled model as compress trained them (the probes read as `roc --gallery` reads
    them): {model: (table, clients, thresholds, held-out impostor scores)}, each model at
    its own per-client held-out threshold at F (compress's ``client`` mode)."""
    from ssgallery.app.gallery_scores import probe_features
    from ssgallery.formats.gallery import read_gallery
    from ssgallery.progress import as_progress

    fits, matcher = teachers(gallery.with_name(gallery.name.replace("g-", "e-")), run)
    info = SimpleNamespace(header=read_gallery(gallery).header, matcher=matcher)
    faces, feats, _ = probe_features(info, work / "probes", list(fits),
                                     lambda m: None, as_progress(None))
    index = {p: i for i, p in enumerate(np.asarray(faces.paths).astype(str))}
    rows = np.array([index[str(p)] for p in table.probe])
    out = {}
    for model in ("svm", "ssvm"):
        score = np.full(table.score.shape, np.nan)
        for c, fit in fits.items():
            est = fit.svm if model == "svm" else fit.distiller
            mine = table.claimed == c
            score[mine] = est.decision_function(feats[rows[mine]])
        if model == "ssvm":  # the gallery's own model again: its scores, to rounding
            print(f"ssvm refitted vs gallery: largest score difference "
                  f"{np.nanmax(np.abs(score - table.score)):.2e}", file=sys.stderr)
        score[np.isnan(table.score)] = np.nan  # a failure to acquire: rejected
        t = [fits[c].svm_threshold if model == "svm" else fits[c].threshold for c in fits]
        out[model] = (SimpleNamespace(real=table.real, claimed=table.claimed, score=score),
                      list(fits), t, [fits[c].heldout["impostor"] for c in fits])
    return out


def _models(work, tag, matcher, background, run, teachers_too):
    """(model label, scores, clients, thresholds, held-out impostor scores, calibration)
    of one gallery: what compress stored, and with ``teachers_too`` the full SVM and
    the distilled model at per-client thresholds (`teacher_tables`)."""
    summary, table, gallery = _gallery(work, tag, matcher, background, run)
    order = [r["client"] for r in summary.clients]
    yield ("ssvm, compress's thresholds", table, order,
           [table.clients[c]["threshold"] for c in order],
           [summary.heldout[c]["impostor"] for c in order], summary.calibration)
    if teachers_too:
        for model, (scores, clients, t, held) in teacher_tables(work, gallery, table,
                                                                 run).items():
            yield (f"{model}, per-client thresholds", scores, clients, t, held, None)


def run_one(run, matcher, args):
    """One run of ``matcher``: per background (none, AT&T), model and stranger domain,
    the stranger claims accepted (`strangers._measure`) and the failures to acquire."""
    out = []
    with tempfile.TemporaryDirectory(prefix="ssg-xdomain-") as tmp:
        work, domains = split(Path(tmp), run, args)
        bgs = {"none": None}
        if args.background:
            bgs[f"AT&T x {args.background}"] = work / "background"
        for tag, (label, bg) in enumerate(bgs.items()):
            for model, table, order, t, held, cal in _models(work, tag, matcher, bg, run,
                                                             args.svm and bg is None):
                for domain, names in domains.items():
                    rows = np.isin(table.real, names) & np.isin(table.claimed, order)
                    sub = SimpleNamespace(real=table.real[rows], score=table.score[rows],
                                          claimed=table.claimed[rows])
                    m = _strangers()._measure(sub, order, t, args.target_far, held)
                    out.append({"run": run, "matcher": matcher, "background": label,
                                "model": model, "strangers": domain, "clients": len(order),
                                "calibration": cal, "fta": int(np.sum(np.isnan(sub.score))),
                                **m})
                    print(f"run {run} {matcher} background {label}, {model}, {domain} "
                          f"strangers: {m['accepted']}/{m['claims']}, worst {m['worst']}",
                          file=sys.stderr, flush=True)
    return out


def _row(r):
    pct = _strangers()._results().pct
    far, cal = r["accepted"] / r["claims"], r["calibration"]
    if cal is not None:
        lo, hi = cal["expected_far_ci"]
        plo, phi = cal["far_by_person"]["ci"]
        t, expected = f"{cal['global_threshold']:.3f}", \
            f"{pct(cal['expected_far'])} [{pct(lo)}, {pct(hi)}]"
        person = f"[{pct(plo)}, {pct(phi)}] ({cal['far_by_person']['design_effect']:.2f})"
    else:
        t, expected, person, hi, phi = "-", "-", "-", None, None
    return ["lfw-att", str(r["run"]), r["matcher"], r["background"], r["model"],
            r["strangers"], t, expected, person,
            f"{r['accepted']} / {r['claims']} ({r['people']} people)",
            f"{pct(far)} [{pct(r['interval'][0])}, {pct(r['interval'][1])}]",
            "-" if hi is None else "yes" if far > hi else "no",
            "-" if phi is None else "yes" if far > phi else "no",
            f"{r['above_3x']} of {r['clients']}",
            ", ".join(f"{c} {pct(f)}" for c, f in r["worst"]), str(r["fta"])]


HEAD = ["data set", "run", "matcher", "background", "model", "strangers", "T",
        "expected FAR % [95 % claims as independent]",
        "[95 % by impostor person] (design effect; info)", "stranger claims accepted",
        "measured FAR % [95 % over people]", "above the claims' interval",
        "above the people's interval",
        "clients > 3 x target", "worst clients (FAR %)", "failures to acquire"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matchers", default="eigenface")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--clients", type=int, default=20, help="LFW people enrolled")
    parser.add_argument("--images", type=int, default=8, help="images per client")
    parser.add_argument("--lfw-strangers", type=int, default=40)
    parser.add_argument("--background", type=int, default=10,
                        help="AT&T subjects given to enroll --background (0: no such row)")
    parser.add_argument("--no-svm", dest="svm", action="store_false",
                        help="no rows of the full SVM (it trains every client once more)")
    parser.add_argument("--page", action="store_true",
                        help="write docs/benchmarks/strangers_xdomain.md")
    args = parser.parse_args(argv)
    args.target_far = CompressOptions().target_far
    results = _strangers()._results()
    runs = [r for matcher in args.matchers.split(",") if matcher
            for run in range(args.repetitions) for r in run_one(run, matcher, args)]
    results.save_results("strangers_xdomain", runs)
    if args.page:
        results.write_page("strangers_xdomain",
                           "Strangers from another domain: AT&T faces on an LFW gallery",
                           results.markdown_table(HEAD, [_row(r) for r in runs]),
                           notes=results.docstring(__doc__))
    return runs


if __name__ == "__main__":
    main()
