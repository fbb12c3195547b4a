"""``verify --claims``: many identity claims, (probe, claimed client) pairs, checked in
one process.

A claims file has one claim per line, the probe image's path then the claimed client
id, separated by white space (``probes/a.png s17``) or by a comma (CSV, for paths with
spaces: ``"my probes/a.png",s17``). The file is CSV when its name ends in ``.csv`` or
its first claim line has a comma, else white-space separated; blank lines and ``#``
comments are skipped, and a first line ``probe,claim`` (or ``probe claim``) is a
header. Relative probe paths are taken from the current folder, like ``verify
--list``.

Claims are scored grouped by client: each claimed client's model is read once (the
matcher once for all), and its probes are read and scored in batches of at most
`BATCH` images, so memory does not grow with the number of claims. Every claim gets
one `ClaimResult`, in the order of the file, with a status:

``accept`` / ``reject``
    scored against the client's threshold, as ``verify`` does;
``failure-to-acquire``
    the probe is not a usable face (never scored, never accepted);
``unknown-client``
    the gallery has no such client;
``error``
    the probe could not be read (missing, not an image, too large, another size with
    ``strict``).

A line that is not a claim (one field, three fields, an empty id) is a bad line: it is
reported with its line number and not scored. The exit status (`claims_exit_status`)
is ``verify``'s rule with one more case: 2 when some claim could not be checked (a
bad line, an unknown client or an unreadable probe), else 1 if any claim is rejected,
else 3 if any probe failed to acquire, else 0. A gallery that fails its checks stops
the whole run (status 2), as it stops ``verify``.

On the verify path: numpy, h5py, PIL and the matcher only.
"""

import csv
import os
from dataclasses import dataclass

import numpy as np

from ssgallery.app.verify import ACCEPT, FTA, REJECT, VerifyResult, exit_status
from ssgallery.errors import InputError, UnknownClientError, clipped, printable
from ssgallery.formats.integrity import reads_key_files
from ssgallery.formats.textfile import read_lines
from ssgallery.progress import as_progress

UNKNOWN_CLIENT, ERROR = "unknown-client", "error"
BATCH = 256  # probe images read and scored at once
_HEADERS = {("probe", "claim"), ("probe", "claimed_id"), ("probe", "client")}


@dataclass
class Claim:
    """One claim of a claims file: ``line`` is its line number (1-based)."""

    line: int
    probe: str
    claim: str


@dataclass
class BadLine:
    """A line of a claims file that is not a claim, and why."""

    line: int
    reason: str


@dataclass
class ClaimResult(VerifyResult):
    """`ssgallery.app.verify.VerifyResult` of one claim, with its ``line`` in the
    claims file; ``score`` and ``threshold`` are None when it was not scored."""

    line: int = None


def _fields(text, is_csv):
    if is_csv:
        return [f.strip() for f in next(csv.reader([text]))]
    return text.split()


def parse_claims(lines, is_csv=None):
    """Claims and bad lines of the text of a claims file (see the module).

    Parameters
    ----------
    lines : list of str
    is_csv : bool or None
        CSV or white space; None: CSV when the first claim line has a comma.

    Returns
    -------
    claims : list of Claim
    bad : list of BadLine
    """
    claims, bad, first = [], [], True
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if is_csv is None:
            is_csv = "," in text
        try:
            fields = _fields(text, is_csv)
        except csv.Error as exc:
            bad.append(BadLine(number, f"not a CSV line ({exc})"))
            continue
        if first and tuple(f.lower() for f in fields) in _HEADERS:
            first = False
            continue
        first = False
        if len(fields) != 2 or not all(fields):
            shape = "PROBE,CLAIM" if is_csv else "PROBE CLAIM"
            got = f"{len(fields)} field(s)" if len(fields) != 2 else "an empty field"
            bad.append(BadLine(number, f"expected a probe path and a claimed id "
                                       f"({shape}), got {got}"))
            continue
        claims.append(Claim(number, fields[0], fields[1]))
    return claims, bad


def read_claims(path):
    """`parse_claims` of a claims file (``"-"``: standard input).

    Raises
    ------
    InputError
        Missing, unreadable or too large file, or a file without any claim or bad line.
    """
    lines = read_lines(path, "claims file", stdin=True)
    claims, bad = parse_claims(lines, True if os.fspath(path).endswith(".csv") else None)
    if not claims and not bad:
        raise InputError("claims file has no claims",
                         path="standard input" if os.fspath(path) == "-" else path)
    return claims, bad


def _result(c, status, reason=None, score=None, threshold=None, quality=None):
    return ClaimResult(probe=c.probe, claim=c.claim, score=score, threshold=threshold,
                       accept=status == ACCEPT, status=status, quality=quality,
                       reason=reason, line=c.line)


def _score_batch(model, batch, strict, warn, resized):
    """ClaimResults of one client's claims (at most `BATCH`); the probes resized are
    added to ``resized`` (warned of once by `verify_claims`)."""
    from ssgallery.app.verify import failures_to_acquire, score_images
    from ssgallery.images.ingest import load_image_list

    h, w = (int(v) for v in model.header["image_shape"])
    failed = []
    images, sizes = load_image_list([c.probe for c in batch], size=(w, h), strict=strict,
                                    warn=warn, return_sizes=True, failed=failed,
                                    resized=resized)
    out = {i: _result(batch[i], ERROR, reason.removeprefix(f"{printable(batch[i].probe)}: "))
           for i, reason in failed}
    good = [i for i in range(len(batch)) if i not in out]
    if good:
        fta, quality, reasons = failures_to_acquire(model.matcher, images, sizes)
        scores = np.full(len(good), np.nan)
        if not fta.all():
            scores[~fta] = score_images(model, images[~fta])
        for k, i in enumerate(good):
            q = None if np.isnan(quality[k]) else float(quality[k])
            if fta[k]:
                out[i] = _result(batch[i], FTA, reasons[k], threshold=model.threshold,
                                 quality=q)
            else:
                s = float(scores[k])
                out[i] = _result(batch[i], ACCEPT if s >= model.threshold else REJECT,
                                 score=s, threshold=model.threshold, quality=q)
    return [out[i] for i in range(len(batch))]


class _Clients:
    """Each claimed client's model, read once; the matcher built once for all, and every
    model from the gallery it was built from (the digest of the first read: a gallery
    written at the path meanwhile is refused, `ssgallery.formats.integrity.unchanged`)."""

    def __init__(self, gallery_path, key_file, matcher_cmd, privacy_key_file=None,
                 warn=None):
        from ssgallery.app.verify import host_settings

        self.path = os.fspath(gallery_path)
        self.settings = host_settings(key_file, matcher_cmd, privacy_key_file, warn)
        self.matcher = self.digest = self.tmap = None
        self.hints = {}  # an unknown client id: the id it is close to (did you mean)

    def load(self, client_id):
        """The client's model, or None when the gallery has no such client (the id it
        is close to, if any, in `hints`)."""
        from ssgallery.formats.gallery import check_model, read_client

        try:
            model = read_client(self.path, client_id, matcher=self.matcher is None,
                                **self.settings)
        except UnknownClientError as exc:
            # only an unknown id: a damaged, foreign or unsigned gallery (FormatError)
            # or a failing matcher (MatcherError) stops the run
            self._same(exc.digest)  # unknown in the gallery the other claims read
            self.hints[client_id] = exc.hint
            return None
        self._same(model.header.get("digest"))
        if self.matcher is None:
            self.matcher = model.matcher
        else:
            model.matcher = self.matcher
            self._unprotect(model)
            check_model(model, self.matcher, self.path)
        return model

    def _unprotect(self, model):
        """Put back the prototypes of a protected gallery's client read without its
        matcher (as `read_client` does with it): the template map of the first read's
        matcher and the privacy key; plain templates are left as read."""
        from ssgallery.formats.protect import keyed_templates, unprotect_models

        if self.tmap is None:
            self.tmap = keyed_templates(self.matcher, model.header,
                                        self.settings.get("privacy_key"), self.path)[1]
        if self.tmap is not None:
            unprotect_models([model], self.tmap)

    def _same(self, digest):
        """Record the first read's digest; refuse a later read of another gallery."""
        from ssgallery.formats.integrity import unchanged

        unchanged(self.digest, digest, "gallery", self.path)
        self.digest = digest


@reads_key_files()
def verify_claims(gallery_path, claims, *, strict=False, warn=None, key_file=None,
                  matcher_cmd=None, progress=None, privacy_key_file=None):
    """Check identity claims against a gallery, grouped by client.

    Parameters
    ----------
    gallery_path : str or Path
    claims : list of Claim
    strict, warn, key_file, matcher_cmd, privacy_key_file
        As for `ssgallery.app.verify.verify`.
    progress : ssgallery.progress.Progress, optional
        One step per claim.

    Returns
    -------
    list of ClaimResult
        One per claim, in the order of ``claims``.

    Raises
    ------
    FormatError
        Missing, foreign, corrupt, edited or unsigned (with a key) gallery.
    """
    from ssgallery.images.ingest import default_warn, resize_warning

    warn = warn or default_warn
    progress = as_progress(progress)
    groups, resized, shape = {}, [], None
    for i, c in enumerate(claims):
        groups.setdefault(c.claim, []).append(i)
    results = [None] * len(claims)
    clients = _Clients(gallery_path, key_file, matcher_cmd, privacy_key_file, warn)
    with progress.phase("checking claims", len(claims), "claims"):
        for client_id, rows in groups.items():
            model = clients.load(client_id)
            shape = model.header["image_shape"] if model is not None else shape
            for start in range(0, len(rows), BATCH):
                chunk = rows[start:start + BATCH]
                batch = [claims[i] for i in chunk]
                done = (_score_batch(model, batch, strict, warn, resized)
                        if model is not None else
                        [_result(c, UNKNOWN_CLIENT, _no_client(client_id, clients.hints))
                         for c in batch])
                for i, r in zip(chunk, done):
                    results[i] = r
                progress.advance(len(chunk))
    if resized:  # every model is of one gallery: one image shape
        h, w = (int(v) for v in shape)
        warn(resize_warning(resized, (w, h)))
    return results


def _no_client(client_id, hints):
    """The reason of an UNKNOWN-CLIENT claim: ``the gallery has no client 'X'`` and, when
    an id of the gallery is close to it, ``: did you mean 'Y'?``; a long X clipped
    (`ssgallery.errors.clipped`)."""
    hint = hints.get(client_id)
    return f"the gallery has no client '{clipped(client_id)}'" + (f": {hint}" if hint else "")


def claims_exit_status(results, bad_lines=()):
    """2 if a claim could not be checked (bad line, unknown client, unreadable probe),
    else ``verify``'s rule (`ssgallery.app.verify.exit_status`): 1 some rejected, 3
    some failed to acquire, 0 all accepted."""
    if bad_lines or any(r.status in (UNKNOWN_CLIENT, ERROR) for r in results):
        return 2
    return exit_status(results)


__all__ = [
    "BATCH",
    "ERROR",
    "UNKNOWN_CLIENT",
    "BadLine",
    "Claim",
    "ClaimResult",
    "claims_exit_status",
    "parse_claims",
    "read_claims",
    "verify_claims",
]
