"""Reading small UTF-8 text inputs (probe lists, score files) with one-line errors.

Regular files only, at most `ssgallery.safeio.MAX_TEXT_BYTES` (64 MiB).
Standard library only: ``verify`` uses it.
"""

from ssgallery.errors import InputError
from ssgallery.safeio import MAX_TEXT_BYTES, read_regular


def read_lines(path, what):
    """Lines of the UTF-8 text file ``path``; ``what`` names it in errors ("probe list").

    Raises
    ------
    InputError
        ``<path>: no such <what>``, not a regular file, too large, or ``<path>: cannot
        read <what> (<reason>)``.
    """
    data = read_regular(path, what, MAX_TEXT_BYTES)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what} ({exc})", path=path) from None
