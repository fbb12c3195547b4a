"""The ``ssgallery`` command line. Commands only parse, call one library function and
print; each lives in its own module and imports the library lazily, so ``verify``
never pays for scikit-learn or matplotlib."""

import os
import signal
import sys

import click

from ssgallery import __version__
from ssgallery.errors import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_STDOUT_CLOSED,
    SsgalleryError,
    interrupt_handlers,
    printable,
    signals_received,
)
from ssgallery.safeio import check_environment


class _Group(click.Group):
    """The one error contract (docs/security.md): `ssgallery.errors.SsgalleryError`
    and any OSError -> one line on stderr + exit 2 (also an unknown or badly set
    ``SSGALLERY_*`` environment variable, checked first); Ctrl-C and SIGTERM -> "interrupted" +
    exit 130 (also when a library swallowed the interrupt or turned it into another
    exception); any other exception -> "internal error" on one line + exit 4 (``--debug``
    or ``SSGALLERY_DEBUG=1``: the traceback too). Click's own usage errors of a command
    (a missing or bad option, an unknown command) -> one line + exit 2 too."""

    def main(self, *args, **kwargs):
        """Ctrl-C or SIGTERM outside `invoke` (while click parses the command line
        or exits) also ends with 130 and a truthful message (click: "Aborted!", 1)."""
        with interrupt_handlers(_exit_on_signal):
            return super().main(*args, **kwargs)

    def parse_args(self, ctx, args):
        """A usage error before any command (``ssgallery --bogus``): one line, exit 2."""
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            _usage_failed(exc, ctx)

    def invoke(self, ctx):
        from ssgallery.formats.atomic import forget_written

        forget_written()
        signals_received.clear()
        try:
            # SIGTERM behaves like Ctrl-C (finally-blocks run: temporary folders and
            # matcher processes are cleaned up), and both are remembered so that an
            # interrupt a library swallows still ends the command with 130. Inside the
            # try: an interrupt while the handlers are put in place or back is ours too.
            with interrupt_handlers(_raise_interrupt):
                _ignore_sigxfsz()
                check_environment()  # a bad SSGALLERY_* variable: one line, exit 2
                result = super().invoke(ctx)
        except SsgalleryError as exc:
            from ssgallery.cli.options import as_flags

            command = self.get_command(ctx, ctx.invoked_subcommand or "")
            _fail(f"error: {as_flags(_from_key_files(exc), command)}", exc.exit_code, ctx)
        except KeyboardInterrupt as exc:
            _exit_interrupted(str(exc))
        except click.exceptions.Exit:
            if signals_received:  # an interrupt swallowed by a library (e.g. inside h5py)
                _exit_interrupted()
            raise
        except click.UsageError as exc:
            _usage_failed(exc, ctx)
        except (click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except BrokenPipeError as exc:
            if _stdout_gone():  # `ssgallery info | head -1`: the reader stopped reading
                _exit_stdout_gone()
            _fail(f"error: {printable(exc.strerror or exc)}", EXIT_INPUT, ctx)
        except MemoryError as exc:  # the input needs more memory than this machine has
            text = printable(" ".join(str(exc).split()))[:300]
            _fail(f"error: out of memory{f' ({text})' if text else ''}: the input is too "
                  "large for this machine", EXIT_INPUT, ctx)
        except OSError as exc:  # safety net: permissions, full disk, vanished files
            where = f"{printable(exc.filename)}: " if getattr(exc, "filename", None) else ""
            _fail(f"error: {where}{printable(exc.strerror or exc)}", EXIT_INPUT, ctx)
        except Exception as exc:  # noqa: BLE001 - the contract: never a bare traceback
            if signals_received:  # our KeyboardInterrupt, turned into another exception by
                _interrupted_anyway(ctx)  # compiled code (h5py: SystemError, ImportError)
            text = printable(" ".join(str(exc).split()))[:500]
            # --debug is the group's option: 'ssgallery verify ... --debug' is no option
            again = printable(f"ssgallery --debug {ctx.invoked_subcommand or 'COMMAND'} ...")
            _fail(f"internal error: {type(exc).__name__}{': ' if text else ''}{text} "
                  f"(please report it; '{again}' or SSGALLERY_DEBUG=1 shows the traceback)",
                  EXIT_INTERNAL, ctx)
        if signals_received:
            _exit_interrupted()
        return result


def _from_key_files(exc):
    """``exc`` as the command line words it: a key the command needs is named as its key
    file and variable (``--privacy-key-file or $SSGALLERY_PRIVACY_KEY_FILE``), never as
    the parameter of a library function (`ssgallery.formats.integrity.KeyNeeded`)."""
    from ssgallery.formats.integrity import KeyNeeded

    return exc.named_as_files() if isinstance(exc, KeyNeeded) else exc


def _usage_failed(exc, ctx):
    """Exit 2 on a usage error (a missing or bad option, an unknown command) with one
    line: click's message and where to read the command's help (click prints the usage
    and a hint on lines of their own). ``ssgallery`` alone is no error: the help on
    stdout, exit 0, as ``ssgallery --help`` (click 8.2 and later: the help on stderr,
    exit 2)."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        click.echo(exc.ctx.get_help())
        sys.exit(0)
    # click's parser raises some (an option without its value) without a context: the
    # group's ctx then names the command it was parsing (invoked_subcommand)
    words = (exc.ctx.command_path.split()[1:] if exc.ctx is not None
             else [ctx.invoked_subcommand] if ctx.invoked_subcommand else [])
    path = " ".join(["ssgallery", *words])
    message = printable(f"{exc.format_message().rstrip('.')} (see '{path} --help')")
    _fail(f"error: {message}", exc.exit_code, ctx)


def _debug(ctx):
    return bool((ctx.obj or {}).get("debug")) or os.environ.get("SSGALLERY_DEBUG") == "1"


def _fail(message, status, ctx):
    """Print ``ssgallery: <message>`` (after the traceback when debugging); exit."""
    if _debug(ctx):
        import traceback

        traceback.print_exc(file=sys.stderr)
    click.echo(f"ssgallery: {message}", err=True)
    sys.exit(status)


def _stdout_gone():
    """Whether standard output is a pipe whose reader has closed it."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # not a real file (tests), closed
        return False


def _exit_stdout_gone():
    """Exit quietly with 141 (128 + SIGPIPE, what a shell reports for a program killed
    by SIGPIPE, e.g. ``yes | head``): no message, and no "Exception ignored" when
    Python flushes the closed standard output at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(EXIT_STDOUT_CLOSED)


def _ignore_sigxfsz():
    """Writing past ``ulimit -f`` fails with an OSError (EFBIG: exit 2) instead of the
    process being killed by SIGXFSZ."""
    if hasattr(signal, "SIGXFSZ"):
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass


def _exit_interrupted(note=""):
    """Exit 130 saying truthfully which outputs were replaced before the interrupt
    (``note``: what the command kept instead, e.g. the committed clients of compress)."""
    # never an import here: the signal may come while that very module loads
    atomic = sys.modules.get("ssgallery.formats.atomic")
    done = getattr(atomic, "written_paths", list)()
    if note:  # one printable line, as every message: a file name may hold a line break
        click.echo(f"ssgallery: interrupted; {printable(note)}", err=True)
    elif done:
        click.echo(f"ssgallery: interrupted after writing {printable(', '.join(done))} "
                   "(complete, replaced)", err=True)
    else:
        click.echo("ssgallery: interrupted; nothing was written", err=True)
    sys.exit(130)


def _interrupted_anyway(ctx):
    """Exit 130 for an exception that an interrupt of this command became: its handler
    raised KeyboardInterrupt inside compiled code that set another exception instead
    (Cython's module set-up turns it into ImportError) or returned a result with it set
    (CPython then raises SystemError from it, e.g. at h5py's ``FastRLock.__exit__``).
    ``--debug``: the traceback too."""
    if _debug(ctx):
        import traceback

        traceback.print_exc(file=sys.stderr)
    _exit_interrupted()


def _exit_on_signal(signum, frame):
    _exit_interrupted()


def _raise_interrupt(signum, frame):
    from ssgallery.errors import interrupt

    signals_received.add(signum)
    interrupt()  # KeyboardInterrupt, now or at the end of an interrupts_deferred block


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ssgallery")
@click.option("--debug", is_flag=True, help="On an internal error, print the traceback "
              "(also SSGALLERY_DEBUG=1).")
@click.pass_context
def main(ctx, debug):
    """Compress biometric face galleries into super-sparse virtual prototypes.

    \b
    Typical session:
      ssgallery enroll faces/          # faces/<client>/*.pgm|png|jpg -> enrollment.h5
      ssgallery compress --m 2         # per-client SVM -> 2 virtual prototypes -> gallery.h5
      ssgallery verify probe.png --claim c03  # m matches; exit 0 accept, 1 reject
      ssgallery identify probe.png --top 5    # 1:N search over every client
      ssgallery roc                    # FRR/FAR, EER, matches per claim vs baselines
      ssgallery info                   # clients, m, bytes per client vs the full SVM
      ssgallery show --claim c03       # the prototypes as images -> prototypes_c03.png

    Each command has its own --help (ssgallery alone prints this one, exit 0).
    Errors are one line on stderr.

    \b
    Exit status (every command; docs/security.md):
      0  accept (verify) / success     1  reject (verify) / unknown (identify)
      2  input or usage error          3  failure to acquire (probe is not a usable face)
      4  internal error (--debug or SSGALLERY_DEBUG=1 shows the traceback)
      130 interrupted (Ctrl-C, SIGTERM)  141 standard output closed (| head)

    \b
    Host configuration (never read from a store or gallery):
      SSGALLERY_MATCHER_CMD  the external matcher program (or --matcher-cmd)
      SSGALLERY_CONFIG       TOML file; [external] command = "...", cache_dir = "..."
      SSGALLERY_KEY_FILE     signing key: compress signs, verify refuses unsigned files
      SSGALLERY_PRIVACY_KEY_FILE
                             privacy key: stores and galleries written and read encrypted
    """
    ctx.ensure_object(dict)["debug"] = debug


COMMANDS = ("enroll", "compress", "verify", "identify", "info", "show", "synth", "roc")


class _LazyCommands(dict):
    """The group's commands, each module imported when its command is first looked up
    (``ssgallery verify`` imports cli/verify.py only, not compress's or roc's options
    and their library modules: start-up time, docs/security.md); listing or iterating
    imports them all, so ``main.commands`` still holds every command."""

    def __init__(self, names):
        super().__init__()
        self._pending = list(names)

    def _load(self, name=None):
        import importlib

        for module in [m for m in self._pending if name is None or m == name]:
            self._pending.remove(module)
            try:
                mod = importlib.import_module(f".{module}", __name__)
            except ModuleNotFoundError as exc:  # a command still being built
                if exc.name != f"{__name__}.{module}":
                    raise
                continue
            self[mod.command.name] = mod.command

    def __getitem__(self, name):
        self._load(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self._load(name)
        return super().get(name, default)

    def __contains__(self, name):
        self._load(name)
        return super().__contains__(name)

    def __iter__(self):
        self._load()
        return super().__iter__()

    def __len__(self):
        self._load()
        return super().__len__()

    def keys(self):
        self._load()
        return super().keys()

    def values(self):
        self._load()
        return super().values()

    def items(self):
        self._load()
        return super().items()

    def pop(self, *args):
        self._load()
        return super().pop(*args)


main.commands = _LazyCommands(COMMANDS)
