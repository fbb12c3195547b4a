"""Encryption at rest of stores and galleries: AES-256-GCM in chunks, decrypted in memory
only (issue 23).

A store holds face images and a gallery holds templates (prototypes that can look like
the client): both are personal data. With the host's **privacy key** (`load_privacy_key`:
``privacy_key_file`` or ``$SSGALLERY_PRIVACY_KEY_FILE``, a regular file of 16 to 4096
bytes, never in the file) the writer encrypts the whole sealed HDF5 image in memory
(`encrypt`) and only the ciphertext reaches the disk; readers decrypt into memory
(`decrypt`, or `EncryptedFile` for readers of a few parts of a big file), never to
a temporary file.

Layout (container 1)::

    bytes 0 .. HEADER-1      text lines, then zeros:
        SSGALLERY-ENCRYPTED 1
        format <the file's format tag, e.g. ssgallery-gallery>
        cipher aes-256-gcm
        salt <64 hex>        HKDF salt, random per file
        nonce <16 hex>       nonce prefix, random per file
        chunk <bytes>        plaintext bytes per chunk
        length <bytes>       plaintext bytes in all
        check <32 hex>       key check value
    then, per chunk i: AES-256-GCM(chunk i) followed by its 16-byte tag

The file key is HKDF-SHA256 (RFC 5869) of the key file's bytes with the file's salt and
the format tag as context, so every file has its own key and a key file of any length
gives a 256-bit key. Chunk i is sealed with nonce = prefix || i (96 bits) and associated
data = the whole header || i, so a chunk moved to another place, taken from another
file, or a header edited (format, length, salt) fails authentication, and a file cut
short fails the size check before any chunk is read. The key check value (the first
16 bytes of HMAC-SHA256(file key, "ssgallery key check")) tells a wrong key apart from
a damaged file.

The plaintext is the sealed HDF5 file (`ssgallery.formats.seal`); an encrypted file is
read through the GCM tags, which are keyed and stronger than the seal, so its inner seal
is not checked again. ``cryptography`` (the ``crypto`` extra) is imported only when a
file is encrypted or decrypted.
"""

import hashlib
import hmac
import os
import re

from ssgallery.errors import FormatError, InputError, SsgalleryError, option
from ssgallery.formats.integrity import PRIVACY_KEY_ENV, FileKey, KeyNeeded, checked_key
from ssgallery.formats.readonly import ReadOnlyFile, with_header
from ssgallery.safeio import file_kind, open_regular

MAGIC = b"SSGALLERY-ENCRYPTED 1\n"
HEADER = 512
CHUNK = 1 << 16
TAG = 16
CIPHER = "aes-256-gcm"
EXTRA_HINT = "encryption needs the crypto extra: pip install 'ssgallery[crypto]'"
_LAYOUT = re.compile(
    rb"SSGALLERY-ENCRYPTED 1\nformat ([a-z0-9-]{1,64})\ncipher aes-256-gcm\n"
    rb"salt ([0-9a-f]{64})\nnonce ([0-9a-f]{16})\nchunk ([0-9]{1,9})\n"
    rb"length ([0-9]{1,19})\ncheck ([0-9a-f]{32})\n")


def load_privacy_key(key_file=None):
    """The host's privacy key: the bytes of ``key_file`` or ``$SSGALLERY_PRIVACY_KEY_FILE``
    (None: no key). Same file rules as the signing key
    (`ssgallery.formats.integrity.load_key`)."""
    from ssgallery.formats.integrity import load_key

    return load_key(key_file, env=PRIVACY_KEY_ENV, what="privacy key file")


def load_keys(key_file=None, privacy_key_file=None):
    """The host's signing key and privacy key, ``(key, privacy_key)``
    (`ssgallery.formats.integrity.load_key`, `load_privacy_key`; None for a key not
    given), refused when they are one secret (`distinct_keys`)."""
    from ssgallery.formats.integrity import load_key

    key, privacy_key = load_key(key_file), load_privacy_key(privacy_key_file)
    distinct_keys(key, privacy_key)
    return key, privacy_key


_ONE_SECRET = "(one secret would both sign and encrypt): give each key its own"


def distinct_keys(key, privacy_key):
    """Refuse one secret as both the host's signing ``key`` and its ``privacy_key`` (the
    one check, for key files and for keys given as bytes; docs/privacy.md, "a key of its
    own"): `InputError`, one line naming both.

    Two key files (`ssgallery.formats.integrity.FileKey`) are refused when they are one
    file (the same resolved path, or the same device and inode: a hard link, a symbolic
    link) or hold the same bytes; two keys given as bytes when the bytes are equal."""
    if key is None or privacy_key is None:
        return
    files = isinstance(key, FileKey) and isinstance(privacy_key, FileKey) and \
        hasattr(key, "file") and hasattr(privacy_key, "file")
    if files:
        (path, real, ident, named), (other, other_real, other_ident, other_named) = \
            key.file, privacy_key.file
        if real == other_real or ident == other_ident:
            raise InputError(f"{named} {path} and {other_named} {other} are the same file "
                             f"{_ONE_SECRET} file")
    if hmac.compare_digest(bytes(checked_key(key)), bytes(checked_key(privacy_key, "privacy"))):
        if files:
            raise InputError(f"{named} {path} and {other_named} {other} are two files that "
                             f"hold the same key bytes {_ONE_SECRET} secret")
        raise InputError(f"{option('key')} and {option('privacy_key')} are the same bytes "
                         f"{_ONE_SECRET} secret")


def hkdf(key, salt, info, size=32):
    """HKDF-SHA256 (RFC 5869): ``size`` bytes of key material from ``key``."""
    prk = hmac.new(salt, key, hashlib.sha256).digest()
    out, block = b"", b""
    for counter in range(1, -(-size // 32) + 1):
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
    return out[:size]


def _file_key(key, salt, fmt):
    """The file key from the privacy ``key`` (`ssgallery.formats.integrity.checked_key`:
    bytes of 16 to 4096, as a key file holds), the file's salt and format."""
    key = checked_key(key, "privacy")
    return hkdf(key, salt, b"ssgallery-encryption-1 " + fmt.encode("ascii"))


def _check_value(file_key):
    return hmac.new(file_key, b"ssgallery key check", hashlib.sha256).digest()[:16]


def _aead(file_key):
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise SsgalleryError(EXTRA_HINT) from None
    return AESGCM(file_key)


def _nonce(prefix, i):
    return prefix + i.to_bytes(4, "big")


def _aad(header, i):
    return header + i.to_bytes(8, "big")


def encrypted_pieces(data, fmt, key, chunk=CHUNK):
    """The encrypted file holding ``data`` (a bytes-like plaintext) of format ``fmt``
    under the privacy key ``key`` (bytes), as an iterator of byte strings (the header,
    then each sealed chunk): the writer never holds a second whole copy."""
    salt, prefix = os.urandom(32), os.urandom(8)
    file_key = _file_key(key, salt, fmt)
    data = memoryview(data)
    text = (MAGIC + f"format {fmt}\ncipher {CIPHER}\nsalt {salt.hex()}\nnonce {prefix.hex()}\n"
            f"chunk {chunk}\nlength {len(data)}\ncheck {_check_value(file_key).hex()}\n"
            .encode("ascii"))
    header = text.ljust(HEADER, b"\0")
    aead = _aead(file_key)
    yield header
    for i, start in enumerate(range(0, len(data), chunk)):
        yield aead.encrypt(_nonce(prefix, i), data[start:start + chunk], _aad(header, i))


def encrypt(data, fmt, key, chunk=CHUNK):
    """`encrypted_pieces` as one bytes object."""
    return b"".join(encrypted_pieces(data, fmt, key, chunk))


def is_encrypted(head):
    """Whether the first bytes of a file (``head``) start an encrypted container."""
    return bytes(head[:len(MAGIC)]) == MAGIC


def file_format(path):
    """The format tag in the header of an encrypted file (not authenticated: for telling
    kinds of files apart only), or None when ``path`` is a regular file that is not one,
    or is missing or unreadable.

    ``path`` is opened as every input is (`ssgallery.safeio.open_regular`: never waiting
    on a FIFO) and its first `HEADER` bytes only are read.

    Raises
    ------
    FormatError
        ``path`` is a folder, a FIFO, a device or a socket (never opened).
    """
    try:
        fd, st = open_regular(path)
    except OSError:
        return None
    if fd is None:
        raise FormatError(f"is {file_kind(st.st_mode)}, expected a regular file", path=path)
    try:
        return header_format(os.pread(fd, HEADER, 0))
    except OSError:
        return None
    finally:
        os.close(fd)


def header_format(head):
    """`file_format` of a file whose first `HEADER` bytes are ``head``."""
    match = _LAYOUT.match(head)
    return match.group(1).decode("ascii") if match else None


class _Container:
    """A parsed header, checked against the key and the file's size."""

    def __init__(self, handle, path, kind, fmt, key):
        header = handle.read(HEADER)
        match = _LAYOUT.match(header)
        if match is None or len(header) < HEADER or any(header[match.end():]):
            raise FormatError(f"corrupt {kind}: damaged encryption header (the first "
                              f"{HEADER} bytes)", path=path)
        found, salt, prefix, chunk, length, check = match.groups()
        if fmt is not None and found.decode() != fmt:
            from ssgallery.formats.kinds import other_kind

            raise FormatError(other_kind(kind, fmt, found.decode(), encrypted=True),
                              path=path)
        if key is None:
            raise KeyNeeded(f"{kind} is encrypted; reading it needs the privacy key",
                            path=path)
        self.chunk, self.length = int(chunk), int(length)
        if not 1 <= self.chunk <= 1 << 26:
            raise FormatError(f"corrupt {kind}: damaged encryption header (chunk size)",
                              path=path)
        self.count = -(-self.length // self.chunk)
        size = os.fstat(handle.fileno()).st_size
        if size != HEADER + self.length + self.count * TAG:
            raise FormatError(f"corrupt {kind}: {size} bytes, the encryption header says "
                              f"{HEADER + self.length + self.count * TAG} (truncated or "
                              "appended to)", path=path)
        file_key = _file_key(key, bytes.fromhex(salt.decode()), found.decode())
        if not hmac.compare_digest(_check_value(file_key), bytes.fromhex(check.decode())):
            raise FormatError(f"{kind} is encrypted with another privacy key (or its "
                              "header was edited)", path=path)
        self.header, self.prefix = header, bytes.fromhex(prefix.decode())
        self.aead = _aead(file_key)

    def plain(self, handle, i, path, kind):
        """Chunk ``i`` decrypted and authenticated."""
        start = HEADER + i * (self.chunk + TAG)
        size = min(self.chunk, self.length - i * self.chunk) + TAG
        data = os.pread(handle.fileno(), size, start)
        from cryptography.exceptions import InvalidTag

        try:
            return self.aead.decrypt(_nonce(self.prefix, i), data, _aad(self.header, i))
        except InvalidTag:
            raise FormatError(f"corrupt {kind}: its bytes {start}-{start + len(data) - 1} "
                              "fail authentication (AES-GCM); edited, damaged or moved",
                              path=path) from None


def decrypt(path, kind, fmt, key, handle=None):
    """The whole plaintext of an encrypted file, every chunk authenticated before this
    returns, as a read-only file object (an `EncryptedFile` holding every chunk: one
    copy of the plaintext in memory; for ``h5py.File`` or ``np.load``). ``handle``: the
    file already open (see `EncryptedFile`). Raises `FormatError` (one line)."""
    reader = EncryptedFile(path, kind, fmt, key, handle=handle)
    try:
        for i in range(reader._box.count):
            reader._chunk(i)
    except OSError as exc:
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None
    finally:
        reader._handle.close()  # every chunk is in memory now
    return reader


def decrypt_open(handle, path, kind, fmt, key):
    """The whole plaintext (bytes), every chunk authenticated, of an encrypted file
    already open as ``handle`` (an unbuffered binary file, e.g. opened without following
    a symbolic link); ``path`` names it in messages. Closes ``handle``. Raises
    `FormatError` (one line)."""
    try:
        box = _Container(handle, path, kind, fmt, key)
        return b"".join(box.plain(handle, i, path, kind) for i in range(box.count))
    except OSError as exc:
        raise FormatError(f"cannot read the {kind} ({exc.strerror})", path=path) from None
    finally:
        handle.close()


class EncryptedFile(ReadOnlyFile):
    """An encrypted file, read-only, for ``h5py.File(EncryptedFile(...), "r")``: the
    plaintext, each chunk decrypted and authenticated the first time any of its bytes is
    read (kept in memory), so a reader of one client of 10,000 decrypts a few chunks.

    Raises
    ------
    FormatError
        At construction: missing key, wrong key, damaged header, truncated or appended
        to; from `readinto`: a chunk that fails authentication.

    Notes
    -----
    ``handle``: the file already open (an unbuffered binary file, e.g. opened once and
    checked to be a regular file), read instead of opening ``path``; closed with this
    object.
    """

    def __init__(self, path, kind, fmt=None, key=None, handle=None):
        handle, self._box = with_header(path, kind,
                                        lambda h: _Container(h, path, kind, fmt, key), handle)
        super().__init__(path, kind, handle, self._box.length)
        self._plain = {}

    def _chunk(self, i):
        if i not in self._plain:
            self._plain[i] = self._box.plain(self._handle, i, self.path, self.kind)
        return self._plain[i]

    def readinto(self, buffer):
        view = memoryview(buffer).cast("B")
        n, done = self._remaining(len(view)), 0
        self._within_limit(n)
        while done < n:
            i, offset = divmod(self._pos + done, self._box.chunk)
            piece = self._chunk(i)[offset:offset + n - done]
            view[done:done + len(piece)] = piece
            done += len(piece)
        self._pos += done
        return done
