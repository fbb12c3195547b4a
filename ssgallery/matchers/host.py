"""What the verification host says about its matcher program (never read from a file).

A store or gallery names its matcher (e.g. ``external``) and holds a SHA-256 digest of
the program's contract, never a command. The host that runs ssgallery names the
program, first found of:

1. the ``--matcher-cmd 'PROGRAM ARGS'`` option (``matcher_cmd`` in the library), or at
   enroll its other spelling ``-O command=...`` (the ``command`` matcher option), which
   a warning names when the next two name another program (`name_overridden`);
2. the environment variable ``SSGALLERY_MATCHER_CMD``;
3. the configuration file ``$SSGALLERY_CONFIG`` (default
   ``$XDG_CONFIG_HOME/ssgallery/config.toml``, i.e. ``~/.config/ssgallery/config.toml``)::

       [external]
       command = "my-matcher --model /opt/models/net.bin"   # or a list of strings
       cache_dir = "/var/cache/ssgallery"                   # optional answer cache

A command string is split like a shell would (`shlex.split`), but no shell runs it.
A matcher that runs no program (eigenface, dlib) ignores the host's program; one given
as ``--matcher-cmd`` is then named in a warning (`name_unused`), never dropped without
a word.
"""

import os
import shlex
import shutil
from dataclasses import dataclass

from ssgallery.errors import InputError, option
from ssgallery.safeio import env_text

CONFIG_KEYS = ("command", "cache_dir")  # of the configuration file's [external] table
CMD_ENV = "SSGALLERY_MATCHER_CMD"
CONFIG_ENV = "SSGALLERY_CONFIG"
# where the answer cache of the commands that score (compress, verify, identify, roc) is set
CACHE_WHERE = (f"the commands that score read cache_dir from the [external] table of "
               f"${CONFIG_ENV} (default ~/.config/ssgallery/config.toml)")


@dataclass
class HostMatcher:
    """The host's external matcher settings.

    Attributes
    ----------
    argv : list of str or None
        The program and its arguments (None: the host names none).
    cache_dir : str or None
        Folder of the persistent answer cache.
    source : str
        Where ``argv`` came from (for messages).
    warn : callable(str) or None
        Receives the warning of `name_unused`.
    """

    argv: list = None
    cache_dir: str = None
    source: str = "nowhere"
    warn: object = None


def split_command(command, source):
    """A command, a string (split as a shell would, `shlex.split`) or a list of strings
    (or paths), as an argument list; one line naming ``source`` when it cannot be: a
    number, a bool, null or a list holding one (``-O 'command=[1, 2]'``, whose items
    were made words, ``1``) is no command."""
    words = isinstance(command, (list, tuple)) and all(_is_text(c) for c in command)
    if words:
        argv = [os.fspath(c) for c in command]
    elif isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InputError(f"cannot parse the matcher command from {source} "
                             f"({exc}): {command[:80]!r}") from None
    else:
        from ssgallery.checks import shown

        raise InputError(f"the matcher command from {source} must be a string or a list of "
                         f"strings, got {shown(command)}")
    if not argv or not argv[0].strip():
        raise InputError(f"the matcher command from {source} is empty")
    for word in argv:  # '-O command="a\u0000b"' (JSON), TOML's "\u0000": no program takes one
        if "\0" in word:
            from ssgallery.checks import shown

            raise InputError(f"the matcher command from {source} holds a NUL character, "
                             f"which no program name or argument can: {shown(word)}")
    return argv


def cache_folder(value, source, path=None):
    """The answer cache folder ``cache_dir`` as ``source`` gives it (``[external]`` of the
    configuration file ``path``, an external matcher option): None (no persistent cache),
    a string or a path. Anything else, a number, a bool or a list (``-O cache_dir=1`` is
    read as JSON, TOML has them too), is refused in one line: it is no folder; so is an
    empty name, nearly always an unset shell variable (``-O cache_dir=$CACHE``), which
    must not quietly mean "no cache"."""
    from ssgallery.checks import shown

    if value is not None and not _is_text(value):
        raise InputError(f"{source} cache_dir must be a folder name (a string), got "
                         f"{shown(value)}", path=path)
    if value is not None and "\0" in os.fspath(value):  # TOML's "\u0000", -O's JSON
        raise InputError(f"{source} cache_dir holds a NUL character, which no folder name "
                         f"can: {shown(os.fspath(value))}", path=path)
    if value is not None and not os.fspath(value):  # `-O cache_dir=$UNSET`: never "none"
        raise InputError(f"{source} cache_dir is empty (an unset shell variable?): name a "
                         "folder, or leave cache_dir out to keep answers for this run only",
                         path=path)
    return value


def _is_text(value):
    """True for a string or a path (`os.PathLike` giving a string)."""
    return isinstance(value, str) or isinstance(value, os.PathLike) and isinstance(
        os.fspath(value), str)


def _config_path():
    path = env_text(CONFIG_ENV)
    if path is not None:
        return path, True
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "ssgallery", "config.toml"), False


def _read_config():
    import tomllib

    from ssgallery.safeio import read_regular

    path, explicit = _config_path()
    if not explicit and not os.path.exists(path):
        return {}, path
    data = read_regular(path, "ssgallery configuration file", 1 << 20)
    try:
        config = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"not a valid TOML configuration ({exc})", path=path) from None
    table = config.get("external", {})
    if not isinstance(table, dict):
        raise InputError("[external] must be a table", path=path)
    # a misspelt name, or keys above the [external] line, would leave the program
    # unnamed without a word
    outside = sorted(k for k, v in config.items() if k != "external" and not isinstance(v, dict))
    for names, what in ((outside, "key {!r} outside the [external] table"),
                        (sorted(set(config) - {"external"}), "unknown table {!r}"),
                        (sorted(set(table) - set(CONFIG_KEYS)), "unknown key {!r} in [external]")):
        if names:
            raise InputError(f"{what.format(names[0])} (the configuration file holds "
                             f"[external] with {' and '.join(CONFIG_KEYS)})", path=path)
    return table, path


def host_matcher(matcher_cmd=None, warn=None):
    """The host's external matcher settings (see the module docstring for the order).

    Parameters
    ----------
    matcher_cmd : str or list of str, optional
        The command given on the command line / by the caller; wins over the rest.
    warn : callable(str), optional
        Told when a matcher that runs no program ignores ``matcher_cmd`` (`name_unused`).

    Returns
    -------
    HostMatcher
    """
    table, config_path = _read_config()
    cache_dir = cache_folder(table.get("cache_dir"), "[external]", config_path)
    if matcher_cmd is not None:
        return HostMatcher(split_command(matcher_cmd, option("matcher_cmd")), cache_dir,
                           option("matcher_cmd"), warn)
    command = env_text(CMD_ENV)
    if command is not None:
        return HostMatcher(split_command(command, f"${CMD_ENV}"), cache_dir,
                           f"${CMD_ENV}")
    if "command" in table:
        return HostMatcher(split_command(table["command"], config_path), cache_dir,
                           config_path)
    return HostMatcher(None, cache_dir)


def attached(matcher, host, source):
    """``matcher`` bound to the host's settings ``host`` (`runs_program`: else left as it
    is) and naming ``source``, the store or gallery its configuration came from, in its
    refusals (a program the host does not name, another contract, a timeout made of the
    file's options): `ssgallery.formats.hdf5.build_matcher`, and ``roc``'s matcher of
    each split of a store. Returns ``matcher``."""
    if runs_program(type(matcher)):
        matcher.attach_host(host)
        matcher.source_ = os.fspath(source)
    return matcher


def same_program(file, host):
    """Refuse the program the host names (``host``, a `HostMatcher`) when its contract
    is not the one the store ``file`` was made with
    (`ssgallery.formats.store.EnrollmentStore`): the check of the first scoring run of a
    matcher rebuilt from a file (``check_contract``, one ``PROGRAM --describe``), made
    first by the commands that would not make it otherwise: ``enroll --add`` (it scores
    nothing) and ``roc --store`` (it fits a new matcher on each split, which would
    measure another program as the store's). A store whose matcher runs no program asks
    nothing: a ``--matcher-cmd`` is named as ignored (`name_unused`)."""
    from ssgallery.matchers import get_matcher_class

    if not runs_program(get_matcher_class(file.matcher_name)):
        name_unused(host, file.matcher_name, file.path)
        return
    check = getattr(file.matcher(host=host), "check_contract", None)  # duck-typed plug-ins
    if check is not None:
        check()


def runs_program(matcher_class):
    """True for a matcher class that runs the host's program: one that binds the host's
    settings (`ssgallery.matchers.base.Matcher.attach_host`)."""
    from ssgallery.matchers.base import Matcher

    return matcher_class.attach_host is not Matcher.attach_host


def name_unused(host, matcher_name, path):
    """Warn (``host.warn``) that the program ``host`` was given as ``matcher_cmd`` is
    ignored: ``path`` (a store, gallery or faces folder) uses ``matcher_name``, which runs
    no program. A program named by the environment or the configuration file is the
    host's for every external store and gallery: nothing is said about it."""
    if host is None or host.warn is None or host.source != option("matcher_cmd"):
        return
    from ssgallery.errors import printable

    flag = option("matcher_cmd")
    host.warn(f"{flag} is ignored: {printable(os.fspath(path))} uses the {matcher_name} "
              f"matcher, which runs no program ({flag} names an external matcher's)")


def name_overridden(argv, given_as, warn):
    """Warn (``warn``) when the program ``argv`` given as ``given_as`` (``-O command``,
    which wins over the host's settings) is not the one the host names otherwise
    (``$SSGALLERY_MATCHER_CMD`` or the configuration file): one line naming the program
    run and the one left out. Host settings that cannot be read say nothing here (they
    are not used)."""
    try:
        host = host_matcher()
    except InputError:
        return
    if host.argv is None or same_command(argv, host.argv):
        return
    from ssgallery.errors import printable

    warn(f"the external matcher program is {given_as}'s ({printable(shlex.join(argv))}), "
         f"not the one {printable(host.source)} names ({printable(shlex.join(host.argv))})")


def same_command(argv, other):
    """True when two matcher commands run the same program with the same arguments:
    equal words, or words naming the same existing file (the program as found on
    ``$PATH`` or as a path; an argument as a path from the current folder), so
    ``./m.py`` and ``/abs/m.py``, or ``m.py`` on ``$PATH`` and its full path, agree."""
    if len(argv) != len(other):
        return False
    for i, (a, b) in enumerate(zip(argv, other)):
        if a != b:
            file = _named_file(a, i == 0)
            if file is None or file != _named_file(b, i == 0):
                return False
    return True


def _named_file(word, program):
    """The real path of the existing file a command's ``word`` names (``program``: the
    command's first word, looked up on ``$PATH`` when it holds no separator), or None."""
    path = shutil.which(word) if program and os.sep not in word else word
    return os.path.realpath(path) if path and os.path.isfile(path) else None
