"""The seal: SHA-256 digests of a store's or gallery's bytes, kept in the HDF5 user block
and checked over the raw bytes BEFORE HDF5 parses them.

Why: HDF5 trusts its own metadata. A file with a few flipped bytes can make the HDF5
library loop forever (ignoring SIGTERM), crash, or read garbage, before any digest
kept inside the file could be read. The seal is outside HDF5's structures: the first
`USERBLOCK` bytes of the file, which HDF5 skips (its superblock then starts at
byte `USERBLOCK`). Layout of the user block (seal 2)::

    SSGALLERY-SEAL 2\\n
    length <number of bytes after the user block>\\n
    chunk <bytes per chunk>\\n
    \\0 ... \\0                (up to byte TABLE)
    <16-byte digest of chunk 0><16-byte digest of chunk 1>...   (at byte TABLE)
    \\0 ... \\0                (up to byte USERBLOCK; must be zeros)

The bytes after the user block are cut in chunks of ``chunk`` bytes (the last one may
be shorter); each chunk's digest is the first 16 bytes of its SHA-256. The chunk size
grows with the file so that the table fits the user block. Two ways to check:

* `check_seal` hashes every chunk (O(file size)): for readers of the whole file.
* `SealedFile` is a read-only file object for ``h5py.File``: it hashes a chunk
  the first time HDF5 asks for any of its bytes, so HDF5 never gets an unchecked byte,
  and a reader that needs one client of 10,000 hashes a few chunks, not the file.

Files sealed with seal 1 (one SHA-256 of all the bytes in a 512-byte user block) are
still read: the whole file is one chunk. The seal protects against accidents (bit rot,
truncation, a partial copy, a random edit); against a deliberate edit that re-seals
the file, the digests and the optional HMAC inside the file are the defence.

Standard library only (on the ``verify`` path).
"""

import hashlib
import os
import re

from ssgallery.errors import FormatError
from ssgallery.formats.readonly import ReadOnlyFile, with_header

USERBLOCK = 1 << 15
TABLE = 256
DIGEST_BYTES = 16
MAX_CHUNKS = (USERBLOCK - TABLE) // DIGEST_BYTES
MIN_CHUNK = 1 << 16
MAGIC = b"SSGALLERY-SEAL 2\n"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_LAYOUT = re.compile(rb"SSGALLERY-SEAL 2\nlength ([0-9]{1,19})\nchunk ([0-9]{1,19})\n")
_LAYOUT_1 = re.compile(rb"SSGALLERY-SEAL 1\nsha256 ([0-9a-f]{64})\nlength ([0-9]{1,19})\n")
_BLOCK_1 = 512


class SealMismatch(FormatError):
    """Bytes ``start`` to ``end`` of a sealed file do not match their digest (bit rot or
    an edit); ``what`` names the part of the file being read (e.g. a client)."""

    def __init__(self, kind, start, end, path, what=None):
        self.where, self.what = (kind, start, end), what
        part = f"{what}: " if what else ""
        super().__init__(f"corrupt {kind}: {part}its bytes {start}-{end} do not match its "
                         "seal (SHA-256); bit rot or an edit", path=path)

    def naming(self, what):
        """The same error, naming ``what``."""
        return SealMismatch(*self.where, self.path, what)

    def __reduce__(self):
        """Pickled with its own arguments: a worker process's error (joblib's loky sends
        it back pickled) is this one line again, not a pool that failed to read it."""
        return SealMismatch, (*self.where, self.path, self.what)


def chunk_size(length):
    """Bytes per chunk for ``length`` bytes after the user block: a multiple of
    `MIN_CHUNK` small enough for the table to fit the user block."""
    chunks_of_min = -(-length // MIN_CHUNK)
    return MIN_CHUNK * max(1, -(-chunks_of_min // MAX_CHUNKS))


def _chunk_digest(data, size):
    return hashlib.sha256(data).digest()[:size]


def seal_file(path):
    """Write the seal of ``path`` (an HDF5 file created with ``userblock_size=USERBLOCK``)
    into its user block, replacing any seal there (tests re-seal edited files)."""
    with open(path, "r+b") as handle:
        data = bytearray(handle.read())
        seal_buffer(data, path)
        handle.seek(0)
        handle.write(data[:USERBLOCK])


def seal_buffer(data, name="buffer"):
    """Write the seal into the user block of ``data`` (a bytearray holding an HDF5 file
    created with ``userblock_size=USERBLOCK``), in place: the writers seal the file in
    memory before it reaches the disk (`ssgallery.formats.hdf5.hdf5_image`)."""
    head = bytes(data[:USERBLOCK + len(HDF5_SIGNATURE)])
    if head[USERBLOCK:] != HDF5_SIGNATURE or not (
            head.startswith(MAGIC) or not any(head[:USERBLOCK])):
        raise ValueError(f"{name}: not an HDF5 file with a {USERBLOCK}-byte user block "
                         f"(create it with h5py.File(..., userblock_size={USERBLOCK}))")
    length = len(data) - USERBLOCK
    chunk = chunk_size(length)
    view = memoryview(data)
    table = b"".join(_chunk_digest(view[start:start + chunk], DIGEST_BYTES)
                     for start in range(USERBLOCK, len(data), chunk))
    view.release()
    block = (MAGIC + f"length {length}\nchunk {chunk}\n".encode()).ljust(TABLE, b"\0")
    data[:USERBLOCK] = (block + table).ljust(USERBLOCK, b"\0")


class _Seal:
    """A parsed seal: ``block`` bytes of user block, ``length`` bytes after it, cut in
    chunks of ``chunk`` bytes with ``digests[i]`` (``size`` bytes each)."""

    def __init__(self, handle, path, kind):
        block = handle.read(USERBLOCK)
        match = _LAYOUT.match(block)
        if match is not None:
            self.block, self.size = USERBLOCK, DIGEST_BYTES
            self.length, self.chunk = int(match.group(1)), int(match.group(2))
            count = -(-self.length // self.chunk) if self.chunk else -1
            end = TABLE + count * DIGEST_BYTES
            if len(block) < USERBLOCK or self.chunk != chunk_size(self.length) \
                    or any(block[match.end():TABLE]) or any(block[end:]):
                raise FormatError(f"corrupt {kind}: damaged seal (the first {USERBLOCK} "
                                  "bytes)", path=path)
            table = block[TABLE:end]
            self.digests = [table[i:i + DIGEST_BYTES] for i in range(0, len(table),
                                                                      DIGEST_BYTES)]
        else:
            match = _LAYOUT_1.match(block[:_BLOCK_1])
            if match is None or any(block[match.end():_BLOCK_1]) or len(block) < _BLOCK_1:
                raise FormatError(_unsealed(block, kind), path=path)
            self.block, self.size, self.length = _BLOCK_1, 32, int(match.group(2))
            self.chunk = max(self.length, 1)
            self.digests = [bytes.fromhex(match.group(1).decode())]
        found = os.fstat(handle.fileno()).st_size - self.block
        if found != self.length:
            raise FormatError(f"corrupt {kind}: {found} bytes after the seal, the seal "
                              f"says {self.length} (truncated or appended to)", path=path)
        self.head = block[:self.block]

    def check(self, handle, i, path, kind):
        """Raise `SealMismatch` unless chunk ``i`` matches its digest."""
        start = self.block + i * self.chunk
        data = os.pread(handle.fileno(), self.chunk, start)
        if _chunk_digest(data, self.size) != self.digests[i]:
            raise SealMismatch(kind, start, start + len(data) - 1, path)


def check_seal(path, kind="ssgallery file"):
    """Raise `FormatError` (one line naming the file) unless ``path`` carries a
    valid seal: the right magic and layout, the recorded length and the digest of every
    chunk. Reads the file once; never parses HDF5."""
    with SealedFile(path, kind) as sealed:
        sealed.check_all()


def head_of(fd):
    """The seal's bytes of the open file descriptor ``fd``, as `SealedFile.head` gives
    them (seal 2: the user block; seal 1: its first 512 bytes)."""
    block = os.pread(fd, USERBLOCK, 0)
    return block if block.startswith(MAGIC) else block[:_BLOCK_1]


class SealedFile(ReadOnlyFile):
    """A sealed file, read-only, for ``h5py.File(SealedFile(path), "r")``: every chunk is
    checked against the seal the first time any of its bytes is read.

    Raises
    ------
    FormatError
        At construction: unsealed, damaged seal, truncated or appended to.
    SealMismatch
        From `readinto`: a chunk that does not match its digest.

    Notes
    -----
    ``handle``: the file already open (an unbuffered binary file, e.g. opened once
    and checked to be a regular file), read instead of opening ``path`` again; closed
    with this object.

    ``checked``: a dict a reader that opens one file again and again keeps (a store's
    rows read in slices): the chunks found good in the file it opened before are not
    hashed again when this open is that very file, unchanged since (the same device,
    inode, size, modification and status-change times: a writer's ``os.replace`` makes
    a new inode, an edit in place a new status-change time). Without it every open
    hashes the chunks it reads, and a seal-1 file (one chunk) whole.
    """

    def __init__(self, path, kind="ssgallery file", checked=None, handle=None):
        handle, self._seal = with_header(path, kind, lambda h: _Seal(h, path, kind), handle)
        super().__init__(path, kind, handle, self._seal.block + self._seal.length)
        self._checked = set()
        if checked is not None:
            st = os.fstat(handle.fileno())
            same = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                    self._seal.head)
            self._checked = checked.get(same, self._checked)
            checked.clear()  # only the file of this open
            checked[same] = self._checked

    def check_all(self):
        """Check every chunk now (`check_seal`: a reader of the whole file); later reads
        hash nothing again. Raises `SealMismatch`, or `FormatError` when the file cannot
        be read."""
        try:
            for i in range(len(self._seal.digests)):
                if i not in self._checked:
                    self._seal.check(self._handle, i, self.path, self.kind)
                    self._checked.add(i)
        except OSError as exc:
            raise FormatError(f"cannot read the {self.kind} ({exc.strerror})",
                              path=self.path) from None

    @property
    def head(self):
        """The seal's bytes (the user block, or seal 1's first 512 bytes): what every
        chunk read is checked against."""
        return self._seal.head

    def readinto(self, buffer):
        seal, n = self._seal, self._remaining(len(buffer))
        if n <= 0:
            return 0
        self._within_limit(n)
        first = max(self._pos - seal.block, 0) // seal.chunk
        last = max(self._pos + n - 1 - seal.block, -1) // seal.chunk
        for i in range(first, last + 1):
            if i >= 0 and i not in self._checked:
                seal.check(self._handle, i, self.path, self.kind)
                self._checked.add(i)
        data = os.pread(self._handle.fileno(), n, self._pos)
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)


def _unsealed(block, kind):
    if block.startswith(b"SSGALLERY"):
        return f"corrupt {kind}: damaged seal (the first bytes)"
    if block.startswith(HDF5_SIGNATURE):
        return (f"not an {kind} of this version (an HDF5 file without ssgallery's seal: "
                f"written by another program or an older ssgallery)")
    return f"not an {kind} (not a readable HDF5 file; corrupt or foreign)"
