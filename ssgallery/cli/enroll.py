"""``ssgallery enroll``: face folder -> enrollment store."""

import json
import math
import re

import click

from ssgallery import jsontext
from ssgallery.cli.options import contract_line, matcher_line, privacy_key_option, warn
from ssgallery.cli.progress import quiet_option, reporting
from ssgallery.tables import counted


def _parse_size(ctx, param, value):
    if value is None:
        return None
    try:
        w, h = (int(v) for v in value.lower().split("x"))
        if w < 1 or h < 1:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"expected WxH, e.g. 92x112, got '{value}'") from None
    return (w, h)


def _store_path(ctx, param, value):
    """The store to write, refused when it is a bare ``KEY=VALUE`` (``-o variance=0.9``):
    ``-o`` names the store and ``-O`` sets a matcher option, one letter's case apart; the
    store would be written as a file named ``variance=0.9``, the option not set. A store
    really named so is given with its folder (``./variance=0.9``)."""
    if re.fullmatch(r"[A-Za-z_]\w*=.*", value or "", flags=re.DOTALL):
        raise click.BadParameter(f"'{value}' looks like a matcher option, which -O sets "
                                 f"(-O {value}); a store named so: ./{value}")
    return value


def _parse_options(ctx, param, values):
    """``-O KEY=VALUE`` items -> {key: value}: VALUE read as JSON, else kept as text. A
    number that is not finite (``Infinity``, ``NaN``, ``1e999``) is refused in one line
    (exit 2): no matcher takes one, and a store's JSON could not hold it."""
    from ssgallery.errors import InputError, printable

    def refuse(text):
        raise InputError(f"--matcher-option {printable(item)}: {text} is not a finite "
                         "number (matcher options take finite numbers)")

    def finite(text):
        value = float(text)
        return value if math.isfinite(value) else refuse(text)

    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got '{item}'")
        try:
            out[key] = json.loads(raw, parse_constant=refuse, parse_float=finite)
        except (ValueError, RecursionError):  # no JSON (or nested past the stack): text
            out[key] = raw
    return out


def _gamma(value):
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


def _external_command(matcher, matcher_cmd, options, add):
    """Resolve --matcher / --matcher-cmd / -O command=...; return the matcher name
    (--matcher-cmd goes to `ssgallery.app.enroll.enroll` as its ``matcher_cmd``: the
    external matcher's program, or with --add the store's matcher's). -O command=... is
    --matcher-cmd's other spelling (both: refused); it wins over $SSGALLERY_MATCHER_CMD
    and the configuration file, with a warning when they name another program
    (`ssgallery.matchers.host.name_overridden`)."""
    from ssgallery.errors import InputError

    if matcher_cmd is not None:  # with another --matcher: refused by enroll
        if not matcher_cmd.strip():
            raise InputError("--matcher-cmd is empty: give the matcher program and its "
                             "arguments, e.g. --matcher-cmd \"my-matcher --model net.bin\"")
        return matcher  # None: external, or with --add the store's matcher
    if matcher == "external" and "command" in options and not add:
        from ssgallery.matchers.host import name_overridden, split_command

        name_overridden(split_command(options["command"], "-O command"), "-O command", warn)
    if matcher == "external" and "command" not in options and not add:
        from ssgallery.matchers.host import host_matcher

        if host_matcher().argv is None:
            raise InputError("--matcher external needs the program: --matcher-cmd "
                             "\"PROGRAM ARGS\" (or $SSGALLERY_MATCHER_CMD)")
    return matcher  # None: eigenface, or with --add the store's


@click.command("enroll")
@click.argument("faces_dir", type=click.Path())
@click.option("--store", "-o", "--output", "store", default="enrollment.h5",
              show_default=True, metavar="FILE", callback=_store_path,
              help="Enrollment store to write (-o/--output, as compress, show and roc name "
              "what they write, is the same).")
@click.option("--matcher", default=None,
              help="Registered matcher (eigenface, dlib, external, plug-ins) [eigenface; "
              "external with --matcher-cmd].")
@click.option("--matcher-cmd", default=None, metavar="'PROGRAM ARGS'",
              help="external: the matcher program and its arguments on this host, split "
              "like a shell would (no shell runs it); implies --matcher external (with "
              "--add: the store's matcher; one that runs no program ignores it, with a "
              "warning, as compress does). The store "
              "records only a digest of the program's --describe answer, never the command: "
              "compress, verify, identify and roc name the program again (--matcher-cmd, "
              "$SSGALLERY_MATCHER_CMD or the configuration file).")
@click.option("--variance", type=float, default=None,
              help="eigenface: fraction of the variance the PCA keeps [0.95].")
@click.option("--gamma", default=None,
              help="eigenface, dlib: RBF width: 'paper' (1/d), 'median' or a number "
              "[eigenface: paper; dlib: median].")
@click.option("-O", "--matcher-option", "matcher_options", multiple=True, metavar="KEY=VALUE",
              callback=_parse_options, help="Any matcher option (repeatable), VALUE read as JSON "
              "(finite numbers only) else as text, e.g. -O serve=false.")
@click.option("--clients", default=None, metavar="A,B,...",
              help="Enrol only these client folders [all but the background]; a comma "
              "inside a name is written '\\,' (--clients 'doe\\, jane,c01').")
@click.option("--background", default=None, metavar="DIR|A,B,...",
              help="Impostor-only subjects: a folder DIR/<subject>/* (a value with a '/' "
              "is always a folder) or subject folder names of FACES_DIR (a comma inside "
              "a name: '\\,').")
@click.option("--add", is_flag=True,
              help="Add new clients to an existing store without refitting the matcher: "
              "the store's matcher and its options are kept (options given with --add are "
              "ignored, with a warning naming them; another --matcher is refused, and so is "
              "a --matcher-cmd program whose --describe contract is not the store's; a "
              "store whose matcher runs no program ignores --matcher-cmd, with a warning). "
              "A subject the store holds keeps its role: a background subject stays one "
              "(enrol everyone again without --add to make it a client).")
@click.option("--strict", is_flag=True, help="Refuse images of another size instead of "
              "resizing them.")
@click.option("--skip-bad", is_flag=True, help="Warn about and skip unreadable files.")
@click.option("--size", callback=_parse_size, default=None, metavar="WxH",
              help="Common image size [the first image's].")
@click.option("--min-images", type=click.IntRange(1), default=2, show_default=True,
              help="Fewest images a client folder may have.")
@click.option("--force", is_flag=True, help="Replace an existing --store file that is not an "
              "ssgallery enrollment store (never a gallery, a folder or a device).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@privacy_key_option
def command(faces_dir, store, matcher, matcher_cmd, variance, gamma, matcher_options, clients,
            background, add, strict, skip_bad, size, min_images, force, as_json, quiet,
            privacy_key_file):
    """Read FACES_DIR/<client>/*.{pgm,png,jpg,...}, fit the matcher, write the store.

    The store (HDF5) keeps the normalised images, client ids, each file's path and
    sha256, and the fitted matcher (PCA basis for eigenface). It stays on the training
    host; `ssgallery compress` turns it into a gallery. Re-running on the same folder
    changes nothing, except in a store whose failure-to-acquire limits were fitted
    before stores recorded how (info and compress say so): they are fitted again.

    Exit status: 0 enrolled (warnings aside), 2 input or usage error (one line on
    stderr; the store is left as it was), 4 internal error, 130 interrupted (the
    store as it was).

    \b
    Examples:
      ssgallery enroll faces/
      ssgallery enroll faces/ --background impostors/ --variance 0.9
      ssgallery enroll faces/ --clients c01,c02,c03 --background c04,c05
      ssgallery enroll new_faces/ --add        # keep the PCA basis (it becomes stale)
      ssgallery enroll faces/ --matcher external --matcher-cmd "my-matcher --model net.bin"
      ssgallery enroll faces/ --privacy-key-file /etc/ssgallery/privacy.key   # encrypted
    """
    from ssgallery.app.enroll import enroll

    options = dict(matcher_options)
    matcher = _external_command(matcher, matcher_cmd, options, add)
    if variance is not None:
        options["variance"] = variance
    if gamma is not None:
        options["gamma"] = _gamma(gamma)

    with reporting(quiet) as progress:
        summary = enroll(faces_dir, store, matcher=matcher, matcher_options=options,
                         clients=clients, background=background, add=add, strict=strict,
                         skip_bad=skip_bad, size=size, min_images=min_images, warn=warn,
                         force=force, privacy_key_file=privacy_key_file, progress=progress,
                         matcher_cmd=matcher_cmd)
    if as_json:
        click.echo(jsontext.dumps(summary.to_dict(), indent=2))
    elif not quiet:
        _echo(summary, add)
    if summary.basis_stale:  # a warning (stderr): printed with or without --quiet or --json
        warn(f"the {summary.matcher} basis was fitted before "
             f"{', '.join(summary.stale_clients[:10])} were added (stale); run "
             "'ssgallery enroll FACES_DIR' without --add to refit it")


def _echo(summary, add):
    """What enroll wrote, for the terminal (stdout; nothing with --quiet)."""
    h, w = summary.image_shape
    if not summary.changed:
        click.echo(f"{summary.store}: nothing changed ({counted(len(summary.clients), 'client')}, "
                   f"{counted(summary.n_images, 'image')} already enrolled with these settings)")
    elif add:
        click.echo(f"{summary.store}: added {len(summary.new_clients)} client(s) "
                   f"({', '.join(summary.new_clients[:10])}); now "
                   f"{counted(len(summary.clients), 'client')}, "
                   f"{counted(summary.n_images, 'image')}")
    else:
        click.echo(f"{summary.store}: enrolled {counted(len(summary.clients), 'client')} and "
                   f"{counted(len(summary.background), 'background subject')}, "
                   f"{counted(summary.n_images, 'image')} of {w}x{h}")
    click.echo(matcher_line(summary.matcher, summary.matcher_settings, summary.dimension))
    if contract_line(summary.matcher_contract):
        click.echo(contract_line(summary.matcher_contract))
