"""Options shared by several commands: the host's matcher program and signing key."""

import click

MATCHER_CMD_HELP = (
    "External matcher: the program and its arguments on THIS host, split like a shell "
    "would (no shell runs it). Default: $SSGALLERY_MATCHER_CMD, else `command` in the "
    "[external] table of $SSGALLERY_CONFIG (~/.config/ssgallery/config.toml). A store or "
    "gallery never names a program; it holds a digest of the program's --describe "
    "answer, and a program with another digest is refused.")

KEY_FILE_HELP = (
    "Signing key (a file of 16-4096 bytes). Default: $SSGALLERY_KEY_FILE. With a key, "
    "compress signs the gallery (HMAC-SHA256 of its digest) and verify/roc refuse a "
    "gallery that is unsigned or signed with another key.")


def matcher_cmd_option(func):
    return click.option("--matcher-cmd", default=None, metavar="'PROGRAM ARGS'",
                        help=MATCHER_CMD_HELP)(func)


def key_file_option(func):
    return click.option("--key-file", default=None, metavar="FILE", help=KEY_FILE_HELP)(func)


def probe_options(func):
    """--list, --strict and --json: how verify and identify take their probes."""
    for option in reversed([
            click.option("--list", "list_file", default=None, type=click.Path(), metavar="FILE",
                         help="Also take the probes listed in FILE (one path per line)."),
            click.option("--strict", is_flag=True, help="Refuse probes of another size than "
                         "the gallery's instead of resizing them."),
            click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")]):
        func = option(func)
    return func


def probe_paths(probes, list_file):
    """The PROBE arguments followed by the paths listed in ``list_file``; at least one."""
    from ssgallery.app.verify import read_probe_list
    from ssgallery.errors import InputError

    paths = list(probes)
    if list_file is not None:
        paths += read_probe_list(list_file)
    if not paths:
        raise InputError("no probe images given (PROBE arguments or --list FILE)")
    return paths


def warn(message):
    """Print a warning line (control characters escaped)."""
    from ssgallery.errors import printable

    click.echo(f"ssgallery: warning: {printable(message)}", err=True)
