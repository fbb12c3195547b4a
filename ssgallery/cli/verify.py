"""``ssgallery verify``: accept or reject identity claims. Exit 0 if every claim is
accepted, 1 if any is rejected, 3 if none is rejected but a probe failed to acquire
(not a usable face), 2 on error."""

import click

from ssgallery.cli.options import (
    key_file_option,
    matcher_cmd_option,
    probe_options,
    probe_paths,
    warn,
)
from ssgallery.errors import printable


@click.command("verify")
@click.argument("probes", nargs=-1, type=click.Path())
@click.option("--claim", required=True, metavar="ID", help="The claimed client id.")
@click.option("--gallery", default="gallery.h5", show_default=True, metavar="FILE",
              help="Gallery written by `ssgallery compress`.")
@probe_options
@key_file_option
@matcher_cmd_option
@click.pass_context
def command(ctx, probes, claim, gallery, list_file, strict, as_json, key_file, matcher_cmd):
    """Score PROBE images against the claimed client's prototypes.

    Only the claimed client's model and the matcher are read from the gallery, after
    checking its digests (and its signature when a key is configured) and that its
    values are sane; each probe costs m matches. Prints score, threshold and
    ACCEPT/REJECT per probe, or FAILURE-TO-ACQUIRE for a probe that is not a usable
    face for the gallery's matcher (never scored, never accepted). Control characters
    in names are escaped.

    \b
    Exit status: 0 all accepted, 1 some rejected, 3 none rejected but some failed to
    acquire, 2 input error (bad probe, edited or unsigned gallery, unknown claim),
    4 internal error. Probes must be regular files of at most 64 MiB and 40,000,000
    pixels.

    \b
    Examples:
      ssgallery verify probe.png --claim s17
      ssgallery verify probes/*.png --claim s17 --json
      ssgallery verify --list probes.txt --claim s17 --gallery site.h5
    """
    from ssgallery.app.verify import FTA, exit_status, verify

    paths = probe_paths(probes, list_file)


    results = verify(gallery, paths, claim, strict=strict, warn=warn, key_file=key_file,
                     matcher_cmd=matcher_cmd)
    status = exit_status(results)
    n_fta = sum(r.status == FTA for r in results)
    if as_json:
        import json

        click.echo(json.dumps({"gallery": gallery, "claim": claim,
                               "all_accepted": status == 0, "failures_to_acquire": n_fta,
                               "exit_status": status,
                               "results": [r.to_dict() for r in results]}, indent=2))
    else:
        names = [printable(r.probe) for r in results]  # a name cannot fake a line
        width = min(max(len(n) for n in names), 60)
        click.echo("\n".join(_line(n, r, width) for n, r in zip(names, results)))
        if len(results) > 1:
            n_acc = sum(r.accept for r in results)
            fta = f", {n_fta} failed to acquire" if n_fta else ""
            click.echo(f"claim {printable(claim)}: {n_acc} of {len(results)} accepted{fta}")
    ctx.exit(status)


def _line(name, r, width):
    if r.score is None:
        return f"{name:<{width}}  FAILURE-TO-ACQUIRE  {printable(r.reason)}"
    return (f"{name:<{width}}  score {r.score:+.4f}  threshold {r.threshold:+.4f}  "
            f"{'ACCEPT' if r.accept else 'REJECT'}")
