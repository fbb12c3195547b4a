"""The external matcher's answer cache: a pair's raw answer keyed by the content of its
two images (and the command), in memory and, with a cache folder, in SQLite.

A key is a 16-hex salt from the command's argument list followed by the two images'
pixel digests (sorted when the program says it is symmetric), so a pair whose images
have not changed is never sent to the program twice.
"""

import hashlib
import os
import sqlite3

import numpy as np

DB_NAME = "external_matcher_cache.sqlite"


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


def open_db(cache_dir):
    """The persistent cache in ``cache_dir`` (created when missing), an sqlite3
    connection the caller closes."""
    os.makedirs(cache_dir, exist_ok=True)
    db = sqlite3.connect(os.path.join(cache_dir, DB_NAME), timeout=60)
    db.execute("CREATE TABLE IF NOT EXISTS s (k TEXT PRIMARY KEY, v REAL)")
    return db


def lookup(keys, shape, memory, db):
    """The cached answers of ``keys`` as a float array of ``shape``, NaN where neither
    ``memory`` (a dict) nor ``db`` (or None) has the pair."""
    D = np.full(shape, np.nan)
    for i in range(shape[0]):
        for j in range(shape[1]):
            v = memory.get(keys[i][j])
            if v is None and db is not None:
                row = db.execute("SELECT v FROM s WHERE k=?", (keys[i][j],)).fetchone()
                v = None if row is None else row[0]
            if v is not None:
                D[i, j] = v
    return D


def remember(fresh, memory, db):
    """Add ``fresh`` ({key: answer}) to ``memory`` and, when not None, to ``db``."""
    memory.update(fresh)
    if db is not None:
        with db:
            db.executemany("INSERT OR REPLACE INTO s VALUES (?, ?)", fresh.items())
