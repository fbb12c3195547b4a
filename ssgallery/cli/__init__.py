"""The ``ssgallery`` command line. Commands only parse, call one library function and
print; each lives in its own module and imports the library lazily, so ``verify``
never pays for scikit-learn or matplotlib."""

import signal
import sys

import click

from ssgallery import __version__


class _Group(click.Group):
    """Turns :class:`ssgallery.errors.SsgalleryError` (and any OSError) into one line on
    stderr + exit 2; Ctrl-C and SIGTERM into "interrupted" + exit 130."""

    def invoke(self, ctx):
        from ssgallery.errors import SsgalleryError
        from ssgallery.formats.atomic import forget_written

        forget_written()
        _signalled.clear()
        previous = _on_sigterm_interrupt()
        try:
            result = super().invoke(ctx)
        except SsgalleryError as exc:
            click.echo(f"ssgallery: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            _exit_interrupted(str(exc))
        except click.exceptions.Exit:
            if _signalled:  # an interrupt swallowed by a library (e.g. inside h5py)
                _exit_interrupted()
            raise
        except OSError as exc:  # safety net: permissions, full disk, vanished files
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            click.echo(f"ssgallery: error: {where}{exc.strerror or exc}", err=True)
            sys.exit(2)
        finally:
            for signum, handler in (previous or {}).items():
                signal.signal(signum, handler)
        if _signalled:
            _exit_interrupted()
        return result


_signalled = set()  # signals received during this command


def _exit_interrupted(note=""):
    """Exit 130 saying truthfully which outputs were replaced before the interrupt
    (``note``: what the command kept instead, e.g. the committed clients of compress)."""
    from ssgallery.formats.atomic import written_paths

    done = written_paths()
    if note:
        click.echo(f"ssgallery: interrupted; {note}", err=True)
    elif done:
        click.echo(f"ssgallery: interrupted after writing {', '.join(done)} (complete, "
                   f"replaced)", err=True)
    else:
        click.echo("ssgallery: interrupted; nothing was written", err=True)
    sys.exit(130)


def _raise_interrupt(signum, frame):
    _signalled.add(signum)
    raise KeyboardInterrupt


def _on_sigterm_interrupt():
    """SIGTERM behaves like Ctrl-C (finally-blocks run: temporary folders and matcher
    processes are cleaned up), and both are remembered so that an interrupt a library
    swallows still ends the command with 130; returns the previous handlers (None off
    the main thread)."""
    try:
        return {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        return None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ssgallery")
def main():
    """Compress biometric face galleries into super-sparse virtual prototypes.

    \b
    Typical session:
      ssgallery enroll faces/          # faces/<client>/*.pgm|png|jpg -> enrollment.h5
      ssgallery compress --m 2         # per-client SVM -> 2 virtual prototypes -> gallery.h5
      ssgallery verify probe.png --claim 17   # m matches; exit 0 accept, 1 reject
      ssgallery identify probe.png --top 5    # 1:N search over every client
      ssgallery roc                    # FRR/FAR, EER, matches per claim vs baselines
      ssgallery info                   # clients, m, bytes per client vs the full SVM
      ssgallery show --claim 17 -o protos.png

    Each command has its own --help. Errors are one line on stderr, exit status 2.
    """


def _register():
    import importlib

    for module in ("enroll", "compress", "verify", "identify", "info", "show", "synth", "roc"):
        try:
            mod = importlib.import_module(f".{module}", __name__)
        except ModuleNotFoundError as exc:  # a command still being built
            if exc.name != f"{__name__}.{module}":
                raise
            continue
        main.add_command(mod.command)


_register()
