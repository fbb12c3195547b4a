"""``ssgallery roc``: the paper's evaluation protocol, FRR/FAR curves, EER, score files."""

import click

from ssgallery.biometrics.protocol import DEFAULT_METHODS as PROTOCOL_METHODS
from ssgallery.biometrics.protocol import ProtocolOptions
from ssgallery.cli.options import (
    as_flags,
    key_file_option,
    matcher_cmd_option,
    privacy_key_option,
    warn,
)
from ssgallery.cli.progress import quiet_option, reporting
from ssgallery.learn.defaults import BLACK_BOX_M, DEFAULT_M
from ssgallery.tables import counted

DEFAULT_METHODS = ",".join(PROTOCOL_METHODS)


def _parse_m(ctx, param, value):
    if value is None:  # the matcher's default (ProtocolOptions.m)
        return None
    try:
        values = [int(v) for v in str(value).split(",") if v.strip()]
        if not values or min(values) < 1:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"expected positive integers like 2 or 1,2,5, got '{value}'") \
            from None
    return values


def _parse_methods(ctx, param, value):
    names = [v.strip().lower() for v in value.split(",") if v.strip()]
    from ssgallery.biometrics.methods import METHOD_NAMES

    bad = [n for n in names if n not in METHOD_NAMES]
    if bad or not names:
        raise click.BadParameter(f"unknown method '{bad[0] if bad else value}'; choose from "
                                 f"{', '.join(METHOD_NAMES)}")
    return names


@click.command("roc")
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[FACES_DIR]")
@click.option("--store", "store_path", default="enrollment.h5", show_default=True,
              metavar="FILE", help="Enrollment store used when no FACES_DIR is given.")
@click.option("--enrolled", "n_enrolled", type=click.IntRange(min=2), default=None,
              metavar="N", help="Enrolled clients per repetition [half of the subjects].")
@click.option("--train-images", "n_train", type=click.IntRange(min=1),
              default=ProtocolOptions.n_train, show_default=True,
              metavar="K", help="Training images per client; the rest are genuine claims.")
@click.option("--repetitions", type=click.IntRange(min=1),
              default=ProtocolOptions.repetitions, show_default=True,
              metavar="R", help="Random client/image splits to average over.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the splits.")
@click.option("--m", "m", default=None, callback=_parse_m, metavar="M[,M...]",
              show_default=f"{DEFAULT_M}; {BLACK_BOX_M} on an external matcher's store",
              help="Prototypes per client for every method except svm (several: 1,2,5); "
                   "the default is compress's.")
@click.option("--methods", default=DEFAULT_METHODS, show_default=True,
              callback=_parse_methods, metavar="A,B,...",
              help="Methods to compare: svm, ssvm, ssvm-paper, svm-sel, svm-red, ps-r, ps-b, "
                   "ps-s, ps-km, nystrom (svm-red needs an RBF similarity: the default "
                   "leaves it out on an external matcher's store).")
@click.option("-o", "--output", "out_dir", default="report", show_default=True,
              type=click.Path(file_okay=False), help="Report folder.")
@click.option("--scores", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Recompute from 4-column score files instead (repeatable; a shell glob "
                   "after the first --scores is fine: --scores report/scores/*.txt).")
@click.option("--gallery", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Evaluate this gallery on --probes instead of running the protocol.")
@click.option("--probes", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Labelled probes DIR/<client>/*.png for --gallery (images the gallery "
              "was trained on, found by sha256 in the store it was compressed from when "
              "that is here, are named in a warning: their figures are optimistic).")
@click.option("--dev-scores", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Development score files: choose one threshold per method on them "
                   "(with --eval-scores; repeatable).")
@click.option("--eval-scores", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Evaluation score files: FAR, FRR and HTER at the dev threshold.")
@click.option("--criterion", type=click.Choice(["eer", "min-hter", "far"]), default="eer",
              show_default=True, help="How the dev threshold is chosen (far: --criterion-far).")
@click.option("--criterion-far", type=click.FloatRange(0, 1), default=None, metavar="F",
              help="With --criterion far: the FAR on the dev scores (e.g. 0.01).")
@click.option("--jobs", "n_jobs", type=int, default=1, show_default=True, metavar="N",
              help="Clients trained in N local processes (-1: one per core).")
@click.option("--identification/--no-identification", default=True, show_default=True,
              help="Protocol mode: also search every probe against every client (closed-set "
              "CMC, open-set FNIR at FPIR 1 % and 0.1 %, cmc.png, det_identification.png, "
              "identification/*.txt).")
@click.option("--norm-folds", type=click.IntRange(min=0), default=ProtocolOptions.norm_folds,
              show_default=True, metavar="K",
              help="Searches are ranked as a gallery deploys them: each method's scores "
                   "normalised with its training impostors held out by subject in K folds "
                   "(as compress does); 0 ranks raw scores (K times fewer refits).")
@click.option("--between", type=float, default=ProtocolOptions.between, show_default=True,
              metavar="W",
              help="ssvm and ssvm-paper are distilled as 'compress --between W' does: the "
              "SVM's scores half-way between each client's images and the impostors' too, "
              "with weight W (0: the paper's training images only). Run once with 0 and "
              "once with W to measure the effect. Eigenface and dlib; a black-box "
              "matcher trains with 0. Other methods ignore it (a warning names a weight "
              "that no listed method uses).")
@click.option("--no-plot", is_flag=True, help="Do not draw the plots.")
@click.option("--force", is_flag=True, help="Replace report files that were not written by "
              "ssgallery roc (never a folder, a device, a store or a gallery).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON: "
              "summary.json with 'files', the path of each file written.")
@click.option("--wide", is_flag=True, help="Print every convention (averaged-curve and "
              "global-threshold EER and FRR, FAR 0.1 %, fit time, failures to acquire); the "
              "default table fits 100 columns. summary.json always has them all.")
@quiet_option
@key_file_option
@matcher_cmd_option
@privacy_key_option
def command(paths, scores, no_plot, as_json, wide, quiet, **options):
    """Measure what compression costs: FRR/FAR curves, EER and matches per claim.

    Runs the paper's protocol (Sect. IV-A) on FACES_DIR (default: the enrollment
    store): per repetition a random half of the subjects are enrolled, each with
    --train-images training images; the rest of their images are genuine claims and
    every image of the other subjects is an impostor claim against every client. Each
    method is trained per client, each client's threshold is swept, and the curves are
    averaged over clients and repetitions. Writes to -o: summary.json, curves.csv,
    roc.png, det.png, scores.png and scores/*.txt (4-column: claimed_id real_id
    probe_label score, metadata in scores/*.txt.json). In protocol mode every probe is
    also searched against every client (identification), ranked as a compressed
    gallery ranks them (each method's held-out Z-norm, --norm-folds): closed-set CMC,
    open-set FNIR at FPIR = 1 % and 0.1 % with one threshold on the top candidate's
    centred score, cmc.png, det_identification.png (FNIR against FPIR) and
    identification/*.txt (every probe against every client).

    Every figure names its convention: EER client-mean (the headline: each client's
    own threshold), EER averaged-curve (the paper's Fig. 4 curve), global-threshold
    (one threshold for all clients); "—" marks a FAR the data cannot resolve.
    --scores reads 4-column, 5-column and bob CSV (*.csv) score files; NaN scores are
    failures to acquire. --dev-scores/--eval-scores: threshold on dev, rates on eval.

    Exit status: 0 report written (warnings aside), 2 input or usage error (one line
    on stderr; a report file it may not replace is refused before any training), 4
    internal error, 130 interrupted (the files already replaced are named).

    \b
    Examples:
      ssgallery roc faces/ --m 2 -o report/
      ssgallery roc                                   # on ./enrollment.h5
      ssgallery roc faces/ --m 1,2,5 --methods svm,ssvm,nystrom --jobs 2
      ssgallery roc faces/ --methods svm,ssvm --between 0 -o report-paper-fit/
      ssgallery roc --scores report/scores/*.txt -o again/
      ssgallery roc --gallery gallery.h5 --probes probes/
      ssgallery roc --dev-scores dev.txt --eval-scores eval.txt --criterion min-hter
    """
    from ssgallery.app.options import ReportOptions, RocInputs, split_options
    from ssgallery.app.roc import roc

    faces_dir = None
    if scores:  # a shell glob after --scores leaves the other files as arguments
        scores = list(scores) + list(paths)
    elif len(paths) > 1:
        raise click.UsageError(f"expected one FACES_DIR, got {len(paths)} arguments "
                               f"(score files go after --scores)")
    elif paths:
        faces_dir = paths[0]
    inputs, protocol, report = split_options(
        dict(options, faces_dir=faces_dir, scores=scores, plot=not no_plot, warn=warn),
        RocInputs, ProtocolOptions, ReportOptions)
    with reporting(quiet) as progress:
        result = roc(inputs, protocol, report, progress=progress)
    if as_json:
        click.echo(_with_files(result))
    else:
        _echo(result, report.out_dir, wide, quiet)


def _with_files(result):
    """``--json``: summary.json as roc wrote it, with ``files``, where it wrote each file
    of the report (``summary``, ``curves``, the plots, ``scores``: a list). The file is
    read back as any input is (`ssgallery.safeio.read_regular`: a regular file of at most
    `ssgallery.safeio.MAX_TEXT_BYTES`, never a FIFO waited on) and must be a JSON object
    of roc's: whoever can write the report folder can swap it after roc renamed it."""
    import json

    from ssgallery import jsontext
    from ssgallery.errors import FormatError
    from ssgallery.safeio import MAX_TEXT_BYTES, read_regular

    path = result["files"]["summary"]
    data = read_regular(path, "report summary", MAX_TEXT_BYTES, error=FormatError)
    why = "not a summary written by ssgallery roc"
    try:
        summary = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        summary, why = None, str(exc)[:200]
    if not isinstance(summary, dict) or summary.get("tool") != "ssgallery roc":
        raise FormatError(f"changed since roc wrote it ({why})", path=path)
    return jsontext.dumps(dict(summary, files=result["files"]), indent=2)


def _echo(result, out_dir, wide=False, quiet=False):
    """The report's tables and the files written (not with ``quiet``), for the
    terminal."""
    from ssgallery.biometrics.report import (
        format_dev_eval,
        format_identification_table,
        format_table,
    )

    if result["mode"] == "dev-eval":
        click.echo(format_dev_eval(result["results"]))
        if not quiet:
            click.echo(f"wrote {result['files']['summary']}")
        return
    command = click.get_current_context().command
    click.echo(as_flags(format_table(result["summaries"], wide=wide), command))
    for method, why in (result.get("config") or {}).get("left_out", {}).items():
        click.echo(f"{method} not run: it {why} (the default methods leave it out)")
    if result["identification"]:
        click.echo("\nidentification (every probe against every client):")
        click.echo(as_flags(format_identification_table(result["identification"]), command))
    if quiet:
        return
    import os
    import textwrap

    files = result["files"]
    shown = [os.path.basename(files[k]) for k in (
        "summary", "curves", "plot", "det_plot", "scores_plot", "cmc_plot",
        "identification_det_plot") if k in files]
    for key, what, folder in (("scores", "score file", "scores/"),
                              ("identification_scores", "full-search score file",
                               "identification/")):
        n = len(files.get(key) or ())
        if n:
            shown.append(f"{counted(n, what)} in {folder}")
    click.echo(textwrap.fill(f"wrote to {out_dir}: " + ", ".join(shown), 100,
                             subsequent_indent="  "))
