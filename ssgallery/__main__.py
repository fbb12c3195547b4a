"""``python -m ssgallery`` and the ``ssgallery`` command: `run`.

The command line's modules are imported inside `run`, so that Ctrl-C or SIGTERM
while they load (before the command installs its own handlers) is the documented
"interrupted", exit 130, not a traceback with exit status 1 (REJECT's).
"""

import sys


def run():
    """Import the command line and run it; an interrupt while importing exits 130."""
    try:
        from ssgallery.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("ssgallery: interrupted; nothing was written\n")
        sys.exit(130)
    main(prog_name="ssgallery")


if __name__ == "__main__":
    run()
