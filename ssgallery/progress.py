"""How a long step says how far it is: `Progress`.

A library function that makes a person wait (reading many images, training many
clients, scoring a large batch) takes ``progress=None`` and reports through this
interface; it never prints. The command line passes a reporter that draws it
(`ssgallery.cli.progress`: a bar with rate and ETA on a terminal, periodic plain lines
on a pipe, nothing with ``--quiet``); a library caller passes nothing, or its own
subclass. Usage inside the library::

    progress = as_progress(progress)
    with progress.phase("reading images", len(paths), "images"):
        for path in paths:
            ...
            progress.advance()

A phase has a label, a total (the number of steps it will report) and a unit; starting
a phase ends the one before. Standard library only, no import of anything: every layer
may use it (``verify`` too).
"""


class Progress:
    """Progress of a long step, reported by the library and shown by the caller.

    This base class shows nothing (`NO_PROGRESS`). A reporter overrides `start`,
    `advance` and `end`.
    """

    def phase(self, label, total, unit=""):
        """Start a phase of ``total`` steps (ending the current one); returns a context
        manager that ends it.

        Parameters
        ----------
        label : str
            What is being done, e.g. ``"training clients"``.
        total : int
            Steps this phase will report with `advance`.
        unit : str
            What a step is, plural (``"images"``, ``"clients"``), for the rate.
        """
        self.start(label, int(total), unit)
        return _PhaseBlock(self)

    def start(self, label, total, unit=""):
        """Begin a phase (see `phase`)."""

    def advance(self, n=1):
        """``n`` more steps of the current phase are done."""

    def end(self):
        """The current phase is over (also when it stopped early)."""


class _PhaseBlock:
    def __init__(self, progress):
        self.progress = progress

    def __enter__(self):
        return self.progress

    def __exit__(self, *exc):
        self.progress.end()
        return False


NO_PROGRESS = Progress()


def as_progress(progress):
    """``progress`` itself, or `NO_PROGRESS` for None."""
    return NO_PROGRESS if progress is None else progress


class _Prefixed(Progress):
    def __init__(self, inner, prefix):
        self.inner, self.prefix = inner, prefix

    def start(self, label, total, unit=""):
        self.inner.start(self.prefix + label, total, unit)

    def advance(self, n=1):
        self.inner.advance(n)

    def end(self):
        self.inner.end()


def prefixed(progress, prefix):
    """``progress`` with ``prefix`` before the label of every phase it starts (a part of
    a longer run says which: ``"probes 257-405 of 405: "``); None stays None."""
    return None if progress is None else _Prefixed(progress, prefix)


__all__ = ["NO_PROGRESS", "Progress", "as_progress", "prefixed"]
