"""Claims' scores (`Scores`) and their score files.

ssgallery writes the 4-column text format of the biometrics community (bob, CSU)::

    claimed_id real_id probe_label score

one claim per line, fields separated by one space, nothing else in the file (no
header, no comment), so that bob.bio.base's ``split_four_column`` / ``bob bio metrics``
and pyeer's score reader (last field of each line) read it unchanged. A claim is
genuine when ``claimed_id == real_id``. ``%``, ``#``, every white space and line
break (``\\v``, U+00A0, U+202F, U+2028, ...) and every control character inside a
field are percent-encoded as UTF-8 bytes (``%25``, ``%23``, ``%20``, ``%E2%80%AF``), so
that any client id or probe name reads back as written. A score that could not be computed is ``nan``
(a failure to acquire). What the 4 columns cannot hold (method, m, repetition; per
client the matches per claim and training time) goes in a side-car JSON file
``<file>.json`` beside it.

`read_scores` reads

- 4-column text (ssgallery's or anyone's; ``#`` lines of older ssgallery files are
  read as their metadata),
- 5-column text (bob: ``claimed_id model_label real_id probe_label score``),
- bob's CSV score format (a file whose name has a ``.csv`` suffix, a header line with
  at least ``bio_ref_subject_id``, ``probe_subject_id`` and ``score``; ``probe_key``
  names the probe when present),

with ``nan`` or missing scores kept as NaN: failures to acquire, which the evaluation
counts as a rejected genuine or a rejected impostor attempt and reports as FTA rates
(as bob does). Method, m and repetition come from the side-car when there is one, else
from the file name (``<method>.r<N>.txt``). Every file is written atomically.
"""

import io
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ssgallery import jsontext
from ssgallery.biometrics.score_lines import (  # noqa: F401  (CSV_REQUIRED: public here too)
    CSV_REQUIRED,
    read_csv_rows,
    read_text_rows,
)
from ssgallery.biometrics.score_meta import (
    MAGIC,
    SIDECAR_VERSION,
    float_or_none,
    read_sidecar,
    sidecar_version,
)
from ssgallery.errors import InputError
from ssgallery.formats.atomic import check_writable, has_prefix, lock_path, write_text_atomic
from ssgallery.formats.writable import Existing, refuse_newer
from ssgallery.safeio import MAX_TEXT_BYTES, file_name


def method_label(method, m):
    """``"svm"``, ``"ssvm m=2"``: how a method at ``m`` (None: the full SVM or foreign
    scores) is shown in tables and plots."""
    return method if m is None else f"{method} m={m}"


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
    operating_point : dict or None
        A gallery's 1:N operating point (``threshold`` on the centred score, ``scale``:
        `ssgallery.app.open_set`) for a search of that gallery (``roc --gallery``).
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
    operating_point: dict = None

    @property
    def label(self):
        """``"svm"``, ``"ssvm m=2"``: how the method is shown (`method_label`)."""
        return method_label(self.method, self.m)


def _needs_escape(ch):
    """Whether a field's character is percent-encoded: ``%``, ``#`` (a line starting
    with it would read as a comment), white space and line breaks of any kind (a reader
    splits there), control and format characters."""
    return ch in "%#" or ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zl",
                                                                       "Zp", "Zs")


def _enc(value):
    s = str(value)
    return "".join("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
                   if _needs_escape(ch) else ch for ch in s) or "%00"


def _num(value):
    if value is None:
        return "none"
    value = float(value)
    return "nan" if np.isnan(value) else repr(value)


def scores_filename(table):
    """``svm.r0.txt``, ``ssvm-m2.r3.txt``: the score file of a `Scores`."""
    return score_file_name(table.method, table.m, table.repetition)


def score_file_name(method, m, repetition):
    """The score file of ``method`` at ``m`` (None: the full SVM) in ``repetition``."""
    stem = method if m is None else f"{method}-m{m}"
    return f"{re.sub(r'[^A-Za-z0-9_.+-]', '_', stem)}.r{repetition}.txt"


def format_scores(table):
    """The text of a 4-column score file for one `Scores` (no header)."""
    out = io.StringIO()
    for row in zip(table.claimed, table.real, table.probe, table.score):
        out.write(f"{_enc(row[0])} {_enc(row[1])} {_enc(row[2])} {_num(row[3])}\n")
    return out.getvalue()


def sidecar_path(path):
    """``scores.txt`` -> ``scores.txt.json``: where a score file's metadata lives."""
    return f"{os.fspath(path)}.json"


def format_sidecar(table):
    """The side-car JSON of a score file: method, m, repetition and per-client info."""
    meta = {"format": MAGIC, "format_version": SIDECAR_VERSION,
            "columns": ["claimed_id", "real_id", "probe_label", "score"],
            "method": table.method, "m": None if table.m is None else int(table.m),
            "repetition": int(table.repetition),
            "clients": {str(c): {k: float_or_none(v) for k, v in sorted(info.items())}
                        for c, info in table.clients.items()}}
    return jsontext.dumps(meta, indent=1, sort_keys=True) + "\n"


def _is_sidecar(existing):
    """Whether the open file ``existing`` (`ssgallery.formats.writable.Existing`) is a
    score file side-car of ours: a regular file of at most
    `ssgallery.safeio.MAX_TEXT_BYTES` that `read_scores` would read
    (`ssgallery.biometrics.score_meta.sidecar_version`). One of another format or a
    malformed one is not replaced unless forced; one of a newer ``format_version`` never,
    even forced (`ssgallery.formats.writable.refuse_newer`, the rule of stores and
    galleries: `FormatError`), nor the score file it describes (`_is_score_file`)."""
    data = existing.read(MAX_TEXT_BYTES)
    if data is None:
        return False
    try:
        _, version = sidecar_version(data, MAGIC, existing.path)
    except InputError:
        return False
    refuse_newer(MAGIC, version, existing.path)
    return True


def _is_score_file(existing):
    """Whether the open file ``existing`` is a score file written by ssgallery: its
    side-car says so (or, for files of ssgallery < 0.2, its first line)."""
    with Existing(sidecar_path(existing.path)) as side:
        if _is_sidecar(side):
            return True
    return has_prefix(f"# {MAGIC} ".encode())(existing)


def check_scores_writable(path, force=False):
    """Raise `ssgallery.errors.SsgalleryError` unless `write_scores` may write ``path``
    and its side-car (`ssgallery.formats.atomic.check_writable`), before anything is
    written."""
    check_writable(path, _is_score_file, force)
    check_writable(sidecar_path(path), _is_sidecar, force)


def write_scores(path, table, force=False):
    """Write one 4-column score file and its side-car ``<path>.json``, atomically; an
    existing file is replaced only when it is a score file (side-car) written by
    ssgallery, or with ``force``. Each is written under its output lock (a hidden
    ``.<name>.lock`` beside it, which no shell glob of the folder names): another writer
    waits, then finds a score file."""
    write_text_atomic(path, format_scores(table), _is_score_file, force, lock=True)
    write_text_atomic(sidecar_path(path), format_sidecar(table), _is_sidecar, force,
                      lock=True)


def _read_sidecar(path):
    side = sidecar_path(path)
    return read_sidecar(side, MAGIC) if os.path.lexists(side) else None


def read_scores(path, progress=None):
    """Read a score file (4-column, 5-column or bob CSV) and its side-car, if any;
    ``progress``: a phase of one step per line.

    Returns
    -------
    Scores
        ``score`` is NaN for failures to acquire. ``method``, ``m`` and ``repetition``
        from the side-car (or legacy ``#`` header) if present, else the file name;
        ``clients`` holds whatever per-client information the metadata gave.

    Raises
    ------
    InputError
        Missing or unreadable file, a line with another number of columns than the
        first, a non-numeric score, a CSV without the required columns, bad side-car
        JSON, or no scores at all.
    """
    path = os.fspath(path)
    is_csv = ".csv" in Path(path).suffixes
    rows, meta, clients = read_csv_rows(path, progress) if is_csv \
        else read_text_rows(path, progress)
    name = Path(path).name
    for suffix in (".txt", ".scores", ".csv"):
        name = name.removesuffix(suffix)
    match = re.fullmatch(r"(.*)\.r(\d+)", name)
    method, m, rep = (match.group(1), None, int(match.group(2))) if match else (name, None, 0)
    side, where = _read_sidecar(path), path
    if side is not None:
        meta, clients, where = side, side.get("clients"), sidecar_path(path)
    from ssgallery.biometrics.score_meta import checked_meta

    method, m, rep, clients = checked_meta(meta, clients, method, m, rep, where)
    if not rows:
        raise InputError("score file has no scores", path=path)
    claimed, real, probe, score = ([row[k] for row in rows] for k in range(4))  # not
    # zip(*rows): 1.6 s for 1.25 million claims, against 0.4
    return Scores(method, m, rep, np.array(claimed), np.array(real), np.array(probe),
                  np.array(score, dtype=float), clients)


def _digest(path):
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _named_repetition(path, table):
    """``(method, m, repetition)`` as the side-car of the score file ``path`` names them,
    None without a side-car (a copied or foreign file names no repetition of its own)."""
    if not os.path.isfile(sidecar_path(path)):
        return None
    return (table.method, table.m, table.repetition)


def read_score_files(paths, progress=None):
    """Read several score files; files of one method get distinct repetitions;
    ``progress``: a phase per file, one step per line.

    Two files with identical scores are two repetitions when their side-cars name two
    repetitions of one method (a run whose repetitions drew the same split, on a small
    data set: ``roc`` writes them, ``roc --scores`` reads them back). The side-car of a
    file given too, and the output lock of one (`ssgallery.formats.atomic.lock_path`,
    hidden: in a listing of the whole folder, never in a shell glob), are skipped.

    Raises
    ------
    InputError
        The same file (or two files with identical content that side-cars do not name
        as distinct repetitions) given twice: it would silently count as two
        repetitions.
    """
    tables, seen, files = [], set(), {}
    given = {os.fspath(p) for p in paths}
    locks = {lock_path(file_name(q)) for p in given for q in (p, sidecar_path(p))}
    for p in paths:
        if os.fspath(p).endswith(".json") and os.fspath(p)[:-5] in given:
            continue  # the side-car of a score file given too (a shell glob)
        if os.path.realpath(file_name(p)) in locks:
            continue  # the lock of one given too (`ls -A`, `find -type f`: it is hidden)
        key = os.path.realpath(file_name(p))
        if any(key == okey for okey, _, _ in files.values()):
            raise InputError("score file given twice: each file is one repetition", path=p)
        t = read_scores(p, progress)  # bounded and checked before its bytes are hashed
        digest = _digest(p) if os.path.isfile(p) else key
        named = _named_repetition(p, t)
        for other, (_, odigest, onamed) in files.items():
            if digest == odigest and (named is None or onamed is None or named == onamed):
                raise InputError(f"score file has the same content as {other}: each file "
                                 "is one repetition", path=p)
        files[os.fspath(p)] = (key, digest, named)
        while (t.method, t.m, t.repetition) in seen:
            t.repetition += 1
        seen.add((t.method, t.m, t.repetition))
        tables.append(t)
    return tables


__all__ = ["MAGIC", "Scores", "check_scores_writable", "format_scores", "format_sidecar",
           "method_label", "read_score_files",
           "read_scores", "scores_filename", "sidecar_path", "write_scores"]
