"""Per-client results of a ``compress`` run, committed as they finish (resumable runs).

The gallery is one HDF5 file, which cannot be modified in place safely under SIGKILL, so
each finished client goes to a sidecar folder ``<gallery>.parts/<client digest>.npz``,
written atomically. The gallery itself is written atomically at the end from the
parts, and the folder is then removed. At every moment the gallery file is either the
previous one or the new complete one.

A part records the key of what produced it (store fingerprint, training options,
client id: `run_key`); a resumed run reuses only the parts whose key matches and redoes
the rest.

Parts are input like any file (issue 20): the folder must be a real folder owned by
this user and writable by nobody else, and is used through a descriptor opened without
following a symbolic link; a part is a regular file (opened as every input is,
`ssgallery.safeio.open_regular` in that folder: never through a link, never a FIFO) of at
most `MAX_PART_BYTES`, an uncompressed ``.npz`` read with ``allow_pickle=False``;
with the host's signing key it carries an HMAC-SHA256 that must verify (with the
privacy key it is also encrypted and authenticated, `ssgallery.formats.encryption`).
Whatever it holds is then checked by ``compress`` like a gallery's client. A part that
fails any of this is reported and its client trained again (`PartsFolder.read` raises
`BadPart`), never signed into a gallery.
"""

import contextlib
import hashlib
import hmac
import json
import os
import shutil

from ssgallery.app.client_result import (  # noqa: F401  (public here too)
    MAX_PART_BYTES,
    BadPart,
    ClientResult,
    decode_result,
    encode_result,
)
from ssgallery.errors import InputError, SsgalleryError, option
from ssgallery.safeio import file_kind, open_regular

PART_MAGIC = b"ssgallery-part 2\n"
UNSIGNED = b"-" * 64


def run_key(client, store_fingerprint, options):
    """SHA-256 hex naming what trains a client: store content, options
    (`ssgallery.app.options.CompressOptions`, its ``digest_dict``), client id."""
    payload = json.dumps({"client": client, "store": store_fingerprint,
                          "options": options.digest_dict()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def options_digest(options):
    """SHA-256 hex of the training options (`ssgallery.app.options.CompressOptions`,
    its ``digest_dict``), stored in each client's provenance."""
    return hashlib.sha256(json.dumps(options.digest_dict(), sort_keys=True).encode()).hexdigest()


class PartsFolder:
    """``<gallery>.parts/``: one part per finished client, written atomically, signed with
    the host's signing ``key`` when there is one and encrypted with its ``privacy_key``
    (a part holds a client's plain template). See the module docstring for what a
    reader checks."""

    FORMAT = "ssgallery-part"

    def __init__(self, gallery_path, privacy_key=None, key=None):
        from ssgallery.formats.encryption import distinct_keys

        distinct_keys(key, privacy_key)  # a part is signed and encrypted: two secrets
        self.path = os.fspath(gallery_path) + ".parts"
        self.privacy_key = privacy_key
        self.key = key

    def _name(self, client):
        return hashlib.sha256(client.encode()).hexdigest()[:32] + ".npz"

    def _shown(self, client):
        return os.path.join(self.path, self._name(client))

    def _folder(self, create=False):
        """A descriptor of the folder (None when absent and not ``create``), opened
        without following a symbolic link and checked: a folder, owned by this user,
        writable by nobody else."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            if not create:
                return None
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.path, 0o700)
            fd = self._folder()
            if fd is None:  # removed again at once: never write beside the cwd instead
                raise SsgalleryError("the parts folder was removed as it was made",
                                     path=self.path)
            return fd
        except OSError:  # ELOOP: a symbolic link; ENOTDIR: a file
            raise SsgalleryError("the parts folder is a symbolic link or not a folder; "
                                 "compress never follows it: remove it", path=self.path) \
                from None
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            os.close(fd)
            raise SsgalleryError("the parts folder is not owned by this user or is "
                                 "writable by others: remove it", path=self.path)
        return fd

    def check(self):
        """Refuse an unusable folder now, before any training (`_folder`)."""
        fd = self._folder()
        if fd is not None:
            os.close(fd)

    def _tag(self, payload):
        if self.key is None:
            return UNSIGNED
        return hmac.new(self.key, b"ssgallery-part\0" + payload, hashlib.sha256) \
            .hexdigest().encode()

    def write(self, result, key):
        """Commit one client's result (atomic: the part is whole or absent)."""
        from ssgallery.formats.atomic import write_in_folder

        payload = encode_result(result, key)
        data = PART_MAGIC + self._tag(payload) + b"\n" + payload
        if self.privacy_key is not None:
            from ssgallery.formats.encryption import encrypt

            data = encrypt(data, self.FORMAT, self.privacy_key)
        fd = self._folder(create=True)
        try:
            write_in_folder(fd, self._name(result.client), data, self._shown(result.client))
        finally:
            os.close(fd)

    def _bytes(self, client):
        """The part's plain bytes (None when there is no part), read without following a
        link, a regular file of at most `MAX_PART_BYTES`; decrypted and authenticated
        with the privacy key (a plain part is refused then: nothing vouches for it)."""
        from ssgallery.formats.encryption import decrypt_open, is_encrypted

        folder = self._folder()
        if folder is None:
            return None
        shown = self._shown(client)
        try:
            fd, st = open_regular(self._name(client), dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BadPart(f"cannot open it ({exc.strerror}; a symbolic link is never "
                          "followed)", path=shown) from None
        finally:
            os.close(folder)
        if fd is None:
            raise BadPart(f"is {file_kind(st.st_mode)}, expected a regular file (never "
                          "followed or opened)", path=shown)
        handle = os.fdopen(fd, "rb", buffering=0)
        if st.st_size > MAX_PART_BYTES + (1 << 20):
            handle.close()
            raise BadPart(f"{st.st_size} bytes, more than a part holds", path=shown)
        head = os.pread(fd, 64, 0)
        if is_encrypted(head):
            return decrypt_open(handle, shown, "compress part", self.FORMAT,
                                self.privacy_key)
        with handle:
            if self.privacy_key is not None:
                raise BadPart("a plain part in a run with a privacy key", path=shown)
            return handle.read(MAX_PART_BYTES + (1 << 20))

    def check_resumable(self):
        """Raise `InputError` when this run has no privacy key and the folder holds an
        encrypted part: resuming would redo its client and write the template plain.
        Entries are opened as `_bytes` opens them (no link followed, no FIFO waited on)."""
        from ssgallery.formats.encryption import PRIVACY_KEY_ENV

        folder = None if self.privacy_key is not None else self._folder()
        if folder is None:
            return
        try:
            found = any(_encrypted_entry(folder, name) for name in sorted(os.listdir(folder))
                        if name.endswith(".npz"))
        finally:
            os.close(folder)
        if found:
            raise InputError(f"holds parts encrypted with a privacy key; resume with it "
                             f"({option('privacy_key_file')} or ${PRIVACY_KEY_ENV}), or "
                             f"start again without {option('resume')}", path=self.path)

    def read(self, client, key):
        """The committed result of ``client`` if its key matches, else None (no part, or
        a part of another run). Raises `BadPart` for a part that cannot be trusted."""
        found = self.read_any(client)
        if found is None or found[1] != key:
            return None
        return found[0]

    def read_any(self, client):
        """``(result, key)`` of ``client``'s committed part, whatever run made it, or None
        (no part, or a part of another client). Raises `BadPart` as `read` does."""
        try:
            data = self._bytes(client)
        except SsgalleryError as exc:
            raise BadPart(str(exc)) from None
        if data is None:
            return None
        shown = self._shown(client)
        if not data.startswith(PART_MAGIC) or len(data) < len(PART_MAGIC) + 65:
            raise BadPart("not a part of this ssgallery version", path=shown)
        tag, payload = data[len(PART_MAGIC):len(PART_MAGIC) + 64], data[len(PART_MAGIC) + 65:]
        if self.key is not None and not hmac.compare_digest(tag, self._tag(payload)):
            raise BadPart("not signed with this host's key (written without it, by another "
                          "key, or forged)", path=shown)
        result, found = decode_result(payload, shown)
        if result.client != client:
            return None
        return result, found

    def count(self):
        """Number of committed parts."""
        with contextlib.suppress(OSError):
            return sum(1 for n in os.listdir(self.path) if n.endswith(".npz"))
        return 0

    def nothing_to_resume(self):
        """The warning of a resumed run that finds no committed part here (None when it
        finds some): every client is trained. An interrupted run's parts sit beside its
        own gallery: the parts folders of other galleries beside this one are named,
        with the gallery that resumes them."""
        if self.count():
            return None
        here, others = os.path.dirname(self.path), []
        with contextlib.suppress(OSError):
            others = sorted(e.name for e in os.scandir(here or ".")
                            if e.name.endswith(".parts") and e.is_dir(follow_symlinks=False)
                            and e.name != os.path.basename(self.path))
        text = f"{self.path}: no committed parts to resume: every client is trained"
        for name in others[:3]:
            folder = os.path.join(here, name)
            text += (f"; {folder} holds another gallery's: to resume it, give "
                     f"{option('gallery')} {folder[:-len('.parts')]}")
        return text

    def discarded(self, keys):
        """The warning of a run without ``resume`` that finds committed parts, which it
        removes and trains again (None when there are none): said before any training,
        so that the run can be stopped and resumed instead; how many of them ``resume``
        would reuse (``keys``: this run's `run_key` per client)."""
        n = self.count()
        if not n:
            return None
        reused = 0
        for client, key in keys.items():
            with contextlib.suppress(BadPart):
                reused += self.read(client, key) is not None
        how = (f"{option('resume')} reuses them" if reused == n else f"{option('resume')} "
               f"reuses {reused} of them, of this run's clients, store and options" if reused
               else f"of other clients, another store or other options: {option('resume')} "
               "would not reuse them either")
        return (f"{self.path}: {n} committed part(s) of an interrupted run are discarded: "
                f"this run trains every client ({how})")

    def remove(self):
        """Remove the folder (after the gallery was written, or before a fresh run); a
        link or a folder that is not ours is refused (`_folder`), never followed."""
        fd = self._folder()
        if fd is None:
            return
        os.close(fd)
        shutil.rmtree(self.path, ignore_errors=True)  # rmtree never follows links


def _encrypted_entry(folder, name):
    """Whether the regular file ``name`` in the open ``folder`` starts an encrypted
    container (a link, a FIFO or an unreadable entry: False)."""
    from ssgallery.formats.encryption import is_encrypted

    try:
        fd, _ = open_regular(name, dir_fd=folder)
    except OSError:
        return False
    if fd is None:
        return False
    try:
        return is_encrypted(os.pread(fd, 64, 0))
    finally:
        os.close(fd)


