"""Running an external matcher program once: its image and list files, the process.

One request of the contract is a set of list files (one image path per line, images
written by `write_images`) and an answer file; `run_once` runs ``PROGRAM ARGS`` without
a shell, in its own process group, with a timeout, its stdout capped at
`ssgallery.matchers.external.contract.answer_limit` bytes and only the tail of its
stderr kept; on timeout, failure or Ctrl-C the whole group is killed, and any process
the program left behind in its group is killed after it exits. Every failure is a
one-line `ssgallery.errors.MatcherError` naming the program.
"""

import errno
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time

import numpy as np

from ssgallery.errors import InputError, MatcherError, interrupts_deferred, printable
from ssgallery.matchers.external.contract import answer_limit

MAX_STDERR_KEPT = 1 << 16  # the tail of stderr kept for messages


def write_pgm(path, image):
    """Write an 8-bit grey image (H, W) as binary PGM (P5)."""
    image = np.asarray(image, dtype=np.uint8)
    with open(path, "wb") as handle:
        handle.write(b"P5\n%d %d\n255\n" % (image.shape[1], image.shape[0]))
        handle.write(image.tobytes())


def write_images(folder, tag, images):
    """Images (n, H, W) as files in ``folder``: integer pixels on [0, 255] as lossless
    .pgm, any other (a prototype) as float32 .npy (rounding would erase small steps).
    Returns their paths."""
    paths = []
    for i, img in enumerate(images):
        if np.all((img >= 0) & (img <= 255) & (img == np.round(img))):
            paths.append(os.path.join(folder, f"{tag}{i:06d}.pgm"))
            write_pgm(paths[-1], img)
        else:
            paths.append(os.path.join(folder, f"{tag}{i:06d}.npy"))
            np.save(paths[-1], np.asarray(img, dtype=np.float32))
    return paths


def write_lists(folder, lists):
    """The list files of one request in ``folder``: ``lists`` maps each list option
    (probe_list, ...) to its image paths; returns {option: list file}, one absolute
    path per line."""
    request = {}
    for name, paths in lists.items():
        for p in paths:
            if "\n" in str(p) or "\r" in str(p):
                raise InputError(f"image path {p!r} contains a line break")
        request[name] = os.path.join(folder, f"{name}.txt")
        with open(request[name], "w", encoding="utf-8") as handle:
            handle.writelines(os.path.abspath(p) + "\n" for p in paths)
    return request


def resolve(argv):
    """``argv`` after checking that its program exists and is executable. A bare name
    is looked up on ``$PATH`` only, as a shell does: one that is not there but is a
    file of the current folder is named as such (``./NAME``)."""
    prog = argv[0]
    path = prog if os.sep in prog else shutil.which(prog)
    if path is None and os.path.isfile(prog):
        raise MatcherError(f"matcher program {prog!r} not found on $PATH (a bare name is "
                           f"looked up there only, as a shell does): name the current "
                           f"folder's {prog} as ./{prog} or by its full path")
    if path is None or not os.path.exists(path):
        unexpanded = prog.startswith("~") or "$" in prog  # a shell's work: none runs it
        relative = path is not None and not os.path.isabs(path)
        raise MatcherError(f"matcher program {prog!r} not found" + (
            " (no shell runs the command, so ~ and $VARIABLES in it are not expanded: give "
            "the full path)" if unexpanded else split_path(argv) or (
                f" in {printable(os.getcwd())} (a relative path is taken from the folder the "
                "command runs in: give the full path)" if relative else "")))
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise MatcherError(f"matcher program {prog!r} is not executable")
    return argv


def split_path(argv):
    """A hint for a command that split a path with spaces into words, as an unquoted
    one is (``/opt/my dir/m.py`` -> ``/opt/my``, ``dir/m.py``): the first run of words,
    the first of which names no file, that joined with spaces name one; else ""."""
    for i, word in enumerate(argv):
        if os.path.lexists(word):
            continue
        for j in range(i + 2, len(argv) + 1):
            joined = " ".join(argv[i:j])
            if os.path.lexists(joined):
                return (f" (the command is split at spaces as a shell splits it: quote the "
                        f"path {shlex.quote(joined)})")
    return ""


def run_once(argv, program, timeout, n_pairs=0, timeout_note=None):
    """Run ``argv`` once (``program``: its name for messages); return its stdout (bytes).

    Raises `MatcherError` on failure, on a timeout of ``timeout`` seconds (its line ends
    with ``timeout_note`` in parentheses: how the timeout was made and how to raise it),
    on more than ``answer_limit(n_pairs)`` bytes of stdout or on a non-zero exit status.
    """
    limit = answer_limit(n_pairs)
    proc = None
    try:
        with interrupts_deferred():  # an interrupt now still reaches the finally below
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        out, err = _communicate(proc, timeout, limit)
    except subprocess.TimeoutExpired:
        note = timeout_note or f"{n_pairs} pairs"
        raise MatcherError(f"matcher {program} timed out after {timeout:.3g} s and was killed "
                           f"({note})") from None
    except _TooMuchOutput:
        raise MatcherError(f"matcher {program} wrote more than {limit} bytes on stdout and "
                           "was killed") from None
    except OSError as exc:
        if proc is not None:
            raise
        raise start_failure(program, exc) from None
    finally:  # also on Ctrl-C: never leave the program or its children behind
        if proc is not None:
            _reap(proc)
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        said = out.decode("utf-8", "replace").strip().splitlines()  # some report on stdout
        last = f": {printable(lines[-1].strip()[:300])}" if lines else \
            f" (no message on stderr; its stdout ends {printable(said[-1].strip()[:120])!r})" \
            if said else " (no message on stderr)"
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            raise MatcherError(f"matcher {program} was killed by {name}{last}")
        raise MatcherError(f"matcher {program} failed with exit status {proc.returncode}{last}"
                           f"{split_path(argv)}")
    return out


def start_failure(program, exc):
    """The one-line `MatcherError` of a program the system could not start (``exc``, the
    OSError of starting it); a file that is no program (a script without its ``#!``
    line: ENOEXEC) says how to name its interpreter."""
    text = f"cannot start matcher {program}: {exc.strerror or exc}"
    if exc.errno == errno.ENOEXEC:
        text += (" (not a program this system runs: a script needs a first line "
                 "'#!/usr/bin/env INTERPRETER', or the command names its interpreter "
                 "first, e.g. 'python3 SCRIPT')")
    return MatcherError(text)


MAX_WAIT = 3600.0  # seconds one select waits at most (it refuses about 25 days and more)


def wait_slice(deadline):
    """Seconds to wait for a program's output before ``deadline`` (a `time.monotonic`
    time; <= 0: passed), at most `MAX_WAIT`: a long timeout (``-O timeout_base=604800``)
    waits in slices, never a select timeout too large for the platform."""
    return min(deadline - time.monotonic(), MAX_WAIT)


class _TooMuchOutput(Exception):
    """The program wrote more than its limit on stdout."""


def _communicate(proc, timeout, limit):
    """Like ``proc.communicate(timeout)`` with stdout capped at ``limit`` bytes (raises
    `_TooMuchOutput`) and only the tail of stderr kept; waits for the exit."""
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            remaining = wait_slice(deadline)
            if remaining <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is out and len(out) > limit:
                    raise _TooMuchOutput
                if key.data is err and len(err) > MAX_STDERR_KEPT:
                    del err[:-MAX_STDERR_KEPT]
    proc.stdout.close()
    proc.stderr.close()
    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    return bytes(out), bytes(err)


def _reap(proc):
    """Kill a finished or running program's process group, wait for it, close its pipes."""
    kill_group(proc.pid)
    if proc.returncode is None:
        proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()


def kill_group(pgid):
    """SIGKILL the process group ``pgid`` (gone or not ours: nothing to do)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
