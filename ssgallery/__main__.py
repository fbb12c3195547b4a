"""``python -m ssgallery`` and the ``ssgallery`` command: `run`.

The command line's modules are imported inside `run`, so that Ctrl-C or SIGTERM
while they load (before the command installs its own handlers) is the documented
"interrupted", exit 130, not a traceback with exit status 1 (REJECT's).
"""

import sys


def run():
    """Import the command line and run it; an interrupt while it loads, or while the
    command's own handlers are put in place or back, exits 130 with the truthful
    message (Python's SIGINT handler is in force then)."""
    try:
        from ssgallery.cli import main

        main(prog_name="ssgallery")
    except KeyboardInterrupt:
        report = getattr(sys.modules.get("ssgallery.cli"), "_exit_interrupted", None)
        if report is not None:
            report()  # says which outputs were replaced; exits 130
        sys.stderr.write("ssgallery: interrupted; nothing was written\n")
        sys.exit(130)


if __name__ == "__main__":
    run()
