"""The lines of a score file read as rows ``(claimed, real, probe, score)``, each line
checked as it is read (`ssgallery.biometrics.scores.read_scores` makes them a `Scores`
with the side-car's metadata): the 4- and 5-column text formats (`read_text_rows`, with
the ``#`` lines of older ssgallery files) and bob's CSV format (`read_csv_rows`). Fields
are percent-decoded as ssgallery encodes them; a line of spaces is skipped, a claim on
two lines, a line of another width, a score that is no number or infinite is one line
naming the file and the line."""

import os
import re
from urllib.parse import unquote

import numpy as np

from ssgallery.biometrics.score_meta import MAGIC, float_or_none
from ssgallery.checks import shown
from ssgallery.errors import InputError
from ssgallery.formats.textfile import read_lines
from ssgallery.progress import as_progress

STEP_LINES = 10_000  # lines per progress step of a score file being read


def _dec(field):
    return "" if field == "%00" else unquote(field)


def _meta(text):
    out = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = _dec(v)
    return out


def _score(text, lineno, path):
    """A score field: a float, NaN for ``nan``/empty (failure to acquire)."""
    if text.strip() == "":
        return np.nan
    try:
        score = float(text)
    except ValueError:
        raise InputError(f"line {lineno}: score {shown(text)} is not a number",
                         path=path) from None
    if np.isinf(score):  # nan: a failure to acquire (never scored); inf: an error
        raise InputError(f"line {lineno}: score is infinite", path=path)
    return score


_FIELD_SEP = re.compile(r"[ \t]+")  # fields: ASCII spaces and tabs, nothing else


def _legacy_header(body, meta, clients, lineno, path):
    """``#`` lines of ssgallery < 0.2 score files: method/m/repetition, per-client info.
    Any other line starting with ``#`` is refused: a row of a client id starting with
    ``#`` (written ``%23`` by ssgallery) must not vanish as a comment."""
    if body.startswith(MAGIC):
        got = _meta(body)
        meta.update({k: got[k] for k in ("method", "m", "repetition") if k in got})
    elif body.startswith("client="):
        got = _meta(body)
        c = got.pop("client")
        try:
            clients[c] = {k: float_or_none(v) for k, v in got.items()}
        except ValueError:
            raise InputError(f"line {lineno}: bad score metadata: client {shown(c)}: not a "
                             "number", path=path) from None
    elif not body.startswith("columns:"):
        raise InputError(f"line {lineno} starts with '#': score files have no comments (a "
                         "field starting with '#' is written %23)", path=path)


def _once(seen, key, lineno, path):
    """Refuse a claim (``key``: claimed id, model, probe label, real id) already on an
    earlier line: it would count twice in every rate, or replace the first in a search's
    matrix. A probe is its label and real id, as in a search's matrix
    (`ssgallery.biometrics.identification.score_matrix`): two
    clients' probes may share a label (a file name such as '1.pgm')."""
    first = seen.setdefault(key, lineno)
    if first != lineno:
        raise InputError(f"line {lineno}: the claim of {shown(key[0])} by probe "
                         f"{shown(key[2])} is already on line {first}: each claim is "
                         "scored once", path=path)


def _blank(text):
    """True for a line of nothing but spaces and tabs: both formats skip it (bob's CSV
    reader, pandas' ``read_csv``, does too)."""
    return not text.strip(" \t\r")


def _reading(path, lines, progress):
    """The phase of reading the score file ``path`` of ``lines`` lines (`STEP_LINES`
    per step: a file of millions of claims says how far it is)."""
    name = os.path.basename(os.fspath(path))
    return as_progress(progress).phase(f"reading {name}", len(lines), "lines")


def read_text_rows(path, progress=None):
    """The claims of a 4- or 5-column text score file.

    Parameters
    ----------
    path : str
        The score file (read bounded: `ssgallery.formats.textfile.read_lines`).
    progress : ssgallery.progress.Progress, optional
        A phase of one step per line read.

    Returns
    -------
    rows : list of (str, str, str, float)
        (claimed id, real id, probe label, score), in file order; NaN for a failure to
        acquire.
    meta : dict
        method, m, repetition from an older ssgallery file's ``#`` line (else empty).
    clients : dict
        Per-client values from its ``# client=`` lines (else empty).

    Raises
    ------
    InputError
        A line of another width than the first, a claim already read, a score that is
        no number or infinite, a ``#`` line that is no older ssgallery metadata.
    """
    rows, meta, clients, ncol, seen = [], {}, {}, None, {}
    lines = read_lines(path, "score file")
    with _reading(path, lines, progress) as shown:
        for lineno, line in enumerate(lines, 1):
            if lineno % STEP_LINES == 0:
                shown.advance(STEP_LINES)
            text = line.strip(" \t\r")
            if _blank(text):
                continue
            if text.startswith("#"):
                _legacy_header(text[1:].strip(), meta, clients, lineno, path)
                continue
            fields = _FIELD_SEP.split(text)
            if ncol is None and len(fields) in (4, 5):
                ncol = len(fields)
            if len(fields) != ncol:
                raise InputError(f"line {lineno}: expected {ncol or 4} columns (claimed_id "
                                 f"{'model_label ' if ncol == 5 else ''}real_id probe_label "
                                 f"score), got {len(fields)}", path=path)
            real, probe = (fields[1], fields[2]) if ncol == 4 else (fields[2], fields[3])
            _once(seen, (_dec(fields[0]), fields[1] if ncol == 5 else "", _dec(probe),
                         _dec(real)), lineno, path)
            rows.append((_dec(fields[0]), _dec(real), _dec(probe),
                         _score(fields[-1], lineno, path)))
        shown.advance(len(lines) % STEP_LINES)
    return rows, meta, clients


CSV_REQUIRED = ("bio_ref_subject_id", "probe_subject_id", "score")


def read_csv_rows(path, progress=None):
    """The claims of a score file in bob's CSV format
    (``bob.bio.base.pipelines.CSVScoreWriter``).

    Parameters
    ----------
    path : str
        The score file: a header line with at least `CSV_REQUIRED`; ``probe_key`` (or
        ``probe_reference_id``) names the probe when present, else its row number.
    progress : ssgallery.progress.Progress, optional
        A phase of one step per line read.

    Returns
    -------
    rows : list of (str, str, str, float)
        As `read_text_rows` returns them.
    meta, clients : dict
        Empty: a CSV file carries no metadata.

    Raises
    ------
    InputError
        A header without the required columns, a row of another width than the header,
        a claim already read, a score that is no number or infinite.
    """
    import csv

    lines = read_lines(path, "score file")
    reader = csv.DictReader(lines)
    missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"not a bob CSV score file: no column {', '.join(missing)} in the "
                         f"header line", path=path)
    rows, seen, width = [], {}, len(reader.fieldnames)
    with _reading(path, lines, progress) as shown:
        _csv_rows(reader, path, rows, seen, width, shown)
    return rows, {}, {}


def _csv_rows(reader, path, rows, seen, width, shown):
    """`read_csv_rows`'s rows, read into ``rows``; ``shown``: one step per line."""
    done = 1  # the header line
    for row in reader:
        lineno = reader.line_num  # csv skips empty lines: a count would name another
        if lineno - done >= STEP_LINES:
            shown.advance(lineno - done)
            done = lineno
        if list(row.values())[1:] == [None] * (width - 1) and _blank(row[reader.fieldnames[0]]):
            continue  # a line of spaces: one field of spaces, as the text format skips it
        got = sum(v is not None for k, v in row.items() if k is not None)
        if got != width or None in row:  # DictReader: None fills a short row, keys extras
            raise InputError(f"line {lineno}: expected {width} fields (as the header line), "
                             f"got {got + len(row.get(None) or ())}", path=path)
        probe = row.get("probe_key") or row.get("probe_reference_id") or str(len(rows) + 1)
        _once(seen, (row["bio_ref_subject_id"], row.get("bio_ref_reference_id") or "", probe,
                     row["probe_subject_id"]), lineno, path)
        rows.append((row["bio_ref_subject_id"], row["probe_subject_id"], probe,
                     _score(row["score"] or "", lineno, path)))
    shown.advance(reader.line_num - done)
