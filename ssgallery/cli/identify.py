"""``ssgallery identify``: who is this, if anyone? Exit 0 if every probe is identified,
1 if any is unknown (open set) or tied (two clients at the best score), 3 if none is unknown but a probe failed to acquire, 2 on
error (the rule of ``verify``)."""

import click

from ssgallery.cli.options import (
    Fraction,
    csv_list,
    csv_text,
    key_file_option,
    matcher_cmd_option,
    privacy_key_option,
    probe_options,
    probe_paths,
    warn,
)
from ssgallery.cli.progress import quiet_option, reporting
from ssgallery.errors import printable
from ssgallery.tables import signed


@click.command("identify")
@click.argument("probes", nargs=-1, type=click.Path())
@click.option("--gallery", default="gallery.h5", show_default=True, metavar="FILE",
              help="Gallery written by `ssgallery compress`.")
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True, metavar="K",
              help="Candidates shown per probe.")
@click.option("--open-set", is_flag=True, help="Say 'unknown' when the best candidate does "
              "not pass the gallery's 1:N threshold, set by compress at its --target-fpir "
              "(default: closed set, the best match unless two or more clients tie for "
              "it).")
@click.option("--fpir", type=Fraction(low_open=True), default=None, metavar="F",
              help="Open set at this FPIR instead of the gallery's target (compress "
                   "--target-fpir): the fraction of strangers' searches that may return "
                   "someone (0.001: 0.1 %), a threshold for its N clients read from "
                   "compress's held-out searches.")
@click.option("--threshold", type=float, default=None, metavar="T",
              help="Open set with this threshold on the best centred score (the 1:N "
                   "score; Z-normalised for a gallery without a 1:N operating point).")
@click.option("--verification-thresholds", is_flag=True,
              help="Open set with each client's own verification threshold on its raw score "
                   "(what verify uses: a stranger gets one chance per client, so false "
                   "alarms grow with the number of clients).")
@probe_options
@quiet_option
@key_file_option
@matcher_cmd_option
@privacy_key_option
@click.pass_context
def command(ctx, probes, gallery, top, open_set, fpir, threshold, verification_thresholds,
            list_file, strict, as_json, as_csv, quiet, key_file, matcher_cmd, privacy_key_file):
    """Search PROBE images among every client of the gallery.

    Each probe is scored against every client (N x m matches), 256 probes at a time,
    and the best K clients are listed. In the closed set, scores of different clients are
    ranked after each client's Z-normalisation when the gallery has it ("ranking:
    znorm", else "raw"). With --open-set, a probe whose best candidate does not pass
    the operating point is "unknown": by default the gallery's 1:N threshold on the
    best centred score (each client's score minus its impostor mean, on one scale;
    "ranking: centred"), set by compress so that about a fraction --target-fpir of
    strangers' searches return someone; --fpir, --threshold or
    --verification-thresholds choose another (each implies --open-set). The output and
    --json name the operating point used. A candidate's score is its record's, as
    verify prints it for the same probes (digit for digit).
    Two or more clients sharing the best score (with --open-set: at or above the
    operating point) are a tie, in the closed set too: the probe is unknown, "UNKNOWN
    (tie between c01 and c02 at +S: not identified)" (--csv column and --json key
    'tie': the tied ids), as roc's CMC counts it against the mate.
    A probe that is not a usable face is a FAILURE-TO-ACQUIRE and is never searched.
    --csv prints one line per probe: its status (identified, unknown,
    failure-to-acquire), the best candidate's scores and the top K client ids
    (';'-separated; an id holding ';' or '"' is quoted as CSV quotes a field), the
    operating point's kind (fpir, threshold: on the ranking's score, ranking_score;
    verification: on the raw score) and the tie. The column and JSON key 'normalized' are the
    deprecated name of ranking_score.
    Exit status: 0 every probe identified, 1 some unknown (a tie, or with --open-set
    below the operating point), 3 none unknown but some failed to acquire, 2 input
    error (bad probe, edited or unsigned gallery), 4 internal error.

    \b
    Examples:
      ssgallery identify probe.png
      ssgallery identify probes/*.png --top 3 --open-set
      ssgallery identify probes/*.png --fpir 0.001
      ssgallery identify --list probes.txt --gallery site.h5 --json
      ssgallery identify probes/*.png --open-set --csv > found.csv
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    from ssgallery.app.identify import exit_status, identify

    paths = probe_paths(probes, list_file)
    open_set = open_set or fpir is not None or threshold is not None or verification_thresholds
    with reporting(quiet) as progress:
        results, ranking, point = identify(
            gallery, paths, top=top, open_set=open_set, fpir=fpir, threshold=threshold,
            verification_thresholds=verification_thresholds, strict=strict, warn=warn,
            key_file=key_file, matcher_cmd=matcher_cmd, progress=progress,
            privacy_key_file=privacy_key_file)
    status = exit_status(results)
    click.echo(_json(gallery, results, (ranking, point, open_set), status) if as_json else
               _csv(results, ranking, point) if as_csv else
               _format(results, ranking, point, open_set))
    ctx.exit(status)


def _json(gallery, results, search, status):
    """The --json output; ``search``: the ranking, the operating point and whether the
    set is open."""
    from ssgallery import jsontext

    ranking, point, open_set = search
    n_fta = sum(r.failed_to_acquire for r in results)  # as verify --json says them
    return jsontext.dumps({"gallery": gallery, "ranking": ranking, "open_set": open_set,
                           "operating_point": point, "all_identified": status == 0,
                           "failures_to_acquire": n_fta, "exit_status": status,
                           "results": [r.to_dict() for r in results]}, indent=2)


CLOSED_SET = ("closed set: every probe is identified as its best candidate (unless two or "
              "more clients share the best score: a tie, unknown); each candidate is marked against its client's verification threshold "
              "(--open-set: 'unknown' below the gallery's 1:N threshold)")


def _format(results, ranking, point, open_set=True):
    """The text output; in the closed set no operating point decides, so none is named
    (a stranger below every threshold is still identified)."""
    from ssgallery.app.identify import tie_text
    from ssgallery.app.open_set import describe

    one = point["kind"] != "verification"
    name = "normalised" if ranking == "znorm" else ranking  # centred or raw: as ranked
    lines = [f"ranking: {ranking}", describe(point) if open_set else CLOSED_SET]
    for r in results:
        if r.failed_to_acquire:
            lines.append(f"{printable(r.probe)}  FAILURE-TO-ACQUIRE ({printable(r.reason)})")
            continue
        verdict = (f"IDENTIFIED {printable(r.identified)}" if r.identified is not None else
                   f"UNKNOWN ({tie_text(r)})" if r.tie else "UNKNOWN")
        lines.append(f"{printable(r.probe)}  {verdict}")
        for c in r.candidates:
            mark = ">=" if (c.ranking_score if one else c.score) >= c.threshold else "< "
            head = f"  {c.rank:>3}. {printable(c.client):<20} {name} {c.ranking_score:+8.3f}"
            score = signed(c.score)
            lines.append(head + (f" {mark} 1:N threshold {c.threshold:+.3f}  score {score}"
                                 if one else
                                 f"  score {score} {mark} threshold {signed(c.threshold)}")
                         + ("  (verify rejects)" if c.verified is False and mark == ">=" else ""))
    return "\n".join(lines)


CSV_FIELDS = ("probe", "status", "identified", "client", "score", "normalized", "threshold",
              "ranking", "candidates", "reason", "operating_point", "ranking_score", "tie")


def _csv(results, ranking, point):
    """One CSV line per probe: status, the best candidate (client, raw score, the
    ranking's score as ``normalized``, its deprecated name, and the operating point's
    threshold), the ranking, the candidates' ids (best first, ';'-separated by
    `csv_list`: an id holding ';' is quoted), the operating point's kind, the ranking's
    score as ``ranking_score`` and, last, the clients tied at the best score (``tie``,
    ';'-separated likewise: the probe is unknown)."""
    rows = []
    for r in results:
        best = r.candidates[0] if r.candidates else None
        status = ("failure-to-acquire" if r.failed_to_acquire else
                  "identified" if r.identified is not None else "unknown")
        rows.append([r.probe, status, r.identified, best and best.client,
                     best and best.score, best and best.ranking_score, best and best.threshold,
                     ranking, csv_list([c.client for c in r.candidates]), r.reason,
                     point["kind"], best and best.ranking_score, csv_list(r.tie)])
    return csv_text(CSV_FIELDS, rows)
