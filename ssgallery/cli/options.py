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
