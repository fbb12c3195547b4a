"""Reading small UTF-8 text inputs (probe lists, score files) with one-line errors.

Regular files only, at most `ssgallery.safeio.MAX_TEXT_BYTES` (64 MiB).
Standard library only: ``verify`` uses it.
"""

import os
import sys

from ssgallery.errors import InputError
from ssgallery.safeio import MAX_TEXT_BYTES, read_regular

STDIN = "-"


def _read_stdin(what):
    """Standard input's bytes, at most `MAX_TEXT_BYTES`."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InputError(f"cannot read {what} (no standard input)", path="standard input")
    try:
        data = stream.read(MAX_TEXT_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {what} ({getattr(exc, 'strerror', None) or exc})",
                         path="standard input") from None
    if len(data) > MAX_TEXT_BYTES:
        raise InputError(f"{what} is too large (more than {MAX_TEXT_BYTES} bytes)",
                         path="standard input")
    return data


def read_lines(path, what, stdin=False):
    r"""Lines of the UTF-8 text file ``path``; ``what`` names it in errors ("probe list").
    With ``stdin``, the path ``-`` reads standard input (at most the same size).

    Lines end at ``\n`` (``\r\n`` too) only: a vertical tab, form feed, U+0085 or
    U+2028 inside a name (a probe file's) is part of the line, as the writer meant.

    Raises
    ------
    InputError
        ``<path>: no such <what>``, not a regular file, too large, or ``<path>: cannot
        read <what> (<reason>)``.
    """
    if stdin and os.fspath(path) == STDIN:
        data, path = _read_stdin(what), "standard input"
    else:
        data = read_regular(path, what, MAX_TEXT_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what} ({exc})", path=path) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
