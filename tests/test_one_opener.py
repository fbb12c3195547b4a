"""One opener and one namer for the files ssgallery reads by name
(`ssgallery.safeio.open_regular`, `ssgallery.safeio.file_kind`): the stores' and
galleries' reader, the same-kind check of an output, the key files and the bounded
input reader opened files four ways and named special files two ways. Real FIFOs,
sockets and devices; nothing is mocked."""

import contextlib
import os
import socket
import stat
import threading

import pytest

from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.encryption import encrypt, file_format, load_privacy_key
from ssgallery.formats.integrity import load_key
from ssgallery.formats.writable import check_writable
from ssgallery.safeio import file_kind, open_regular, read_regular


@pytest.fixture
def unix_socket(tmp_path):
    """A bound UNIX socket in ``tmp_path`` (``os.open`` of it fails with ENXIO)."""
    path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    yield path
    sock.close()


def test_a_fifo_is_named_the_same_read_or_replaced(tmp_path):
    """The bounded reader said 'a FIFO (named pipe)' and the same-kind check of an
    output 'a FIFO' (twin namers): one namer now, for both refusals."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SsgalleryError) as read:
        read_regular(fifo, "probe list", 100)
    with pytest.raises(SsgalleryError) as written:
        check_writable(fifo, "ssgallery-gallery", force=True)
    assert str(read.value) == f"{fifo}: probe list is a FIFO (named pipe), expected a " \
        "regular file"
    assert str(written.value) == f"{fifo}: is a FIFO (named pipe); refusing to replace it"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_key_file_that_is_a_socket_is_not_a_regular_file(unix_socket):
    """A key file was opened without a look first: a socket named as the key file was
    'cannot read the key file (No such device or address)' (the open's ENXIO), where a
    FIFO or a device was 'is not a regular file'. The one opener looks first: every
    special file is refused alike, without being opened, and named as every input is
    (`ssgallery.safeio.file_kind`: 'is a socket, expected a regular file'; keys.py
    worded it its own way, 'is not a regular file', until 2026-11-28)."""
    for load, what in ((load_key, "key file"), (load_privacy_key, "privacy key file")):
        with pytest.raises(SsgalleryError) as refused:
            load(str(unix_socket))
        assert str(refused.value) == f"{unix_socket}: {what} is a socket, expected a " \
            "regular file"  # named as every input is (safeio.file_kind)


def test_open_regular_opens_only_a_regular_file(tmp_path, unix_socket):
    """``(fd, fstat)`` for a regular file (read-only, non-blocking, close-on-exec);
    ``(None, stat)`` for anything else, nothing left open; a missing file raises."""
    fifo, regular = tmp_path / "fifo", tmp_path / "f"
    os.mkfifo(fifo)
    regular.write_bytes(b"abc")
    fd, st = open_regular(regular)
    try:
        assert os.read(fd, 10) == b"abc" and stat.S_ISREG(st.st_mode)
        assert not os.get_inheritable(fd)
        assert os.get_blocking(fd) is False
    finally:
        os.close(fd)
    for path, kind in ((fifo, "a FIFO (named pipe)"), (unix_socket, "a socket"),
                       ("/dev/null", "a character device"), (tmp_path, "a folder")):
        fd, st = open_regular(path)
        assert fd is None and file_kind(st.st_mode) == kind
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")


def _within(seconds, call):
    """``call()``'s result or exception, or ``TimeoutError`` when it has not returned
    after ``seconds`` (it is left running in a daemon thread)."""
    done = {}

    def run():
        try:
            done["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            done["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"still running after {seconds} s")
    if "error" in done:
        raise done["error"]
    return done["value"]


def test_file_format_of_a_fifo_is_a_clear_error_not_a_hang(tmp_path, unix_socket):
    """encryption.file_format (public, documented) opened its path with a blocking
    open(): on a FIFO with no writer it waited forever. It opens as every input is now
    (never waiting on a FIFO, the header's bytes only) and refuses a special file in
    one line; a regular file's answer is unchanged (None when it is not encrypted, or
    is missing)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    try:
        for path, kind in ((fifo, "a FIFO (named pipe)"), (unix_socket, "a socket"),
                           ("/dev/zero", "a character device"), (tmp_path, "a folder")):
            with pytest.raises(FormatError) as refused:
                _within(10, lambda p=path: file_format(p))
            assert str(refused.value) == f"{path}: is {kind}, expected a regular file"
    finally:  # a reader still blocked in open() (the old code) gets its writer and ends
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    encrypted = tmp_path / "e.h5"
    encrypted.write_bytes(encrypt(b"plaintext", "ssgallery-gallery", b"k" * 32))
    plain = tmp_path / "p.h5"
    plain.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(600))
    assert _within(10, lambda: file_format(encrypted)) == "ssgallery-gallery"
    assert _within(10, lambda: file_format(plain)) is None
    assert _within(10, lambda: file_format(tmp_path / "missing")) is None


def test_a_store_reopened_for_its_rows_never_waits_on_a_fifo(tmp_path):
    """compress reads a large store's rows by reopening it (`StoreImages`), through the
    seal's opener, which opened the path with a blocking open(): a FIFO put at the
    store's path while a run read it hung the run for ever (as did `check_seal` and
    `encryption.decrypt` given such a path). The seal's and the encryption's openers
    open as the first read does now (`ssgallery.formats.readonly.opened`): one line
    naming the store, and what it is as every input is named
    (`ssgallery.safeio.file_kind`; it said 'not a regular file, expected an store
    file' in words of its own until 2026-11-28)."""
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.formats.encryption import decrypt
    from ssgallery.formats.seal import check_seal
    from ssgallery.formats.store import load_store

    path = tmp_path / "s.h5"
    enroll(make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, seed=1), path)
    store = load_store(path, images=False)
    assert store.images[0:1].shape[0] == 1
    os.mkfifo(tmp_path / "fifo")
    os.replace(tmp_path / "fifo", path)
    expected = "{} is a FIFO (named pipe), expected a regular file"  # safeio.file_kind
    try:
        for read, kind in ((lambda: store.images[0:1], "ssgallery enrollment store"),
                           (lambda: check_seal(path, "store"), "store"),
                           (lambda: decrypt(path, "store", None, b"k" * 32), "store")):
            with pytest.raises(FormatError) as refused:
                _within(10, read)
            assert str(refused.value) == f"{path}: " + expected.format(kind)
    finally:  # a reader still blocked in open() (the old code) gets its writer and ends
        for _ in range(3):
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def test_a_compress_part_is_opened_by_the_one_opener(tmp_path):
    """The parts folder (`ssgallery.app.parts`) had two openers of its own (O_NOFOLLOW in
    the folder's descriptor) beside `open_regular`, and named what it refused its own
    way: a FIFO part was 'not a regular file', a link 'cannot open it (Too many levels
    of symbolic links; ...)'. It opens through `open_regular(name, dir_fd=folder)` now:
    a link is looked at, never followed, and named as every input is."""
    from ssgallery.app.parts import BadPart, PartsFolder

    parts = PartsFolder(tmp_path / "g.h5")
    os.mkdir(parts.path, 0o700)
    victim = tmp_path / "victim.npz"
    victim.write_bytes(b"precious")
    for client, make, kind in (("c01", lambda p: os.symlink(victim, p), "a symbolic link"),
                               ("c02", os.mkfifo, "a FIFO (named pipe)")):
        make(parts._shown(client))
        with pytest.raises(BadPart) as refused:
            _within(10, lambda c=client: parts.read_any(c))
        assert str(refused.value) == f"{parts._shown(client)}: is {kind}, expected a " \
            "regular file (never followed or opened)"
    folder = os.open(parts.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.symlink(victim, os.path.join(parts.path, "link"))
        fd, st = open_regular("link", dir_fd=folder)
        assert fd is None and file_kind(st.st_mode) == "a symbolic link"
        os.symlink(os.path.join("..", victim.name), os.path.join(parts.path, "relative"))
        fd, st = open_regular("relative", dir_fd=folder)
        assert fd is None and file_kind(st.st_mode) == "a symbolic link"
        os.link(victim, os.path.join(parts.path, "regular"))
        fd, st = open_regular("regular", dir_fd=folder)
        assert os.read(fd, 20) == b"precious" and not os.get_inheritable(fd)
        os.close(fd)
    finally:
        os.close(folder)
    assert victim.read_bytes() == b"precious"
