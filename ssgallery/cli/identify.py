"""``ssgallery identify``: who is this, if anyone? Exit 0 if every probe is identified,
1 if any is unknown (open set), 3 if none is unknown but a probe failed to acquire, 2 on
error (the rule of ``verify``)."""

import click

from ssgallery.cli.options import (
    key_file_option,
    matcher_cmd_option,
    probe_options,
    probe_paths,
    warn,
)
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
@key_file_option
@matcher_cmd_option
@click.pass_context
def command(ctx, probes, gallery, top, open_set, list_file, strict, as_json, key_file,
            matcher_cmd):
    """Search PROBE images among every client of the gallery.

    Each probe is scored against every client (N x m matches) in one batch and the
    best K clients are listed. Scores of different clients are ranked after each
    client's Z-normalisation when the gallery has it (the output says "ranking:
    znorm" or "ranking: raw"). With --open-set, a probe whose best candidate does not
    pass that client's verification threshold is "unknown".
    A probe that is not a usable face is a FAILURE-TO-ACQUIRE and is never searched.
    Exit status: 0 every probe identified, 1 some unknown, 3 none unknown but some
    failed to acquire, 2 error.

    \b
    Examples:
      ssgallery identify probe.png
      ssgallery identify probes/*.png --top 3 --open-set
      ssgallery identify --list probes.txt --gallery site.h5 --json
    """
    from ssgallery.app.identify import exit_status, identify

    paths = probe_paths(probes, list_file)


    results, ranking = identify(gallery, paths, top=top, open_set=open_set, strict=strict,
                                warn=warn, key_file=key_file, matcher_cmd=matcher_cmd)
    status = exit_status(results)
    if as_json:
        import json

        click.echo(json.dumps({"gallery": gallery, "ranking": ranking, "open_set": open_set,
                               "all_identified": status == 0,
                               "results": [r.to_dict() for r in results]}, indent=2))
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
