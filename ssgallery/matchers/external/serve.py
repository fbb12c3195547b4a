"""The persistent mode of the external-matcher contract: one program process, many requests.

A program that prints ``"serve": true`` in its ``--describe`` answer can be started once
as ``PROGRAM --serve`` and then answers requests on stdin/stdout, one JSON object per
line, so its start-up (interpreter, libraries, models) is paid once per ssgallery
process instead of once per scoring call::

    request  (ssgallery -> program):  {"probe_list": A.txt, "gallery_list": B.txt, "out": S.txt}
                                      {"quality_list": A.txt, "out": Q.txt}   ("quality": true)
    response (program -> ssgallery):  {"ok": true}            S.txt holds the matrix
                                      {"error": "one line"}   the request failed

The lists and the matrix file are exactly those of the one-shot contract. End of input
(stdin closed) asks the program to exit. The program runs without a shell in its own
process group; a request that takes longer than its timeout, or a program that dies,
kills the group and is a `ssgallery.errors.MatcherError`.
"""

import json
import os
import select
import subprocess
import tempfile
import time
import weakref

from ssgallery.errors import MatcherError, interrupts_deferred
from ssgallery.matchers.external.oneshot import kill_group


def _stop(proc, stderr):
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
    if proc.stdout:
        proc.stdout.close()
    stderr.close()


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
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the finalizer)
        with interrupts_deferred():  # never a started program without its finalizer
            try:
                self.proc = subprocess.Popen(list(argv) + ["--serve"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=self._stderr,
                                             start_new_session=True)
            except OSError as exc:
                self._stderr.close()
                raise MatcherError(f"cannot start matcher {program}: {exc.strerror or exc}") \
                    from None
            # killed with its group when this object goes away or the interpreter exits
            self._finalizer = weakref.finalize(self, _stop, self.proc, self._stderr)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        self._finalizer()

    def _last_error(self):
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return f": {lines[-1].strip()[:300]}" if lines else ""

    def request(self, fields, timeout):
        """Send one request (``fields``: the list files and ``out``); returns when the
        program says ``out`` is written. Raises MatcherError."""
        line = json.dumps(fields) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            self.close()
            raise MatcherError(f"matcher {self.program} --serve exited{self._last_error()}") \
                from None
        answer = self._read_line(timeout)
        try:
            reply = json.loads(answer)
        except ValueError:
            self.close()
            raise MatcherError(f"matcher {self.program} --serve answered {answer[:80]!r}, "
                               "not a JSON object") from None
        if not isinstance(reply, dict) or not reply.get("ok"):
            message = reply.get("error") if isinstance(reply, dict) else None
            raise MatcherError(f"matcher {self.program} failed: {str(message)[:300]}")

    def _read_line(self, timeout):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.close()
                raise MatcherError(f"matcher {self.program} --serve timed out after "
                                   f"{timeout:.3g} s and was killed")
            chunk = os.read(fd, 65536)
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
