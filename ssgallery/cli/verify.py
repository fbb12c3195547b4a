"""``ssgallery verify``: accept or reject identity claims. Exit 0 if every claim is
accepted, 1 if any is rejected, 3 if none is rejected but a probe failed to acquire
(not a usable face), 2 on error (and, with --claims, when a claim could not be
checked)."""

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
from ssgallery.errors import clipped, printable
from ssgallery.tables import counted, signed

FIELDS = ("probe", "claim", "status", "score", "threshold", "quality", "reason")


@click.command("verify")
@click.argument("probes", nargs=-1, type=click.Path())
@click.option("--claim", default=None, metavar="ID", help="The claimed client id.")
@click.option("--claims", "claims_file", default=None, metavar="FILE",
              help="Check the claims in FILE instead: one 'PROBE CLAIM' (or CSV "
              "'PROBE,CLAIM') per line, paths relative to the current folder, not to "
              "FILE's; '-' reads standard input.")
@click.option("--gallery", default="gallery.h5", show_default=True, metavar="FILE",
              help="Gallery written by `ssgallery compress`.")
@probe_options
@quiet_option
@key_file_option
@matcher_cmd_option
@privacy_key_option
@click.pass_context
def command(ctx, probes, claim, claims_file, gallery, list_file, strict, as_json, as_csv,
            quiet, key_file, matcher_cmd, privacy_key_file):
    """Score PROBE images against the claimed client's prototypes.

    Only the claimed client's model and the matcher are read from the gallery, after
    checking its digests (and its signature when a key is configured) and that its
    values are sane; each probe costs m matches. Prints score, threshold and
    ACCEPT/REJECT per probe, or FAILURE-TO-ACQUIRE for a probe that is not a usable
    face for the gallery's matcher (never scored, never accepted). Control characters
    in names are escaped.

    With --claims FILE, each line of FILE is one claim, a probe path and a claimed id
    (white space or CSV; '#' comments, an optional 'probe,claim' header). The claims
    are checked in this one process, grouped by client, and one line is printed per
    claim, in the file's order, with its status: ACCEPT, REJECT, FAILURE-TO-ACQUIRE,
    UNKNOWN-CLIENT (no such client in the gallery) or ERROR (unreadable probe). A line
    that is not a claim is reported on stderr with its number and skipped.

    \b
    Exit status: 0 all accepted, 1 some rejected, 3 none rejected but some failed to
    acquire, 2 input error (bad probe, edited or unsigned gallery, unknown claim; with
    --claims: any bad line, unknown client or unreadable probe), 4 internal error.
    Probes must be regular files of at most 64 MiB and 40,000,000 pixels.

    \b
    Examples:
      ssgallery verify probe.png --claim c03
      ssgallery verify probes/*.png --claim c03 --json
      ssgallery verify --list probes.txt --claim c03 --gallery site.h5
      ssgallery verify --claims claims.txt --csv > decisions.csv
      cut -d, -f1,2 today.csv | ssgallery verify --claims -
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    if claims_file is not None:
        if claim is not None or probes or list_file is not None:
            raise click.UsageError("--claims FILE names the probes and the claimed ids: "
                                   "no PROBE, --list or --claim with it")
        ctx.exit(_claims(gallery, claims_file, strict, as_json, as_csv, quiet,
                         {"key_file": key_file, "matcher_cmd": matcher_cmd,
                              "privacy_key_file": privacy_key_file}))
    if claim is None:
        raise click.UsageError("missing option '--claim' (or --claims FILE)")
    from ssgallery.app.verify import exit_status, verify

    paths = probe_paths(probes, list_file)
    with reporting(quiet) as progress:
        results = verify(gallery, paths, claim, strict=strict, warn=warn, key_file=key_file,
                         matcher_cmd=matcher_cmd, progress=progress,
                         privacy_key_file=privacy_key_file)
    status = exit_status(results)
    click.echo(_output(gallery, claim, results, status, "json" if as_json else
                       "csv" if as_csv else "text"))
    ctx.exit(status)


def _output(gallery, claim, results, status, kind):
    """What verify prints of the ``results`` of one ``claim``: ``kind`` "json", "csv" or
    "text" (a line per probe, and a count when there are several)."""
    from ssgallery.app.verify import FTA

    n_fta = sum(r.status == FTA for r in results)
    if kind == "json":
        from ssgallery import jsontext

        return jsontext.dumps({"gallery": gallery, "claim": claim,
                               "all_accepted": status == 0, "failures_to_acquire": n_fta,
                               "exit_status": status,
                               "results": [r.to_dict() for r in results]}, indent=2)
    if kind == "csv":
        return csv_text(FIELDS, [[getattr(r, f) for f in FIELDS] for r in results])
    text = _lines(results, with_claim=False)
    if len(results) > 1:
        n_acc = sum(r.accept for r in results)
        fta = f", {n_fta} failed to acquire" if n_fta else ""
        text += f"\nclaim {printable(claim)}: {n_acc} of {len(results)} accepted{fta}"
    return text


def _claims(gallery, claims_file, strict, as_json, as_csv, quiet, host):
    """verify --claims: check, print, return the exit status."""
    from ssgallery.app.claims import claims_exit_status, read_claims, verify_claims

    claims, bad = read_claims(claims_file)
    with reporting(quiet) as progress:
        results = verify_claims(gallery, claims, strict=strict, warn=warn,
                                progress=progress, **host)
    status = claims_exit_status(results, bad)
    name = "standard input" if claims_file == "-" else printable(claims_file)
    for b in bad:
        click.echo(f"ssgallery: error: {name}: line {b.line}: {b.reason}", err=True)
    if as_json:
        from ssgallery import jsontext

        click.echo(jsontext.dumps({"gallery": gallery, "claims": claims_file,
                               "counts": _counts(results, bad), "exit_status": status,
                               "results": [r.to_dict() for r in results],
                               "bad_lines": [b.__dict__ for b in bad]}, indent=2))
    elif as_csv:
        rows = [[r.line] + [getattr(r, f) for f in FIELDS] for r in results]
        rows += [[b.line, None, None, "bad-line", None, None, None, b.reason] for b in bad]
        click.echo(csv_text(("line",) + FIELDS, sorted(rows, key=lambda row: row[0])))
    else:
        if results:
            click.echo(_lines(results, with_claim=True))
        counts = ", ".join(counted(n, _SHOWN[k]) if k in _PLURAL_S else f"{n} {_SHOWN[k]}"
                           for k, n in _counts(results, bad).items() if n)
        click.echo(f"{counted(len(results), 'claim')}: {counts}")
    return status


_SHOWN = {"accept": "accepted", "reject": "rejected", "failure-to-acquire": "failed to acquire",
          "unknown-client": "unknown client", "error": "unreadable probe",
          "bad-line": "bad line(s) skipped"}
_PLURAL_S = ("unknown-client", "error")  # "2 unknown clients", "16 unreadable probes"


def _counts(results, bad):
    """{status: number of claims} in a fixed order, and the bad lines."""
    out = dict.fromkeys(("accept", "reject", "failure-to-acquire", "unknown-client",
                         "error"), 0)
    for r in results:
        out[r.status] += 1
    out["bad-line"] = len(bad)
    return out


def _lines(results, with_claim):
    """One aligned line per result (names printable: a name cannot fake a line; a long
    one clipped, `ssgallery.errors.clipped`: a claims line of 100,000 characters was
    echoed whole)."""
    names = [printable(clipped(r.probe)) for r in results]
    width = min(max(len(n) for n in names), 60)
    ids = [printable(clipped(r.claim)) for r in results]
    id_width = min(max(len(i) for i in ids), 30)
    return "\n".join(f"{n:<{width}}  " + (f"{i:<{id_width}}  " if with_claim else "")
                     + _verdict(r) for n, i, r in zip(names, ids, results))


def _verdict(r):
    if r.score is not None:
        return (f"score {signed(r.score)}  threshold {signed(r.threshold)}  "
                f"{'ACCEPT' if r.accept else 'REJECT'}")
    return f"{r.status.upper()}  {printable(r.reason)}"
