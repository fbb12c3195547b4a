"""Does compress's FAR promise hold for many strangers, per client too?

`compress --target-far F` (default --threshold-mode znorm-global) promises that about F
of the claims of people never seen at compress time are accepted, and `info` prints
that expected FAR with a 95 % interval. Per run: a gallery compressed with compress's
defaults (the library function behind the command), every image of every stranger
claimed against every client at the thresholds it stores (`roc --gallery`'s scoring),
and the accepted share set beside two intervals of the held-out estimate: the
Clopper-Pearson interval counting every held-out impostor score as an independent trial
(what `info` printed before), and the one `info` prints, by impostor person
(`ssgallery.biometrics.intervals.clustered_interval`: Clopper-Pearson on the counts
divided by the design effect of the held-out people, in brackets). "inside": whether
the measured stranger FAR lies in each; under the table, per data set and pool, how
many runs' do.

- synth: 20 identities x 10 images enrolled (`ssgallery synth`, seed 1 + run, as the
  sample data is seed 0), every image enrolled as `make demo` does; the strangers are
  300 identities x 10 images of seed 1000. A seed draws every identity's face
  parameters anew (`identity_params(seed, identity)`), so the strangers are other
  people of the same population.
- att: 20 AT&T subjects enrolled with 5 images (their other 5 are their fresh genuine
  images, below), the other 20 subjects' 10 images are the strangers
  (benchmarks/calibration.py's leave-subjects-out split, seed = run).

Rows: `person` is what compress ships (the pool of held-out impostor scores normalised
leaving one impostor person out, `ssgallery.biometrics.calibration.cross_normalised`);
its thresholds are the gallery's own. `halves` recomputes the thresholds from the same
held-out scores as compress set them before (each client's scores in halves of
alternate scores, both halves holding the same people). "over people": the 95 %
interval of the measured FAR by a bootstrap over stranger people (one person's images
are not independent trials; 2000 resamples, seed 0). Per client: the clients whose own
stranger FAR is above 3 F, and the worst three by name. "expected FRR": the held-out
genuine scores below the thresholds (what `info` prints), the price of the row's T.

Could compress name those clients? At compress time each client's own FAR can be read
only off its held-out impostor scores (one client's impostors: a few people). "named
by held-out FAR > 3 F": the clients whose held-out impostor scores at the stored
threshold accept more than 3 F, and how many of them are above 3 F on the strangers
too. Under the table, per data set over its runs, the rank correlation (Spearman)
between a client's held-out FAR and its stranger FAR.

The FRR (second table, benchmarks/_strangers_frr.py): compress's expected FRR and its
two intervals beside the share of each client's fresh genuine images (never enrolled)
rejected at the stored thresholds; "over clients": a bootstrap over clients.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/strangers.py \
        [--datasets synth,att] [--repetitions 4]
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CROSS_FITS = {"person": "person", "halves": "parity"}  # row label: calibrate_thresholds'


def _results():
    sys.path.insert(0, str(HERE))
    import _results

    return _results


def _synth_run(work, run, args):
    """(store, probes folder) of one synthetic run: the enrolled set of seed 1 + run, the
    strangers of seed 1000 (renamed s001...), and ``args.fresh`` new images of every
    client (`_strangers_frr.write_fresh`)."""
    from _strangers_frr import write_fresh

    from ssgallery.app.enroll import enroll
    from ssgallery.images.synth import write_sample_data

    strangers = work / "strangers"
    if not strangers.exists():
        write_sample_data(strangers, identities=args.strangers, images=10, seed=1000,
                          probes=0)
    enrolled = work / f"enrolled{run}"
    write_sample_data(enrolled, identities=args.identities, images=10, seed=1 + run,
                      probes=0)
    probes = work / f"probes{run}"
    probes.mkdir()
    for d in sorted((strangers / "faces").iterdir()):
        (probes / f"s{d.name[1:]}").symlink_to(d)
    write_fresh(probes, args.identities, 1 + run, 10, args.fresh)
    enroll(enrolled / "faces", work / f"e{run}.h5", warn=lambda m: None)
    return work / f"e{run}.h5", probes


def _att_run(work, run, args):
    import calibration as split_rules  # benchmarks/calibration.py: the same split

    from ssgallery.app.enroll import enroll
    from ssgallery.datasets import att_faces_path

    subjects = split_rules.face_subjects(Path(att_faces_path()), 6)
    folder = work / f"att{run}"
    split_rules.enrol_split(subjects, args.att_enrolled, 5, np.random.default_rng(run), folder)
    enroll(folder / "train", folder / "e.h5", warn=lambda m: None)
    return folder / "e.h5", folder / "probes"


def _measure(table, clients, thresholds, far, heldout):
    """Stranger claims accepted at per-client ``thresholds``: counts, the bootstrap
    interval over stranger people, and per client beside the share of its ``heldout``
    impostor scores (one array per client) the threshold accepts."""
    stranger = ~np.isin(table.real, clients)
    accepted = np.zeros(table.score.shape, bool)
    for c, t in zip(clients, thresholds):
        mine = table.claimed == c
        accepted[mine] = table.score[mine] >= t  # NaN (failure to acquire): rejected
    people, who = np.unique(table.real[stranger], return_inverse=True)
    a = np.bincount(who, accepted[stranger]).astype(float)
    n = np.bincount(who).astype(float)
    rng = np.random.default_rng(0)
    boot = [a[i].sum() / n[i].sum() for i in
            (rng.integers(0, people.size, people.size) for _ in range(2000))]
    per = [(c, int(np.sum(accepted & stranger & (table.claimed == c))),
            int(np.sum(stranger & (table.claimed == c)))) for c in clients]
    held = [float(np.mean(np.asarray(h, dtype=float) >= t)) for h, t in zip(heldout,
                                                                              thresholds)]
    named = [h > 3 * far for h in held]
    return {"accepted": int(a.sum()), "claims": int(n.sum()), "people": int(people.size),
            "interval": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))],
            "above_3x": sum(k / m > 3 * far for _, k, m in per),
            "named": sum(named),
            "named_above": sum(x and k / m > 3 * far for x, (_, k, m) in zip(named, per)),
            "per_client": [[c, h, k / m] for h, (c, k, m) in zip(held, per)],
            "worst": sorted(([c, k / m] for c, k, m in per), key=lambda w: -w[1])[:3]}


def run_one(dataset, run, args):
    from _strangers_frr import measure_frr

    from ssgallery.app.compress import CompressOptions, compress
    from ssgallery.app.roc import score_gallery
    from ssgallery.biometrics.calibration import calibrate_thresholds

    with tempfile.TemporaryDirectory(prefix="ssg-strangers-") as tmp:
        work = Path(tmp)
        store, probes = (_synth_run if dataset == "synth" else _att_run)(work, run, args)
        summary = compress(store, work / "g.h5", CompressOptions(seed=run))
        table = score_gallery(work / "g.h5", probes, warn=lambda m: None)
        from ssgallery.formats.store import load_store

        labels = np.asarray(load_store(store, images=False).labels).astype(str)
    order = [r["client"] for r in summary.clients]
    norms = [r["normalization"] for r in summary.clients]
    held = [summary.heldout[c] for c in order]
    people = [labels[np.asarray(h["impostor_row"], dtype=int)] for h in held]
    out = {"dataset": dataset, "run": run, "clients": len(order), "rows": {},
           "frr": measure_frr(table, order, [table.clients[c]["threshold"] for c in order],
                              summary.calibration)}
    for label, cross_fit in CROSS_FITS.items():
        t, info = calibrate_thresholds([h["impostor"] for h in held], norms,
                                       summary.target_far, "znorm-global", people=people,
                                       cross_fit=cross_fit)
        if label == "person":  # what compress stored
            stored = [table.clients[c]["threshold"] for c in order]
            assert np.allclose(t, stored), "the benchmark's thresholds are not compress's"
            twoway = _twoway(held, people, order, info)
        genuine = [np.asarray(h["genuine"], dtype=float) for h in held]
        rejected = sum(int(np.sum(~(g >= tc))) for g, tc in zip(genuine, t))
        out["rows"][label] = {"T": info["global_threshold"],
                              "expected_frr": rejected / sum(g.size for g in genuine),
                              "expected": info["expected_far"],
                              "expected_ci": info["expected_far_ci"],
                              "person_ci": info["far_by_person"]["ci"],
                              "design_effect": info["far_by_person"]["design_effect"],
                              **_measure(table, order, t, summary.target_far,
                                         [h["impostor"] for h in held])}
    out["rows"]["person"]["twoway_ci"], out["rows"]["person"]["twoway_d"] = twoway
    return out


def _twoway(held, people, clients, info):
    """The interval of the pool compress ships clustered by person and client
    (`_strangers_twoway.twoway_interval`), from the same accepts as ``info``'s."""
    from _strangers_twoway import twoway_interval

    from ssgallery.biometrics.calibration import cross_normalised

    hits = [cross_normalised(h["impostor"], who) >= info["global_threshold"]
            for h, who in zip(held, people)]
    assert sum(int(x.sum()) for x in hits) == info["accepted"], "not compress's accepts"
    return twoway_interval(hits, people, clients)


def _inside(m, key):
    """Whether the measured stranger FAR lies inside the row's interval ``key``."""
    lo, hi = m[key]
    return lo <= m["accepted"] / m["claims"] <= hi


def _row(r, label):
    pct = _results().pct
    m = r["rows"][label]
    lo, hi = m["expected_ci"]
    plo, phi = m["person_ci"]
    return [r["dataset"], str(r["run"]), f"`{label}`", f"{m['T']:.3f}",
            f"{pct(m['expected'])} [{pct(lo)}, {pct(hi)}]",
            f"[{pct(plo)}, {pct(phi)}] ({m['design_effect']:.2f})",
            f"{m['accepted']} / {m['claims']} ({m['people']} people)",
            (f"{pct(m['accepted'] / m['claims'])} [{pct(m['interval'][0])}, "
             f"{pct(m['interval'][1])}]"),
            "yes" if _inside(m, "expected_ci") else "no",
            "yes" if _inside(m, "person_ci") else "no",
            f"{m['above_3x']} of {r['clients']}",
            f"{m['named']} ({m['named_above']} above 3 x on strangers)",
            pct(m["expected_frr"]),
            ", ".join(f"{c} {pct(f)}" for c, f in m["worst"])]


HEAD = ["data set", "run", "pool", "T", "expected FAR % [95 % claims as independent]",
        "[95 % by impostor person] (design effect; info)",
        "stranger claims accepted", "measured FAR % [95 % over people]",
        "inside the claims' interval", "inside the people's interval",
        "clients > 3 x target",
        "named by held-out FAR > 3 x target", "expected FRR % (info)",
        "worst clients (FAR %)"]


def coverage(runs):
    """Per data set and pool: how many runs' measured stranger FAR lies inside the
    interval counting claims as independent and inside the interval by impostor
    person, of how many runs."""
    out = {}
    for r in runs:
        for label, m in r["rows"].items():
            c = out.setdefault((r["dataset"], label), [0, 0, 0])
            c[0] += _inside(m, "expected_ci")
            c[1] += _inside(m, "person_ci")
            c[2] += 1
    return out


def rank_agreement(runs, label="person"):
    """Per data set: the Spearman correlation between each client's held-out FAR and
    its stranger FAR over every run's clients, and how many clients that is."""
    from scipy.stats import spearmanr

    out = {}
    for dataset in dict.fromkeys(r["dataset"] for r in runs):
        pairs = [(h, f) for r in runs if r["dataset"] == dataset
                 for _, h, f in r["rows"][label]["per_client"]]
        held, strangers = np.array(pairs).T
        rho = spearmanr(held, strangers).statistic if np.ptp(held) and np.ptp(strangers) \
            else float("nan")
        out[dataset] = (float(rho), len(pairs))
    return out


def run_options(doc, page, repetitions):
    """The parser of a script that runs `run_one` (this one, strangers_twoway.py): its
    data sets and sizes, ``--repetitions`` (default ``repetitions``) and ``--page`` (it
    writes docs/benchmarks/<page>.md); ``doc`` is the script's docstring."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--datasets", default="synth,att")
    parser.add_argument("--repetitions", type=int, default=repetitions)
    parser.add_argument("--identities", type=int, default=20, help="synth: enrolled")
    parser.add_argument("--strangers", type=int, default=300, help="synth: strangers")
    parser.add_argument("--att-enrolled", type=int, default=20)
    parser.add_argument("--fresh", type=int, default=10,
                        help="synth: new genuine images per client")
    parser.add_argument("--page", action="store_true",
                        help=f"write docs/benchmarks/{page}.md")
    return parser


def main(argv=None):
    args = run_options(__doc__, "strangers", 4).parse_args(argv)
    _results()
    runs = []
    for dataset in [d for d in args.datasets.split(",") if d]:
        for run in range(args.repetitions):
            runs.append(run_one(dataset, run, args))
            m = runs[-1]["rows"]
            frr = runs[-1]["frr"]
            print(f"{dataset} run {run}: " + ", ".join(
                f"{k} {v['accepted']}/{v['claims']}" for k, v in m.items())
                + f", fresh genuine rejected {frr['rejected']}/{frr['claims']}",
                file=sys.stderr, flush=True)
    _results().save_results("strangers", runs)
    if args.page:
        from _strangers_frr import FRR_HEAD, frr_coverage, frr_row
        from _strangers_frr import __doc__ as frr_doc

        r = _results()
        rows = [_row(x, label) for label in CROSS_FITS for x in runs]
        inside = "\n".join(
            f"- {d}, `{label}`: the measured FAR inside the interval counting claims "
            f"in {a} of {n} runs, inside the interval by impostor person in {b} of {n}"
            for (d, label), (a, b, n) in coverage(runs).items())
        agreement = inside + "\n" + "\n".join(
            f"- {d}, `person`: Spearman {rho:+.2f} between held-out and stranger FAR over "
            f"{n} client models" for d, (rho, n) in rank_agreement(runs).items())
        frr = r.markdown_table(FRR_HEAD, [frr_row(x, r.pct) for x in runs])
        r.write_page("strangers", "Strangers: the FAR promise on people never seen",
                     r.markdown_table(HEAD, rows) + "\n\n" + agreement
                     + "\n\n**The FRR on fresh genuine images.**\n\n" + frr + "\n\n"
                     + frr_coverage(runs),
                     notes=r.docstring(__doc__) + "\n\n" + r.docstring(frr_doc))
    return runs


if __name__ == "__main__":
    main()
