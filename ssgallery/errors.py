"""User-facing errors.

Every problem a user can cause (a bad image, a foreign gallery, an unknown claim, a
matcher program that crashes) is raised as :class:`SsgalleryError` with a one-line
message that names the file or program and the problem. The CLI prints it as
``ssgallery: error: <message>`` on stderr and exits with :attr:`exit_code` (2).
"""


class SsgalleryError(Exception):
    """A problem with the user's input, files or matcher, reported in one line."""

    exit_code = 2

    def __init__(self, message, path=None):
        message = " ".join(str(message).split())  # always one line
        if path is not None:
            message = f"{path}: {message}"
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
