"""The program side of `ssgallery.matchers.external.ExternalMatcher`: naming and running
the program (one run per request, or requests to its persistent ``--serve`` session),
its ``--describe`` contract and the check of a rebuilt matcher's contract, and the
requests of the contract (score and quality lists) with their answers parsed and
bounded (`ssgallery.matchers.external.contract`).
"""

import os
import shlex
import tempfile

import numpy as np

from ssgallery.errors import InputError, MatcherError, option, printable
from ssgallery.matchers.external.contract import (
    answer_limit,
    contract_digest,
    described_differently,
    parse_describe,
    parse_matrix,
)
from ssgallery.matchers.external.oneshot import resolve, run_once, write_images, write_lists
from ssgallery.matchers.host import CMD_ENV, split_command
from ssgallery.safeio import MAX_SECONDS

MAX_TIMEOUT = MAX_SECONDS  # a week: the longest ssgallery waits for anything
from ssgallery.safeio import read_regular


class ProgramClient:
    """Talks to the matcher program through the external contract (a mixin of
    `ssgallery.matchers.external.ExternalMatcher`, which sets its parameters).

    Uses the parameters ``command``, ``timeout_base``, ``timeout_per_pair`` and
    ``serve``, the method ``get_config`` (the stored parameters, part of the
    contract digest) and ``source_`` (the file it was rebuilt from); keeps the counters ``n_calls_``, ``n_pairs_``, ``n_starts_``,
    the description (``description_``, ``contract_sha256_``, ``serve_offered_``) and
    the served session (``_server``, never pickled: a worker starts its own).
    """

    def __getstate__(self):
        """What a copy (a worker process: loky, Dask) gets: no served session (it starts
        its own) and, once the contract is known, a contract to check again: the copy
        runs the program found at the command's path where it runs (another host), so
        its first run asks ``--describe`` there (`check_contract`)."""
        state = dict(self.__dict__)
        state["_server"] = None
        if state.get("contract_sha256_") is not None:
            state["_contract_checked"] = False
        return state

    def close(self):
        """Stop the served program, if one runs (it is also stopped at exit)."""
        if self._server is not None:
            from ssgallery.matchers.external.serve import close_shared

            close_shared(self.argv)
            self._server = None

    def _serves(self):
        """True when the program is to be used in persistent mode."""
        return bool(self.serve) and self._offers()

    def _offers(self):
        """True when the program's ``--describe`` says ``"serve": true`` (asked once,
        `_ask_describe`: an answer whose ``serve`` is not a JSON boolean is refused)."""
        if getattr(self, "serve_offered_", None) is None:
            self._ask_describe()
        return self.serve_offered_

    @property
    def argv(self):
        """The command as an argument list. None named: one line that starts with the
        file the matcher was rebuilt from (``source_``), which needs the program."""
        if self.command is None:
            raise MatcherError("the external matcher's program is not named on this host "
                               f"(a file never names it): set ${CMD_ENV} or give "
                               f"{option('matcher_cmd')}", path=self.source_)
        try:
            return split_command(self.command, "this host")
        except InputError as exc:
            raise MatcherError(str(exc)) from None

    @property
    def program(self):
        """The program's name for messages: the command, shortened."""
        text = printable(shlex.join(self.argv))
        return text if len(text) <= 120 else text[:117] + "..."

    def _resolve(self):
        return resolve(self.argv)

    def run(self, args, n_pairs=0, unit="pairs"):
        """Run the program with extra ``args``; return its stdout (bytes). A request
        other than scoring (``--describe``, ``--quality-list``) is named in messages;
        ``n_pairs`` ``unit`` (pairs, images) set the timeout.

        Raises `MatcherError` on failure, timeout or a non-zero exit status.
        """
        argv = self._resolve() + list(args)
        timeout = self._timeout(n_pairs)
        named = args[0] in ("--describe", "--quality-list")
        program = f"{self.program} {args[0]}" if named else self.program
        return run_once(argv, program, timeout, n_pairs, self._timeout_note(n_pairs, unit))

    def _timeout(self, n_pairs):
        """Seconds one request of ``n_pairs`` may take: ``timeout_base + timeout_per_pair
        x n_pairs``, at most `MAX_TIMEOUT` (the options are at most that each, and a
        large batch waits no longer: a program that stalls is always killed)."""
        return min(float(self.timeout_base) + float(self.timeout_per_pair) * n_pairs,
                   MAX_TIMEOUT)

    def _timeout_note(self, n_pairs, unit="pairs"):
        """What a timed-out request's line says in parentheses: how its timeout was made
        and what raises it (the options are the store's, recorded at enrollment)."""
        made = f"timeout_base {float(self.timeout_base):g} s"
        if n_pairs:
            made += f" + timeout_per_pair {float(self.timeout_per_pair):g} s x {n_pairs} {unit}"
        if self.source_ is None:
            return (f"{made}: a slower program needs larger external matcher options "
                    "timeout_base and timeout_per_pair")
        return (f"{made}, the options {printable(self.source_)} records from its enrollment: "
                "a slower program needs a store enrolled again with larger ones, and its "
                "galleries compressed again")

    def _ask_describe(self):
        """Run ``PROGRAM --describe``; return (normalised description, contract digest)."""
        out = self.run(["--describe"])
        raw, desc = parse_describe(out, self.program)
        self.serve_offered_ = raw.get("serve", False)  # a JSON boolean (parse_describe)
        return desc, contract_digest(raw, self.get_config())

    def describe(self):
        """The program's ``--describe`` answer (asked once), validated."""
        if getattr(self, "description_", None) is None:
            self.description_, self.contract_sha256_ = self._ask_describe()
            self._contract_checked = True
        return self.description_

    def contract_digest(self):
        """`contract_sha256_` of the program (asks ``--describe`` once)."""
        self.describe()
        return self.contract_sha256_

    def check_contract(self):
        """Before the first scoring run of a matcher rebuilt from a file (and before
        ``enroll --add`` with a program named, `ssgallery.app.enroll_add`): the host's
        program must have the contract the file was made with (its digest), and the
        file's stored description must be the program's (`described_differently`). A
        refusal starts with the file's path, ``source_`` (set by
        `ssgallery.formats.hdf5.build_matcher`), like every other refusal of a file."""
        if getattr(self, "_contract_checked", False):
            return
        desc, digest = self._ask_describe()
        source = self.source_  # the file named first, as every refusal of a file does
        if digest != self.contract_sha256_:
            raise MatcherError(f"matcher {self.program} is not the file's matcher: its "
                               f"contract digest is {digest[:12]}..., the file was made with "
                               f"{self.contract_sha256_[:12]}... (name the same program, "
                               "version and model on this host)", path=source)
        if desc != self.description_:
            raise MatcherError(described_differently(self.program, self.description_, desc),
                               path=source)
        self._contract_checked = True

    def score_paths(self, probe_paths, gallery_paths, workdir=None):
        """Raw program answers (n, m) for image files, one run (no conversion, no cache)."""
        shape = (len(probe_paths), len(gallery_paths))
        if 0 in shape:
            return np.zeros(shape)
        text, empty = self._call({"probe_list": probe_paths, "gallery_list": gallery_paths},
                                 shape[0] * shape[1], workdir)
        self.n_pairs_ += shape[0] * shape[1]
        return parse_matrix(text, shape, self.program, self._answer_bounds(), empty=empty)

    def quality_paths(self, paths, workdir=None):
        """The program's quality score of image files, shape (n,), one run."""
        if not paths:
            return np.zeros(0)
        text, empty = self._call({"quality_list": paths}, len(paths), workdir)
        return parse_matrix(text, (len(paths), 1), self.program, quality=True,
                            empty=empty)[:, 0]

    def _call(self, lists, n_pairs, workdir):
        """One request of the contract (one run, or one request to the served program):
        ``lists`` maps each list option (probe_list, ...) to its image paths; returns the
        answer's text (the answer file, else stdout) and what an empty one was, for
        `parse_matrix` (an empty answer file, or none written and nothing on stdout).
        ``n_pairs`` sets the timeout."""
        with tempfile.TemporaryDirectory(prefix="ssgallery-match-", dir=workdir) as tmp:
            request = write_lists(tmp, lists)
            request["out"] = os.path.join(tmp, "answer.txt")
            self.check_contract()
            stdout = b""
            unit = "images" if "quality_list" in lists else "pairs"
            served = self._serves()
            if served:
                from ssgallery.matchers.external.serve import shared_server

                self._server, started = shared_server(self._resolve(), self.program)
                self.n_starts_ += int(started)
                self._server.request(request, timeout=self._timeout(n_pairs),
                                     timeout_note=self._timeout_note(n_pairs, unit))
            else:
                stdout = self.run([a for key, value in request.items()
                                   for a in ("--" + key.replace("_", "-"), value)],
                                  n_pairs=n_pairs, unit=unit)
                self.n_starts_ += 1
            self.n_calls_ += 1
            empty = "no answer file written" + ("" if served else " and nothing on stdout")
            if os.path.lexists(request["out"]):
                stdout = read_regular(request["out"], f"answer file of matcher {self.program}",
                                      answer_limit(n_pairs), error=MatcherError)
                empty = "an empty answer file"
            return stdout.decode("utf-8", "replace"), empty

    def score_images(self, X, Y):
        """Raw program answers (n, m) for images X (n, H, W) and Y (m, H, W), one run
        (files: `write_images`)."""
        with tempfile.TemporaryDirectory(prefix="ssgallery-img-") as tmp:
            return self.score_paths(write_images(tmp, "p", X), write_images(tmp, "g", Y),
                                    workdir=tmp)

    def _answer_bounds(self):
        """The range every answer must lie in: the described one; a distance is never
        negative, whatever its description says (exp(-d / scale) would overflow)."""
        lo, hi = self.describe()["range"]
        if self.describe()["kind"] == "distance":
            lo = max(float(lo), 0.0)
        return lo, hi
