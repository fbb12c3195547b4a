"""The seal: a SHA-256 of a store's or gallery's bytes, kept in the HDF5 user block and
checked over the raw bytes BEFORE HDF5 parses anything.

Why: HDF5 trusts its own metadata. A file with a few flipped bytes can make the HDF5
library loop forever (ignoring SIGTERM), crash, or read garbage, before any digest
kept inside the file could be read. The seal is outside HDF5's structures: the first
`USERBLOCK` bytes of the file, which HDF5 skips (its superblock then starts at
byte 512). Layout of the user block (ASCII, then zeros)::

    SSGALLERY-SEAL 1\\n
    sha256 <64 hex digits of bytes [512:]>\\n
    length <number of bytes after the user block>\\n
    \\0 ... \\0   (up to byte 512; must be zeros)

Writers create their HDF5 file with ``userblock_size=USERBLOCK`` and the writer
(`ssgallery.formats.atomic.atomic_path` for HDF5 kinds) seals it before the
rename; readers call `check_seal` before opening the file with h5py. A file
without a valid seal is never parsed. The seal protects against accidents (bit rot,
truncation, a partial copy, a random edit); against a deliberate edit that re-seals
the file, the digests and the optional HMAC inside the file are the defence.

Standard library only (on the ``verify`` path): hashing is streamed, O(file size).
"""

import hashlib
import os
import re

from ssgallery.errors import FormatError

USERBLOCK = 512
MAGIC = b"SSGALLERY-SEAL 1\n"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_CHUNK = 1 << 20
_LAYOUT = re.compile(rb"SSGALLERY-SEAL 1\nsha256 ([0-9a-f]{64})\nlength ([0-9]{1,19})\n")


def _digest(handle):
    h = hashlib.sha256()
    for chunk in iter(lambda: handle.read(_CHUNK), b""):
        h.update(chunk)
    return h.hexdigest()


def seal_file(path):
    """Write the seal of ``path`` (an HDF5 file created with ``userblock_size=512``)
    into its user block, replacing any seal there (tests re-seal edited files)."""
    with open(path, "r+b") as handle:
        head = handle.read(USERBLOCK + len(HDF5_SIGNATURE))
        if head[USERBLOCK:] != HDF5_SIGNATURE or not (
                head.startswith(MAGIC) or not any(head[:USERBLOCK])):
            raise ValueError(f"{path}: not an HDF5 file with a {USERBLOCK}-byte user block "
                             f"(create it with h5py.File(..., userblock_size=512))")
        handle.seek(USERBLOCK)
        digest = _digest(handle)
        length = handle.tell() - USERBLOCK
        block = MAGIC + f"sha256 {digest}\nlength {length}\n".encode()
        handle.seek(0)
        handle.write(block.ljust(USERBLOCK, b"\0"))


def check_seal(path, kind="ssgallery file"):
    """Raise `FormatError` (one line naming the file) unless ``path`` carries a
    valid seal: the right magic, zeros after it, the recorded length and SHA-256 of
    every byte after the user block. Reads the file once; never parses HDF5."""
    try:
        with open(path, "rb") as handle:
            block = handle.read(USERBLOCK)
            match = _LAYOUT.match(block)
            if match is None or any(block[match.end():]) or len(block) < USERBLOCK:
                raise FormatError(_unsealed(block, kind), path=path)
            handle.seek(0, os.SEEK_END)
            length = handle.tell() - USERBLOCK
            if length != int(match.group(2)):
                raise FormatError(f"corrupt {kind}: {length} bytes after the seal, the seal "
                                  f"says {int(match.group(2))} (truncated or appended to)",
                                  path=path)
            handle.seek(USERBLOCK)
            if _digest(handle) != match.group(1).decode():
                raise FormatError(f"corrupt {kind}: its bytes do not match its seal (SHA-256); "
                                  f"bit rot or an edit", path=path)
    except OSError as exc:
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None


def _unsealed(block, kind):
    if block.startswith(MAGIC[:10]):
        return f"corrupt {kind}: damaged seal (the first {USERBLOCK} bytes)"
    if block.startswith(HDF5_SIGNATURE):
        return (f"not an {kind} of this version (an HDF5 file without ssgallery's seal: "
                f"written by another program or an older ssgallery)")
    return f"not an {kind} (not a readable HDF5 file; corrupt or foreign)"
