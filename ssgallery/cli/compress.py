"""``ssgallery compress``: enrollment store -> gallery of super-sparse client models."""

import os

import click

from ssgallery import jsontext
from ssgallery.app.options import (
    BLACK_BOX_M,
    BLACK_BOX_MAX_ITER,
    BLACK_BOX_SWAP_ROUNDS,
    INITS,
    JOB_TIMEOUT,
    MAX_ITER,
    SOLVERS,
    CompressOptions,
)
from ssgallery.app.training_sets import IMPOSTOR_MODES
from ssgallery.biometrics.calibration import THRESHOLD_MODES
from ssgallery.cli.compress_table import client_table, table_legend
from ssgallery.cli.operating import (
    calibration_line,
    few_people_warning,
    frr_warning,
    open_set_line,
    open_set_warning,
    unresolved_warning,
)
from ssgallery.cli.operating_far import far_warning
from ssgallery.cli.options import (
    Fraction,
    key_file_option,
    matcher_cmd_option,
    privacy_key_option,
    unrecorded_fta_warning,
    warn,
)
from ssgallery.cli.progress import quiet_option, reporting
from ssgallery.errors import printable
from ssgallery.learn.defaults import DEFAULT_M
from ssgallery.tables import counted, listed

DEFAULT = CompressOptions()  # every option's default: one definition


def _int_or_auto(lowest):
    """A Click callback: 'auto' or an integer >= ``lowest``."""
    kind = "a positive" if lowest == 1 else "a non-negative"

    def parse(ctx, param, value):
        if value in ("auto", None):  # None: the option's default is the matcher's
            return value
        try:
            number = int(value)
            if number < lowest:
                raise ValueError
        except ValueError:
            raise click.BadParameter(f"expected {kind} integer or 'auto', got '{value}'") \
                from None
        return number
    return parse


@click.command("compress")
@click.option("--store", default="enrollment.h5", show_default=True, metavar="FILE",
              help="Enrollment store to read.")
@click.option("-o", "--output", "--gallery", "gallery", default="gallery.h5",
              show_default=True, metavar="FILE",
              help="Gallery to write (--gallery, as the other commands name it, is the same).")
@click.option("--m", "m", default=None, callback=_int_or_auto(1), metavar="M|auto",
              show_default=f"{DEFAULT_M} for eigenface and dlib, {BLACK_BOX_M} for an external matcher",
              help="Virtual prototypes per client, the matches a claim costs; 'auto' picks "
                   "m by validation (the paper's Eq. 8). An external (black-box) matcher's "
                   "prototypes are real images, and more of them are needed "
                   "(docs/external-matcher.md).")
@click.option("--rho", type=click.FloatRange(min=0), default=DEFAULT.rho, show_default=True,
              help="With --m auto: price of one prototype in units of validation loss.")
@click.option("--target-far", type=Fraction(), default=DEFAULT.target_far,
              show_default=True, metavar="F",
              help="False acceptance rate the thresholds aim at, a fraction (0.01: 1 % of "
              "impostor claims), on people never seen at "
              "compress time, on average over clients; compress warns naming a client "
              "whose own held-out impostors show more (their 95% interval by person "
              "wholly above it: docs/operating-points.md, per client).")
@click.option("--target-fpir", type=Fraction(low_open=True), default=DEFAULT.target_fpir,
              show_default=True, metavar="F",
              help="1:N search (identify --open-set): the fraction of strangers' searches "
              "over every client that may return someone (0.01: 1 %); sets one threshold "
              "on the best "
              "normalised score for this gallery's number of clients.")
@click.option("--threshold-mode", type=click.Choice(list(THRESHOLD_MODES)),
              default=DEFAULT.threshold_mode, show_default=True,
              help="znorm-global: Z-norm each client on its held-out impostor scores, then "
              "one threshold on all clients' pooled scores; client: each client's own "
              "held-out impostors; shrink: the client's normalised threshold half-way to "
              "the global one. Thresholds rest on impostor people (the other clients and "
              "the background): below 20, no mode keeps the target FAR and compress warns "
              "(enroll --background). See docs/operating-points.md.")
@click.option("--refit-matcher/--no-refit-matcher", default=DEFAULT.refit_matcher,
              show_default=True,
              help="Refit a matcher that learns from images (eigenface) on each "
              "threshold-CV fold, so that held-out impostors are unseen by it too.")
@click.option("--lam", type=click.FloatRange(min=0), default=DEFAULT.lam, show_default=True,
              help="Ridge penalty on beta (the paper's Eq. 2), in the units of the "
                   "learner's lam_scale (default: relative to the spread of the similarities).")
@click.option("--solver", type=click.Choice(SOLVERS), default=DEFAULT.solver,
              show_default=True, help="varpro: L-BFGS-B on all prototypes; paper: Algorithm 1.")
@click.option("--init", type=click.Choice(INITS), default=DEFAULT.init, show_default=True,
              help="Initial prototypes. auto: 'class' (by class weight) for eigenface, "
                   "'genuine' (m-1 on the client's own images) for black-box matchers.")
@click.option("--clients", default=None, metavar="A,B,...",
              help="Compress only these enrolled clients [all]; a comma inside an id is "
              "written '\\,' (--clients 'doe\\, jane,c01').")
@click.option("--cv-folds", type=click.IntRange(min=0), default=DEFAULT.cv_folds,
              show_default=True,
              help="Folds of the threshold CV; 0 = thresholds on training scores (faster, "
              "optimistic; with an external matcher it saves program runs only where the "
              "prototypes move, --max-iter > 0).")
@click.option("--max-iter", default=DEFAULT.max_iter, show_default=True,
              callback=_int_or_auto(0), metavar="N|auto",
              help="Learner iterations: L-BFGS-B steps (varpro) or sweeps over the m "
              "prototypes (paper); 0: no move (the prototypes stay on training images). "
              f"auto: {MAX_ITER} for eigenface and dlib, {BLACK_BOX_MAX_ITER} for an "
              "external (black-box) matcher, whose moves did not beat real images "
              "(docs/external-matcher.md).")
@click.option("--refresh-every", type=click.IntRange(min=1), default=DEFAULT.refresh_every,
              show_default=True, metavar="P",
              help="--solver paper: the matcher scores a moved prototype every P moves, a "
              "first-order model in between (more sweeps for the same matcher runs).")
@click.option("--guard/--no-guard", default=DEFAULT.guard, show_default=True,
              help="Refit clients whose model ranks held-out images much worse than their "
              "SVM ('vs SVM' > 0.05) from other starts (m + 1 with --m auto).")
@click.option("--between", type=click.FloatRange(min=0), default=DEFAULT.between,
              show_default=True, metavar="W",
              help="Also distil the SVM's scores at points half-way between the client's "
              "images and the impostors', with weight W relative to the training images "
              "(0: the paper's training images only; the default keeps strangers who "
              "look like the client lower in 1:N search, see docs/identification.md). "
              "Eigenface and dlib; a black-box matcher trains with 0.")
@click.option("--swap-rounds", default=DEFAULT.swap_rounds, show_default=True,
              callback=_int_or_auto(0), metavar="N|auto",
              help="Improve each client's starting prototypes by up to N swaps of one for "
              "another training image, each lowering the training objective most, before "
              "any move (no matcher run: the training images' similarities are known). "
              f"auto: 0 for eigenface and dlib, {BLACK_BOX_SWAP_ROUNDS} for an external "
              "matcher. None for a client whose impostors are all one person (a gallery "
              "of two people): the swaps would fit that person. Memory and time grow as "
              "the square of each client's training images; --m auto swaps at its "
              "largest m on every fold.")
@click.option("--max-impostors", type=click.IntRange(min=0), default=DEFAULT.max_impostors,
              show_default=True,
              metavar="K", help="Each client trains on its own images and at most K impostor "
              "images (0 = all). Galleries of up to K + 1 people's images are not capped.")
@click.option("--impostors", type=click.Choice(IMPOSTOR_MODES), default=DEFAULT.impostors,
              show_default=True, help="Which impostors when capped: a seeded sample "
              "stratified over subjects, or the subjects nearest to the client. A cap "
              "that leaves one impostor person holds nothing out: the threshold is on "
              "training scores, and compress says what it accepts of the store's other "
              "people.")
@click.option("--jobs", type=int, default=1, show_default=True, metavar="N",
              help="Train clients in N local processes (-1: one per core).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Train clients on a Dask cluster (tcp://host:8786; needs the "
              "'distributed' extra; see docs/scale.md).")
@click.option("--job-timeout", type=float, default=JOB_TIMEOUT,
              show_default=True, metavar="SECONDS",
              help="With --scheduler: stop when a client's job has run this long on the "
              "cluster without a result (0: no limit; docs/security.md).")
@click.option("--resume", is_flag=True,
              help="Continue an interrupted run: reuse the clients committed in "
              "GALLERY.parts/ with the same store and options; parts of other options "
              "or another store are named and their clients trained again; no parts "
              "there: a warning, every client trained.")
@click.option("--update", is_flag=True,
              help="Keep the existing gallery's clients trained with the same options on "
              "the same matcher basis; train only the others (e.g. after enroll --add), "
              "set against the gallery's threshold calibration; no gallery there: a "
              "warning, every client trained. A gallery of protected templates is "
              "refused (compress every client again: it renews them).")
@click.option("--seed", type=int, default=DEFAULT.seed, show_default=True, help="Random seed.")
@click.option("--force", is_flag=True, help="Replace an existing -o file that is not an "
              "ssgallery gallery (never a store, a folder or a device).")
@click.option("--protect-templates", is_flag=True, default=DEFAULT.protect_templates,
              help="Store the prototypes through a secret rotation of the matcher space "
              "keyed by the privacy key (--privacy-key-file), and no rendered image: the "
              "same verdicts; verify, identify and show then need the key; compressing "
              "again with a new key renews the templates (eigenface, dlib).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@key_file_option
@matcher_cmd_option
@privacy_key_option
def command(store, gallery, as_json, quiet, **options):
    """Train each client's SVM, distil it into m virtual prototypes, write the gallery.

    Per enrolled client: a one-vs-all SVM on the matcher's similarity (C by 5-fold CV),
    distilled into m prototypes with weights beta and bias b (the SVM's decision
    values are the targets), and 5-fold cross-validated impostor scores; once every
    client is trained, the thresholds at --target-far are set from all clients'
    held-out scores (--threshold-mode), and the 1:N threshold at --target-fpir on the
    best normalised score of a search, from the held-out people's searches of every
    client (identify --open-set). The gallery holds no training image, but its
    prototypes are biometric templates: an eigenface prototype (and its stored
    rendering) can look like the client. Treat the gallery as personal data:
    --privacy-key-file encrypts it, --protect-templates rotates the templates
    (docs/privacy.md). It is written at the end, atomically; finished clients are
    committed to GALLERY.parts/ meanwhile (--resume).
    Each client trains on its own images and at most --max-impostors others.

    Exit status: 0 gallery written (warnings aside), 2 input or usage error (one line
    on stderr; the gallery is left as it was), 4 internal error, 130 interrupted (the
    gallery as it was; the finished clients are kept for --resume).

    \b
    Examples:
      ssgallery compress                       # enrollment.h5 -> gallery.h5 (m = 2; 5 external)
      ssgallery compress --m 5 --target-far 0.001 -o strict.h5
      ssgallery compress --target-fpir 0.001   # 1:N: 0.1 % of strangers' searches hit
      ssgallery compress --m auto --rho 0.005
      ssgallery compress --threshold-mode client   # each client's own threshold
      ssgallery compress --m 5 --cv-folds 0    # thresholds on training scores
      ssgallery compress --jobs 2              # two local processes, same gallery
      ssgallery compress --resume              # after Ctrl-C (same options): the missing clients
      ssgallery compress --matcher-cmd "my-matcher --model net.bin"   # an external store
      ssgallery compress --update              # after enroll --add: only the new clients
      ssgallery compress --privacy-key-file /etc/ssgallery/privacy.key --protect-templates
    """
    from ssgallery.app.compress import GUARD_GAP, CompressInterrupted, compress
    from ssgallery.app.options import CompressOptions, CompressRun, split_options
    from ssgallery.app.parallel import ClusterLost
    from ssgallery.errors import SsgalleryError

    with reporting(quiet) as progress:
        training, run = split_options(dict(options, progress=progress, warn=warn),
                                      CompressOptions, CompressRun)
        try:
            summary = compress(store, gallery, training, run)
        except CompressInterrupted as exc:
            raise KeyboardInterrupt(f"{exc}; '{_resume_command(store, gallery, options)}' "
                                    "with the same other options continues") from None
        except ClusterLost as exc:  # exit 2, and how to go on from the kept clients
            if not exc.parts:
                raise
            raise SsgalleryError(f"{exc}; '{_resume_command(store, gallery, options)}' "
                                 "with the same other options continues") from None
    if as_json:
        click.echo(jsontext.dumps(summary.to_dict(), indent=2))
    elif not quiet:
        _echo(summary)
    _warnings(summary, GUARD_GAP)  # on stderr: with --json and --quiet too


def _echo(summary):
    """The summary of a run for the terminal (stdout): the clients' table, the gallery's
    line, its calibration and 1:N operating point."""
    click.echo(client_table(summary.clients))
    click.echo(table_legend(summary))
    n = len(summary.clients)
    if summary.kept or summary.resumed:
        click.echo(f"trained {len(summary.trained)} client(s); kept {len(summary.kept)} from "
                   f"the gallery, resumed {len(summary.resumed)} from committed parts")
    mean_m = sum(r["m"] for r in summary.clients) / n
    mean_sv = sum(r["svm_n_support"] for r in summary.clients) / n
    click.echo(f"{summary.gallery}: {counted(n, 'client')}, "
               f"{counted(mean_m, 'prototype', shown=f'{mean_m:.3g}')} per client on average "
               f"(the full SVMs: {mean_sv:.1f} support vectors), target FAR "
               f"{summary.target_far:g}")
    click.echo(calibration_line(summary.calibration, summary.matcher))
    click.echo(open_set_line(summary.open_set))


# what this host brought to the run: --resume's options check does not see them (they are
# no training option), so a resume without them would silently write another gallery
# (unsigned, unencrypted) or fail to find the matcher program
HOST_OPTIONS = (("key_file", "--key-file"), ("privacy_key_file", "--privacy-key-file"),
                ("matcher_cmd", "--matcher-cmd"))


def _resume_command(store, gallery, options=None):
    """The command that resumes an interrupted run, its store and gallery named unless
    they are the defaults (``compress --resume`` alone would resume ``gallery.h5``), the
    host's options the run was given (`HOST_OPTIONS`), and what it was asked to train:
    its ``--clients`` and ``--update`` (no training option either: without them the
    command trains every client, the kept ones of an update again)."""
    import shlex

    options = options or {}
    words = ["ssgallery", "compress"]
    words += ["--store", os.fspath(store)] if store != "enrollment.h5" else []
    words += ["-o", os.fspath(gallery)] if gallery != "gallery.h5" else []
    for name, flag in HOST_OPTIONS:
        if options.get(name) is not None:
            words += [flag, os.fspath(options[name])]
    words += ["--clients", options["clients"]] if options.get("clients") is not None else []
    words += ["--update"] if options.get("update") else []
    return shlex.join([*words, "--resume"])


def _warnings(summary, guard_gap):
    """The run's warnings (stderr), printed with or without --quiet or --json."""
    if open_set_warning(summary):
        warn(open_set_warning(summary))
    for advice in (unresolved_warning(summary.calibration),
                   few_people_warning(summary.calibration),
                   frr_warning(summary.calibration, summary.matcher),
                   far_warning(summary.calibration)):
        if advice:
            warn(advice)
    _warn_clients(summary.never_accepting, "can never be accepted (threshold above the "
                  "highest score their model gives)", _never_accepted_advice(summary))
    _warn_clients(summary.worse_than_svm, f"rank held-out images much worse than their SVM "
                  f"('vs SVM' above {guard_gap:g}: share of genuine-impostor pairs misranked "
                  f"beyond the SVM's)", "try more prototypes (--m, --m auto), more "
                  "iterations (--max-iter) or --guard")
    _warn_clients(summary.not_held_out, "set their thresholds on training scores, with "
                  "too few impostor people or own images to hold out (the expected FAR and "
                  f"1:N FPIR are not estimates{_unseen_note(summary)})", "raise "
                  "--max-impostors, use --impostors sample or enrol more people (enroll "
                  "--background); a client needs at least 2 images of its own to hold one out")
    _warn_clients(list(summary.off_scale or {}), "thresholded on their training scores "
                  "(held-out scores off their scale; FAR optimistic, see "
                  "docs/operating-points.md)")
    _warn_spread(summary)
    if summary.basis_stale:
        warn("the store's matcher basis is stale (clients were added with --add); re-run "
             "enroll without --add to refit it")
    if unrecorded_fta_warning(summary.store, summary.fta_folds):
        warn(unrecorded_fta_warning(summary.store, summary.fta_folds))


def _never_accepted_advice(summary):
    """What can lower the thresholds of the clients that can never be accepted: a higher
    --target-far; more impostors only when some of them trained on a capped sample
    (--max-impostors; --impostors sample when the cap took the nearest subjects): with
    every impostor already in, neither option changes anything."""
    target = f"a higher --target-far (a lower threshold; now {summary.target_far})"
    if not set(summary.never_accepting or ()) & set(summary.capped or ()):
        return f"try {target}"
    sample = "; --impostors sample" if summary.impostors == "cohort" else ""
    return (f"try more impostors (--max-impostors, now {summary.max_impostors}{sample}) or "
            f"{target}")


def _unseen_note(summary):
    """``: measured on ...``: what the thresholds of the clients thresholded on training
    scores accept of the store's people their models never trained on
    (`ssgallery.app.compress_plan.unseen_accepts`), beside the target; empty when
    nothing was measured."""
    u = summary.unseen
    if not u:
        return ""
    return (f"; measured on the store's images of people their models never trained on "
            f"({u['people']} people, {u['clients']} clients), their thresholds accept "
            f"{u['accepted']} of {u['images']} ({100 * u['accepted'] / u['images']:.1f}% "
            f"against a target of {100 * summary.target_far:g}%): expect strangers to be "
            "accepted at a rate of that order, not at the target")


def _warn_spread(summary):
    """The warning naming the clients without an impostor-score spread of their own
    (`ssgallery.app.open_set.fill_spreads`) and the spread they were given."""
    if not summary.spread_borrowed:
        return
    norm = next(r["normalization"] for r in summary.clients
                if r["client"] == summary.spread_borrowed[0])
    given = (f"the pooled spread of the other clients ({norm['std']:.3g})"
             if norm["std_source"] == "pooled" else
             f"the models' margin as unit ({norm['std']:g}: no client measured a spread)")
    _warn_clients(summary.spread_borrowed, "have no impostor-score spread of their own "
                  "(one impostor score, or all equal): their normalised scores "
                  f"use {given}", "raise --max-impostors or use --impostors sample")


def _warn_clients(clients, what, advice=None):
    """One warning line on stderr naming the first 10 ``clients`` (if any), then
    ``advice`` (if any)."""
    if not clients:
        return
    warn(f"{len(clients)} client(s) {what}: {listed(printable(c) for c in clients)}"
         + (f"; {advice}" if advice else ""))
