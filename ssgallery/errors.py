"""User-facing errors and the exit statuses of every command.

Every problem a user can cause (a bad image, a foreign gallery, an unknown claim, a
matcher program that crashes) is raised as `SsgalleryError` with a one-line
message that names the file or program and the problem. The CLI prints it as
``ssgallery: error: <message>`` on stderr and exits with `exit_code` (2).
Messages are one printable line: white space runs become one space and control
characters are escaped (`printable`), so a file name cannot fake a line of output.
"""

EXIT_ACCEPT = 0  # verify: every claim accepted (other commands: success)
EXIT_REJECT = 1  # verify: some claim rejected
EXIT_INPUT = 2  # input or usage error (SsgalleryError, click usage errors)
EXIT_FAILURE_TO_ACQUIRE = 3  # a probe that is not a usable face: never an accept
EXIT_INTERNAL = 4  # unexpected exception: one line; --debug shows the traceback
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM


def printable(text):
    """``text`` on one line: control characters escaped (``\\n``, ``\\x1b``, ...), and the
    bytes of a file name that were not UTF-8 (surrogate escapes) shown as ``\\xNN``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch in "\n\r\t":
            out.append(repr(ch)[1:-1])
        elif code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029):
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(ch)
    return "".join(out)


def option(name):
    """How a library message names one of its parameters (``option("skip_bad")`` gives
    ```skip_bad```): library messages never name a command-line flag; the command line
    shows each such name as its own flag or argument (``--skip-bad``)."""
    return f"`{name}`"


class SsgalleryError(Exception):
    """A problem with the user's input, files or matcher, reported in one line."""

    exit_code = EXIT_INPUT

    def __init__(self, message, path=None):
        message = printable(" ".join(str(message).split()))  # always one printable line
        if path is not None:
            message = f"{printable(path)}: {message}"
        super().__init__(message)
        self.path = path


class InputError(SsgalleryError):
    """Bad input data: an image, a folder, a probe list."""


class FormatError(SsgalleryError):
    """A store or gallery file that is missing, foreign, corrupt or too new."""


class MatcherError(SsgalleryError):
    """A matcher (plugin or external program) failed or answered garbage."""


class NotRenderableError(MatcherError):
    """The matcher's prototypes cannot be drawn as images (e.g. deep descriptors)."""
