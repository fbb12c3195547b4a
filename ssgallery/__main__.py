"""``python -m ssgallery`` and the ``ssgallery`` command: `run`.

`run`'s first act is to make SIGINT and SIGTERM only recorded (`_Recorder`): a
KeyboardInterrupt raised while the command line's modules load can land in an
importlib callback, where Python prints "Exception ignored" and drops it, and the
command would then run to completion. The command's own handlers take the recorded
signal over as they are put in place (`ssgallery.errors.interrupt_handlers`), and
one recorded after they are put back ends the run with 130 too: Ctrl-C or SIGTERM
at any moment of `run` is the documented "interrupted", exit 130, never a completed
run with exit 0, nor a traceback with exit status 1 (REJECT's).
"""

import sys


class _Recorder:
    """A SIGINT/SIGTERM handler that only records the signal in ``received``
    (`ssgallery.errors.interrupt_handlers` delivers it to the next handler)."""

    def __init__(self):
        self.received = []

    def __call__(self, signum, frame):
        self.received.append(signum)


_recorder = _Recorder()  # SIGINT's and SIGTERM's handler outside the command's own


def run():
    """Import the command line and run it; an interrupt while it loads, or while the
    command's own handlers are put in place or back, exits 130 with the truthful
    message."""
    try:
        import _signal  # built in, loaded with the interpreter: no import machinery runs

        _recorder.received.clear()
        for signum in (_signal.SIGINT, _signal.SIGTERM):
            _signal.signal(signum, _recorder)
        from ssgallery.cli import main

        main(prog_name="ssgallery")
    except KeyboardInterrupt:  # before the recorder was in place
        _exit_interrupted()
    except SystemExit as exc:
        if _recorder.received and exc.code != 130:  # after the command's handlers
            _exit_interrupted()
        raise


def _exit_interrupted():
    report = getattr(sys.modules.get("ssgallery.cli"), "_exit_interrupted", None)
    if report is not None:
        report()  # says which outputs were replaced; exits 130
    sys.stderr.write("ssgallery: interrupted; nothing was written\n")
    sys.exit(130)


if __name__ == "__main__":
    run()
