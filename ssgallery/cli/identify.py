"""``ssgallery identify``: who is this, if anyone? Exit 0 if every probe is identified,
1 if any is unknown (open set), 3 if none is unknown but a probe failed to acquire, 2 on
error (the rule of ``verify``)."""

import click

from ssgallery.cli.options import (
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


@click.command("identify")
@click.argument("probes", nargs=-1, type=click.Path())
@click.option("--gallery", default="gallery.h5", show_default=True, metavar="FILE",
              help="Gallery written by `ssgallery compress`.")
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True, metavar="K",
              help="Candidates shown per probe.")
@click.option("--open-set", is_flag=True, help="Say 'unknown' when the best candidate does "
              "not pass its client's threshold (default: closed set, always a best match).")
@probe_options
@quiet_option
@key_file_option
@matcher_cmd_option
@privacy_key_option
@click.pass_context
def command(ctx, probes, gallery, top, open_set, list_file, strict, as_json, as_csv, quiet,
            key_file, matcher_cmd, privacy_key_file):
    """Search PROBE images among every client of the gallery.

    Each probe is scored against every client (N x m matches) in one batch and the
    best K clients are listed. Scores of different clients are ranked after each
    client's Z-normalisation when the gallery has it (the output says "ranking:
    znorm" or "ranking: raw"). With --open-set, a probe whose best candidate does not
    pass that client's verification threshold is "unknown".
    A probe that is not a usable face is a FAILURE-TO-ACQUIRE and is never searched.
    --csv prints one line per probe: its status (identified, unknown,
    failure-to-acquire), the best candidate's scores and the top K client ids.
    Exit status: 0 every probe identified, 1 some unknown, 3 none unknown but some
    failed to acquire, 2 error.

    \b
    Examples:
      ssgallery identify probe.png
      ssgallery identify probes/*.png --top 3 --open-set
      ssgallery identify --list probes.txt --gallery site.h5 --json
      ssgallery identify probes/*.png --open-set --csv > found.csv
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    from ssgallery.app.identify import exit_status, identify

    paths = probe_paths(probes, list_file)


    with reporting(quiet) as progress:
        results, ranking = identify(gallery, paths, top=top, open_set=open_set,
                                    strict=strict, warn=warn, key_file=key_file,
                                    matcher_cmd=matcher_cmd, progress=progress,
                                    privacy_key_file=privacy_key_file)
    status = exit_status(results)
    if as_json:
        import json

        click.echo(json.dumps({"gallery": gallery, "ranking": ranking, "open_set": open_set,
                               "all_identified": status == 0,
                               "results": [r.to_dict() for r in results]}, indent=2))
    elif as_csv:
        click.echo(_csv(results, ranking))
    else:
        click.echo(_format(results, ranking))
    ctx.exit(status)


def _format(results, ranking):
    lines = [f"ranking: {ranking}"]
    for r in results:
        if r.failed_to_acquire:
            lines.append(f"{printable(r.probe)}  FAILURE-TO-ACQUIRE ({printable(r.reason)})")
            continue
        verdict = f"IDENTIFIED {printable(r.identified)}" if r.identified is not None else "UNKNOWN"
        lines.append(f"{printable(r.probe)}  {verdict}")
        for c in r.candidates:
            mark = ">=" if c.passes else "< "
            lines.append(f"  {c.rank:>3}. {printable(c.client):<20} normalised {c.normalized:+8.3f}"
                         f"  score {c.score:+.4f} {mark} threshold {c.threshold:+.4f}")
    return "\n".join(lines)


CSV_FIELDS = ("probe", "status", "identified", "client", "score", "normalized", "threshold",
              "ranking", "candidates", "reason")


def _csv(results, ranking):
    """One CSV line per probe: status, the best candidate (client, raw and normalised
    score, threshold), the ranking, the candidates' ids (best first, ';'-separated)."""
    rows = []
    for r in results:
        best = r.candidates[0] if r.candidates else None
        status = ("failure-to-acquire" if r.failed_to_acquire else
                  "identified" if r.identified is not None else "unknown")
        rows.append([r.probe, status, r.identified, best and best.client,
                     best and best.score, best and best.normalized, best and best.threshold,
                     ranking, ";".join(c.client for c in r.candidates) or None, r.reason])
    return csv_text(CSV_FIELDS, rows)
