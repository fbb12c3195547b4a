"""Daily use without surprises: what a user met running the commands by hand (session
16): each case as the user ran it, and what they expect instead."""

from helpers import invoked


def test_ssgallery_alone_prints_the_help_and_succeeds():
    """``ssgallery`` with no command printed the help on stderr and exited 2 (click 8.2
    and later treat it as a usage error); it is the help asked for, as ``--help``."""
    alone, asked = invoked([]), invoked(["--help"])
    assert alone["exit_code"] == 0, alone["output"]
    assert alone["stdout"] == asked["stdout"] and "Commands:" in alone["stdout"]
    assert alone["stderr"] == ""
