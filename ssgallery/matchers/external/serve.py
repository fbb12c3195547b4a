"""The persistent mode of the external-matcher contract: one program process, many requests.

A program that prints ``"serve": true`` in its ``--describe`` answer can be started once
as ``PROGRAM --serve`` and then answers requests on stdin/stdout, one JSON object per
line, so its start-up (interpreter, libraries, models) is paid once per ssgallery
process instead of once per scoring call::

    request  (ssgallery -> program):  {"probe_list": A.txt, "gallery_list": B.txt, "out": S.txt}
                                      {"quality_list": A.txt, "out": Q.txt}   ("quality": true)
    response (program -> ssgallery):  {"ok": true}            S.txt holds the matrix
                                      {"error": "one line"}   the request failed
                                      (``ok`` a JSON boolean: ``"yes"`` is refused)

The lists and the matrix file are exactly those of the one-shot contract. End of input
(stdin closed) asks the program to exit. The program runs without a shell in its own
process group; a request that takes longer than its timeout, or a program that dies,
kills the group and is a `ssgallery.errors.MatcherError`.
"""

import json
import os
import select
import subprocess
import time
import weakref

from ssgallery.checks import is_bool, shown
from ssgallery.errors import MatcherError, interrupts_deferred
from ssgallery.matchers.external.oneshot import (
    MAX_STDERR_KEPT,
    kill_group,
    start_failure,
    wait_slice,
)

MAX_REPLY_BYTES = 1 << 16  # one reply line; a longer one kills the program


def _stop(proc):
    """Close the program's input, give it a moment to exit, then kill its group."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        pass
    kill_group(proc.pid)
    if proc.poll() is None:
        proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe:
            pipe.close()


class MatcherServer:
    """One running ``PROGRAM --serve`` process.

    Parameters
    ----------
    argv : list of str
        The program and its fixed arguments (``--serve`` is appended).
    program : str
        Its name for messages.
    """

    def __init__(self, argv, program):
        self.program = program
        self._err = bytearray()  # the tail of the program's stderr (MAX_STDERR_KEPT)
        with interrupts_deferred():  # never a started program without its finalizer
            try:
                self.proc = subprocess.Popen(list(argv) + ["--serve"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             start_new_session=True)
            except OSError as exc:
                raise start_failure(program, exc) from None
            # killed with its group when this object goes away or the interpreter exits
            self._finalizer = weakref.finalize(self, _stop, self.proc)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        self._finalizer()

    def _keep_stderr(self, chunk):
        self._err.extend(chunk)
        del self._err[:-MAX_STDERR_KEPT]

    def _last_error(self):
        """The last line the program wrote on stderr (what is there now, its tail)."""
        fd = self.proc.stderr.fileno() if self.proc.stderr and not self.proc.stderr.closed \
            else None
        while fd is not None and select.select([fd], [], [], 0.05)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            self._keep_stderr(chunk)
        lines = self._err.decode("utf-8", "replace").strip().splitlines()
        return f": {lines[-1].strip()[:300]}" if lines else ""

    def request(self, fields, timeout, timeout_note=None):
        """Send one request (``fields``: the list files and ``out``); returns when the
        program says ``out`` is written. Raises MatcherError (on a timeout, its line ends
        with ``timeout_note`` in parentheses, as `run_once`'s)."""
        line = json.dumps(fields) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            self.close()
            raise MatcherError(f"matcher {self.program} --serve exited{self._last_error()}") \
                from None
        answer = self._read_line(timeout, timeout_note)
        try:
            reply = json.loads(answer)
        except (ValueError, RecursionError):  # nested past the stack: no reply either
            reply = None
        if not isinstance(reply, dict):  # a banner, a log line, [1]: not the contract
            self.close()
            raise MatcherError(f"matcher {self.program} --serve answered {answer[:80]!r}, "
                               "not a JSON object (its stdout holds only reply lines: "
                               "log to stderr)")
        if not is_bool(reply.get("ok", False)):
            self.close()  # {"ok": "yes"} is no true: the program does not speak the contract
            raise MatcherError(f"matcher {self.program} --serve: ok must be true or false, "
                               f"got {shown(reply['ok'])}")
        if reply.get("ok") is not True:
            self._failed(reply)

    def _failed(self, reply):
        """Raise the one line of a reply that is not ``{"ok": true}``: the program's
        ``error`` text, else what it answered (``{"ok": false}``, ``{}``: no reason)."""
        message = reply.get("error")
        if isinstance(message, str) and message.strip():
            raise MatcherError(f"matcher {self.program} failed: {message[:300]}")
        raise MatcherError(f"matcher {self.program} --serve answered {shown(reply)}: neither "
                           '{"ok": true} nor {"error": "..."} (the request failed, no reason '
                           "given)")

    def _read_line(self, timeout, timeout_note=None):
        """One reply line (at most `MAX_REPLY_BYTES`); stderr is drained meanwhile and
        only its tail kept."""
        fd, err = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        watched = [fd, err]
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = wait_slice(deadline)
            ready = select.select(watched, [], [], left)[0] if left > 0 else []
            if not ready and time.monotonic() < deadline:  # a slice of a long timeout
                continue
            if not ready:
                self.close()
                note = f" ({timeout_note})" if timeout_note else ""
                raise MatcherError(f"matcher {self.program} --serve timed out after "
                                   f"{timeout:.3g} s and was killed{note}")
            if err in ready:
                chunk = os.read(err, 1 << 16)
                self._keep_stderr(chunk)
                if not chunk:  # the program closed its stderr
                    watched.remove(err)
                if fd not in ready:
                    continue
            chunk = os.read(fd, 65536)
            if len(data) + len(chunk) > MAX_REPLY_BYTES:
                self.close()
                raise MatcherError(f"matcher {self.program} --serve wrote more than "
                                   f"{MAX_REPLY_BYTES} bytes without ending its reply line "
                                   "and was killed")
            if not chunk:
                self.proc.wait()
                error = self._last_error()
                self.close()
                raise MatcherError(f"matcher {self.program} --serve exited with status "
                                   f"{self.proc.returncode}{error}")
            data += chunk
        return data.decode("utf-8", "replace").strip()


_SERVERS = {}  # argv -> MatcherServer: one running program per command in this process


def shared_server(argv, program):
    """The running server of ``argv`` in this process, started if needed.

    Returns ``(server, started)``. Every matcher object of the same command (e.g. one
    unpickled per job in a worker process) shares it, so a worker starts the program once.
    """
    key = tuple(argv)
    server = _SERVERS.get(key)
    if server is not None and server.alive():
        return server, False
    server = _SERVERS[key] = MatcherServer(argv, program)
    return server, True


def close_shared(argv):
    """Stop the shared server of ``argv``, if any."""
    server = _SERVERS.pop(tuple(argv), None)
    if server is not None:
        server.close()
