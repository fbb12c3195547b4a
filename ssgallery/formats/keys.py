"""The host's keys: the signing key and the privacy key, read from a key file
(`load_key`: a regular file of `MIN_KEY_BYTES` to `MAX_KEY_BYTES` bytes, named by a
parameter or its variable) or given to a library function as bytes (`checked_key`), by
one rule (`key_problem`); and how a refusal names where a key is given (`key_source`,
`KeyNeeded`, `reads_key_files`). `ssgallery.formats.integrity` signs and checks digests
with them and re-exports these names.

Standard library only (on the ``verify`` path).
"""

import contextlib
import os

from ssgallery.errors import FormatError, SsgalleryError, option
from ssgallery.safeio import env_text, file_kind, open_regular

KEY_ENV = "SSGALLERY_KEY_FILE"


PRIVACY_KEY_ENV = "SSGALLERY_PRIVACY_KEY_FILE"


MAX_KEY_BYTES = 4096


MIN_KEY_BYTES = 16


def load_key(key_file=None, env=KEY_ENV, what="key file"):
    """The host's signing key: ``key_file`` or ``$SSGALLERY_KEY_FILE`` (None: neither
    is given; an empty name or an empty variable is an error, never "no key").

    The file's bytes are the key (16 to 4096 bytes; a regular file). ``env`` and
    ``what`` name another key of the host read by the same rules (the privacy key,
    `ssgallery.formats.encryption.load_privacy_key`). The `FileKey` returned knows its
    file (``file``: as given, resolved, (device, inode), the parameter or variable that
    named it), for `ssgallery.formats.encryption.distinct_keys`.
    """
    if key_file is not None and not os.fspath(key_file):
        raise SsgalleryError(f"the {what} name is empty")
    given = key_file is not None
    if key_file is None:
        key_file = env_text(env)  # set but empty: an error, never "no key"
    if key_file is None:
        return None
    try:
        fd, st = open_regular(key_file)
    except OSError as exc:
        raise SsgalleryError(f"cannot read the {what} ({exc.strerror})", path=key_file) \
            from None
    if fd is None:  # a FIFO, a device, a socket, a folder: never opened
        raise SsgalleryError(f"{what} is {file_kind(st.st_mode)}, expected a regular file",
                             path=key_file)
    with os.fdopen(fd, "rb") as handle:
        key = handle.read(MAX_KEY_BYTES + 1)
    problem = key_problem(key, read_to=MAX_KEY_BYTES + 1)
    if problem:
        raise SsgalleryError(f"{what} {problem}", path=key_file)
    found = FileKey(key)
    named = option(next(k[1] for k in _KEYS.values() if k[2] == env)) if given else f"${env}"
    found.file = (os.fspath(key_file), os.path.realpath(key_file), (st.st_dev, st.st_ino), named)
    return found


def key_problem(key, read_to=None):
    """Why ``key`` cannot be a key of the host (None when it can): the one rule for a
    key read from a key file (`load_key`) and one given as bytes (`checked_key`): bytes
    (or a bytearray), of `MIN_KEY_BYTES` to `MAX_KEY_BYTES`. ``read_to``: the bytes read
    of a file were at most that many (a longer file holds more than were read)."""
    if not isinstance(key, (bytes, bytearray)):
        return f"must be bytes, got {type(key).__name__}"
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        held = f"more than {MAX_KEY_BYTES}" if len(key) == read_to else len(key)
        return f"must hold {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, it holds {held}"
    return None


def checked_key(key, which="signing"):
    """The host's ``which`` key (``"signing"``, ``"privacy"``) as a library function was
    given it (None: no key), checked as `load_key` checks a key file's bytes
    (`key_problem`): a key that is not bytes (a str, a number, True) or holds fewer than
    `MIN_KEY_BYTES` (b"": a file signed or encrypted with an empty key) or more than
    `MAX_KEY_BYTES` bytes is refused, `InputError` naming the parameter and how a key is
    read (```privacy_key` must hold 16 to 4096 bytes, it holds 0 (a key file's bytes,
    as ssgallery.formats.encryption.load_privacy_key(FILE) reads them)``). Returns the
    key as bytes (a `FileKey` as it is: its file was checked)."""
    if key is None or isinstance(key, FileKey):
        return key
    problem = key_problem(key)
    if problem:
        from ssgallery.errors import InputError

        param, _, _, loader = _KEYS[which]
        raise InputError(f"{option(param)} {problem} (a key file's bytes, as {loader}(FILE) "
                         "reads them)")
    return bytes(key)


class FileKey(bytes):
    """A key's bytes as `load_key` read them from a key file: a refusal about it then
    names where such a key comes from (`key_source`: ``key_file`` or
    ``$SSGALLERY_KEY_FILE``, the commands' functions' parameter), and a key given as
    bytes (the ``key`` of `ssgallery.formats.gallery.read_gallery`, ``read_client`` or
    `ssgallery.formats.gallery.protected.rewrite_gallery`) as ``key``."""


# each key of the host: (the parameter of the functions that take its bytes, that of the
# commands' functions, which read it from a key file, its variable, its public loader)
_KEYS = {"signing": ("key", "key_file", KEY_ENV, "ssgallery.formats.integrity.load_key"),
         "privacy": ("privacy_key", "privacy_key_file", PRIVACY_KEY_ENV,
                     "ssgallery.formats.encryption.load_privacy_key")}


def key_source(which, from_files):
    """How a message names where the host's ``which`` key (``"signing"``,
    ``"privacy"``) is given: ``from_files`` (a `FileKey`, or a function of the commands
    run in `reads_key_files`) as its key-file parameter or variable (```key_file``` or
    $SSGALLERY_KEY_FILE; the command line shows the parameter as its flag,
    ``--key-file``), else as the parameter taking its bytes (```key```)."""
    param, file_param, env, _ = _KEYS[which]
    return f"{option(file_param)} or ${env}" if from_files else option(param)


class KeyNeeded(FormatError):
    """A file that needs a key of the host that was not given (an encrypted file read or
    replaced without the privacy key, protected templates used without it).

    ``problem`` is the line, with ``{key}`` where it names how the key is given
    (appended in parentheses when it has no ``{key}``): for a library caller, the
    parameter taking the key's bytes and the public function that loads one
    (```privacy_key```: a key file's bytes, as
    ``ssgallery.formats.encryption.load_privacy_key(FILE)`` reads them); raised
    through `reads_key_files` (the commands and their functions), the key file and its
    variable (`key_source`)."""

    def __init__(self, problem, which="privacy", path=None, from_files=False):
        self.problem, self.which, self.from_files = problem, which, from_files
        param, _, _, loader = _KEYS[which]
        given = key_source(which, True) if from_files else \
            f"{option(param)}: a key file's bytes, as {loader}(FILE) reads them"
        text = problem.replace("{key}", given) if "{key}" in problem else \
            f"{problem} ({given})"
        super().__init__(text, path=path)

    def __reduce__(self):  # pickled back from a worker process as the same line
        return (type(self), (self.problem, self.which, self.path, self.from_files))

    def named_as_files(self):
        """This refusal as the commands word it: the key file and its variable."""
        return self if self.from_files else \
            KeyNeeded(self.problem, self.which, self.path, True)


@contextlib.contextmanager
def reads_key_files():
    """Block (or decorator) of a function that reads the host's keys from key files (the
    commands, and their functions' ``key_file`` and ``privacy_key_file``): a
    `KeyNeeded` raised inside names the key file and its variable (`key_source`)
    instead of the parameter taking the key's bytes, which such a function has not."""
    try:
        yield
    except KeyNeeded as exc:
        if exc.from_files:
            raise
        raise exc.named_as_files().with_traceback(exc.__traceback__) from None
