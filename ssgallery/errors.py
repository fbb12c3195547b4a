"""User-facing errors and the exit statuses of every command.

Every problem a user can cause (a bad image, a foreign gallery, an unknown claim, a
matcher program that crashes) is raised as `SsgalleryError` with a one-line
message that names the file or program and the problem. The CLI prints it as
``ssgallery: error: <message>`` on stderr and exits with `exit_code` (2).
Messages are one printable line: white space runs become one space and control
characters are escaped (`printable`), so a file name cannot fake a line of output.
"""

import contextlib

EXIT_ACCEPT = 0  # verify: every claim accepted (other commands: success)
EXIT_REJECT = 1  # verify: some claim rejected
EXIT_INPUT = 2  # input or usage error (SsgalleryError, click usage errors)
EXIT_FAILURE_TO_ACQUIRE = 3  # a probe that is not a usable face: never an accept
EXIT_INTERNAL = 4  # unexpected exception: one line; ssgallery --debug CMD shows the traceback
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
EXIT_STDOUT_CLOSED = 141  # standard output closed by its reader (`| head`): 128 + SIGPIPE

REDELIVERY_DELAY = 0.005  # s: a signal dropped inside a finalizer is delivered again
_deferring = []  # one entry per open `interrupts_deferred` block
_pending = []  # interrupts that came during such a block
# SIGINT/SIGTERM that the command's handler took during this command (the command line
# records and clears them): an exception then is an interrupt that compiled code turned
# into another one (ImportError, SystemError)
signals_received = set()


def interrupt():
    """What the command line's Ctrl-C / SIGTERM handler does: raise KeyboardInterrupt,
    or, inside `interrupts_deferred`, when that block ends."""
    if _deferring:
        _pending.append(True)
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_handlers(handler):
    """Make ``handler`` the Python handler of SIGINT and SIGTERM for the block, then put
    the previous handlers back; yields False (and changes nothing) off the main thread.

    The previous handlers are read before any is replaced and restored in a ``finally``
    that covers the replacements, so an interrupt at any moment, even between replacing
    one handler and the other, cannot leave a handler of the block behind. A signal
    that a previous handler only recorded (the entry point's, whose ``received`` lists
    it) is delivered to ``handler`` as the block starts.
    """
    import signal
    import sys
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    watched = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in watched}  # no side effect before the try
    hook = sys.unraisablehook
    delivery = _Delivery(handler, hook)
    try:
        sys.unraisablehook = delivery.unraisable
        for s in watched:
            signal.signal(s, delivery.handle)
        for old in previous.values():
            taken = _recorded(old)
            if taken:  # came before the block (`ssgallery.__main__.run`): delivered now
                signum = taken[-1]
                taken.clear()
                delivery.handle(signum, None)
        yield True
    finally:
        delivery.active = False
        for s, old in previous.items():
            if old is not None:  # None: a handler not installed from Python
                signal.signal(s, old)
        sys.unraisablehook = hook


class _Delivery:
    """One `interrupt_handlers` block's Python handler (`handle`) and unraisable hook
    (`unraisable`): the signals it took (``received``), and the re-delivery of a signal
    whose handler raised where nothing may raise (a finalizer, a weakref callback)."""

    def __init__(self, handler, hook):
        self.handler = handler
        self.hook = hook  # the unraisable hook before the block
        self.received = []
        self.active = True
        self.in_hook = False
        self.pending = None  # the state of the re-delivery on its way, if any

    def schedule(self, signum):
        """Deliver ``signum`` again a moment later, unless a re-delivery is on its way
        (marked before its timer starts: a signal while it starts finds it)."""
        import threading

        if self.pending is not None and not self.pending["fired"]:
            return
        state = self.pending = {"fired": False}
        timer = threading.Timer(REDELIVERY_DELAY, self.again, args=(signum, state))
        timer.daemon = True
        try:
            timer.start()
        except RuntimeError:  # no new thread at interpreter shutdown: the exit goes on
            self.pending = None

    def handle(self, signum, frame):
        """The Python handler of SIGINT and SIGTERM during the block."""
        self.received.append(signum)
        if self.in_hook:  # nothing may raise out of the hook: delivered again after it
            self.schedule(signum)
            return
        self.handler(signum, frame)

    def again(self, signum, state):
        """The re-delivery (on a timer thread): the signal again, while the block lasts."""
        state["fired"] = True  # before the signal: it may land while a hook still runs
        if self.active:
            import _thread

            _thread.interrupt_main(signum)  # the handler runs again in the main thread

    def unraisable(self, info):
        """The handler raised inside a finalizer or weakref callback, which Python
        cannot let through (it would print "Exception ignored in ..."): deliver the
        signal again a moment later, once the callback has returned. A signal that
        comes while this hook runs (on a loaded machine the re-delivery itself can) is
        delivered again after it the same way (`handle`). Clearing ``in_hook`` is the
        hook's last statement: a handler that ran after it, still inside the hook, would
        raise out of it."""
        self.in_hook = True
        try:
            if self.received and issubclass(info.exc_type, (KeyboardInterrupt, SystemExit)):
                self.schedule(self.received[-1])
            else:
                self.hook(info)
        finally:
            self.in_hook = False


def _recorded(handler):
    """The signals a handler that only records them (``received``: the entry point's,
    `ssgallery.__main__.run`) took, else an empty list."""
    received = getattr(handler, "received", None)
    return received if isinstance(received, list) else []


class interrupts_deferred:  # lower case: used as ``with interrupts_deferred():``
    """Hold interrupts (`interrupt`) until the block ends, then raise KeyboardInterrupt:
    for a step that must not be cut in two, e.g. starting a program and recording it
    so that the caller's ``finally`` kills it."""

    def __enter__(self):
        _deferring.append(True)

    def __exit__(self, kind, value, tb):
        _deferring.pop()
        if not _deferring and _pending:
            _pending.clear()
            if kind is None:
                raise KeyboardInterrupt
        return False


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


SHOWN_CHARS = 200  # characters of a name from the input a line shows (a line may be 64 MiB)


def clipped(text, limit=SHOWN_CHARS):
    """``text`` (a name taken from the input: a listed path, a claimed id), its first
    ``limit`` characters and its length when it is longer: one readable line, not the
    64 MiB a list or claims file may hold (``aaa...a... (100000 characters)``)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


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


@contextlib.contextmanager
def naming(path):
    """An `SsgalleryError` raised in the block that names no file is made to name
    ``path``, the input it is about (e.g. the face folder a matcher was fitted on). A
    `MatcherError` is about the matcher (its program, its models), not that input, and
    is left as it is: ``faces: matcher PROG timed out`` read as a fault of the faces."""
    try:
        yield
    except SsgalleryError as exc:
        if exc.path is None and path is not None and not isinstance(exc, MatcherError):
            exc.args = (f"{printable(path)}: {exc.args[0]}",)
            exc.path = path
        raise


class InputError(SsgalleryError):
    """Bad input data: an image, a folder, a probe list."""


class FormatError(SsgalleryError):
    """A store or gallery file that is missing, foreign, corrupt or too new."""


class UnknownClientError(SsgalleryError):
    """A client id the gallery (or store) has no client for; the message lists a few
    known ids. ``verify --claims`` reports such a claim and goes on, with ``hint``
    (``did you mean 'c03'?``, `ssgallery.tables.did_you_mean`; "" when none is close)."""

    hint = ""


class MatcherError(SsgalleryError):
    """A matcher (plugin or external program) failed or answered garbage."""


class NotRenderableError(MatcherError):
    """The matcher's prototypes cannot be drawn as images (e.g. deep descriptors)."""
