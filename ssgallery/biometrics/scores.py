"""Claims' scores (:class:`Scores`) and their 4-column score files.

Score files use the 4-column text format of the biometrics community (bob, CSU)::

    claimed_id real_id probe_label score

one claim per line, whitespace-separated; a claim is genuine when ``claimed_id ==
real_id``. Whitespace and ``%`` inside a field are percent-encoded (``%20``, ``%25``).
ssgallery adds ``#`` comment lines on top (method, m, repetition; per client the
matches per claim and training time), which :func:`read_scores` uses when present and
which other tools can ignore; files without them are read as well (method = the file
name, repetition from a ``.rN`` suffix). Every file is written atomically.
"""

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from ssgallery.errors import InputError
from ssgallery.formats.atomic import has_prefix, write_text_atomic
from ssgallery.formats.textfile import read_lines

MAGIC = "ssgallery-scores"


@dataclass
class Scores:
    """Claims' scores of one method in one repetition (one 4-column score file).

    Attributes
    ----------
    method : str
        Method name, e.g. ``"ssvm"``.
    m : int or None
        Prototypes per client (None for the full SVM or foreign scores).
    repetition : int
    claimed, real, probe : ndarray of str, shape (n,)
        Claimed client, true identity of the probe, probe label (path or index).
    score : ndarray of float, shape (n,)
    clients : dict str -> dict
        Per client ``{"matches": float, "fit_seconds": float}`` when known.
    search : Scores or None
        The same method's full search (every probe against every client), when the
        protocol ran one (identification).
    """

    method: str
    m: object
    repetition: int
    claimed: np.ndarray
    real: np.ndarray
    probe: np.ndarray
    score: np.ndarray
    clients: dict = field(default_factory=dict)
    search: object = None

    @property
    def label(self):
        """``"svm"``, ``"ssvm m=2"``: how the method is shown in tables and plots."""
        return self.method if self.m is None else f"{self.method} m={self.m}"


def _enc(value):
    s = str(value)
    return (s.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")
            .replace("\n", "%0A").replace("\r", "%0D") or "%00")


def _dec(field):
    return "" if field == "%00" else unquote(field)


def _num(value):
    return "none" if value is None else repr(float(value))


def scores_filename(table):
    """``svm.r0.txt``, ``ssvm-m2.r3.txt``."""
    stem = table.method if table.m is None else f"{table.method}-m{table.m}"
    return f"{re.sub(r'[^A-Za-z0-9_.+-]', '_', stem)}.r{table.repetition}.txt"


def format_scores(table):
    """The text of a score file for one :class:`~ssgallery.biometrics.protocol.Scores`."""
    out = io.StringIO()
    m = "none" if table.m is None else int(table.m)
    out.write(f"# {MAGIC} 1 method={_enc(table.method)} m={m} repetition={table.repetition}\n")
    out.write("# columns: claimed_id real_id probe_label score\n")
    for c, info in table.clients.items():
        extra = "".join(f" {k}={_num(v)}" for k, v in sorted(info.items()))
        out.write(f"# client={_enc(c)}{extra}\n")
    for row in zip(table.claimed, table.real, table.probe, table.score):
        out.write(f"{_enc(row[0])} {_enc(row[1])} {_enc(row[2])} {float(row[3])!r}\n")
    return out.getvalue()


def write_scores(path, table, force=False):
    """Write one score file atomically; an existing file is replaced only when it is a
    score file written by ssgallery, or with ``force``."""
    write_text_atomic(path, format_scores(table), has_prefix(f"# {MAGIC} ".encode()), force)


def _meta(text):
    out = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = _dec(v)
    return out


def _float_or_none(v):
    return None if v in (None, "none") else float(v)


def read_scores(path):
    """Read a 4-column score file.

    Returns
    -------
    Scores
        ``method`` and ``m`` from the ssgallery header if present, else the file name;
        ``clients`` holds whatever per-client information the header gave.

    Raises
    ------
    InputError
        Missing or unreadable file, a line without 4 fields, a non-numeric or infinite
        score, or no scores at all. ``nan`` is a failure to acquire.
    """
    path = os.fspath(path)
    lines = read_lines(path, "score file")
    stem = Path(path).name
    stem = stem[: -len(Path(stem).suffix)] if Path(stem).suffix in (".txt", ".scores") else stem
    match = re.fullmatch(r"(.*)\.r(\d+)", stem)
    method, m, rep = (match.group(1), None, int(match.group(2))) if match else (stem, None, 0)
    clients, rows = {}, []
    for lineno, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            body = text[1:].strip()
            if body.startswith(MAGIC):
                meta = _meta(body)
                method = meta.get("method", method)
                m = None if meta.get("m", "none") == "none" else int(meta["m"])
                rep = int(meta.get("repetition", rep))
            elif body.startswith("client="):
                meta = _meta(body)
                c = meta.pop("client")
                clients[c] = {k: _float_or_none(v) for k, v in meta.items()}
            continue
        fields = text.split()
        if len(fields) != 4:
            raise InputError(f"line {lineno}: expected 4 columns (claimed_id real_id "
                             f"probe_label score), got {len(fields)}", path=path)
        try:
            score = float(fields[3])
        except ValueError:
            raise InputError(f"line {lineno}: score '{fields[3]}' is not a number",
                             path=path) from None
        if np.isinf(score):  # nan: a failure to acquire (never scored)
            raise InputError(f"line {lineno}: score is infinite", path=path)
        rows.append((_dec(fields[0]), _dec(fields[1]), _dec(fields[2]), score))
    if not rows:
        raise InputError("score file has no scores", path=path)
    claimed, real, probe, score = zip(*rows)
    return Scores(method, m, rep, np.array(claimed), np.array(real), np.array(probe),
                  np.array(score, dtype=float), clients)


def read_score_files(paths):
    """Read several score files; files of one method get distinct repetitions."""
    tables, seen = [], set()
    for p in paths:
        t = read_scores(p)
        while (t.method, t.m, t.repetition) in seen:
            t.repetition += 1
        seen.add((t.method, t.m, t.repetition))
        tables.append(t)
    return tables


__all__ = ["MAGIC", "Scores", "format_scores", "read_score_files", "read_scores",
           "scores_filename", "write_scores"]
