"""Reading small UTF-8 text inputs (probe lists, score files) with one-line errors.

Standard library only: ``verify`` uses it.
"""

from ssgallery.errors import InputError


def read_lines(path, what):
    """Lines of the UTF-8 text file ``path``; ``what`` names it in errors ("probe list").

    Raises
    ------
    InputError
        ``<path>: no such <what>`` or ``<path>: cannot read <what> (<reason>)``.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        raise InputError(f"no such {what}", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} ({exc})", path=path) from None
