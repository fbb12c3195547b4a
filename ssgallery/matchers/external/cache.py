"""The external matcher's answer cache: a pair's raw answer keyed by the content of its
two images (and the command), in memory and, with a cache folder, in SQLite.

A key is a 16-hex salt from the command's argument list followed by the two images'
pixel digests (sorted when the program says it is symmetric), so a pair whose images
have not changed is never sent to the program twice.

The cache file is data like any other file: one it cannot use (no folder, not a
database, no permission to write) and an answer in it that the program cannot give (no
number, not finite, outside its described range) are refused in one line naming it,
never a traceback and never a score made of them.
"""

import contextlib
import hashlib
import os
import sqlite3

import numpy as np

from ssgallery.checks import is_finite_real, shown
from ssgallery.errors import InputError

DB_NAME = "external_matcher_cache.sqlite"
REMEDY = "remove it (the program is asked again) or set another cache_dir"


def digests(F):
    """A 32-hex SHA-256 prefix of each row of F (n, d) as float32, list of n str."""
    F = np.ascontiguousarray(F, dtype=np.float32)
    return [hashlib.sha256(row.tobytes()).hexdigest()[:32] for row in F]


def pair_keys(argv, X, Z, symmetric):
    """Cache keys (n lists of m str) of the pairs of rows of X (n, d) and Z (m, d)."""
    salt = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
    hx, hz = digests(X), digests(Z)
    return [[salt + ("".join(sorted((a, b))) if symmetric else a + b) for b in hz]
            for a in hx]


def db_path(cache_dir):
    """The cache file in ``cache_dir``."""
    return os.path.join(os.fspath(cache_dir), DB_NAME)


@contextlib.contextmanager
def used(path, what="this external matcher answer cache", remedy=REMEDY):
    """The block's OS and SQLite errors on the cache ``path`` as one line naming it."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot use {what} ({why}); {remedy}", path=path) from None


def open_db(cache_dir):
    """The persistent cache in ``cache_dir`` (created when missing), an sqlite3
    connection the caller closes; one line (`used`) when it cannot be used."""
    with used(cache_dir, "it as the external matcher's cache_dir", "set another cache_dir"):
        if os.path.lexists(cache_dir) and not os.path.isdir(cache_dir):  # a file, a device
            raise NotADirectoryError(20, "not a folder")
        os.makedirs(cache_dir, exist_ok=True)
    with used(db_path(cache_dir)):
        db = sqlite3.connect(db_path(cache_dir), timeout=60)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS s (k TEXT PRIMARY KEY, v REAL)")
        except sqlite3.Error:
            db.close()
            raise
    return db


def lookup(keys, shape, memory, db, bounds=(-np.inf, np.inf), path=None):
    """The cached answers of ``keys`` as a float array of ``shape``, NaN where neither
    ``memory`` (a dict) nor ``db`` (or None; its file ``path``) has the pair. An answer
    of ``db`` must be a finite number within ``bounds`` (the program's described range,
    as its fresh answers are), else the file is refused (`InputError`)."""
    D = np.full(shape, np.nan)
    for i in range(shape[0]):
        for j in range(shape[1]):
            v = memory.get(keys[i][j])
            if v is None and db is not None:
                with used(path):
                    row = db.execute("SELECT v FROM s WHERE k=?", (keys[i][j],)).fetchone()
                v = None if row is None else _checked(row[0], bounds, path)
            if v is not None:
                D[i, j] = v
    return D


def _checked(value, bounds, path):
    """A cached answer, which must be one the program could have given."""
    lo, hi = bounds
    if not (is_finite_real(value) and lo <= value <= hi):
        raise InputError(f"external matcher answer cache holds {shown(value)} for a pair, "
                         f"which the program cannot answer (a finite number in [{lo:g}, "
                         f"{hi:g}]): edited or damaged; {REMEDY}", path=path)
    return float(value)


def remember(fresh, memory, db):
    """Add ``fresh`` ({key: answer}) to ``memory`` and, when not None, to ``db``."""
    memory.update(fresh)
    if db is not None:
        with db:
            db.executemany("INSERT OR REPLACE INTO s VALUES (?, ?)", fresh.items())
