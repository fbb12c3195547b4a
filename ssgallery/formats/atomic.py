"""The one file writer of ssgallery: nothing half-written, nothing lost.

Every output (store, gallery, report files, montages) is written by `atomic_path`:

- **same kind only**: an existing output is replaced only by an output of the same kind
  (`check_writable`, in `ssgallery.formats.writable`): a store is never replaced by a
  gallery nor the reverse, a file that is not an ssgallery output of that kind only
  with ``force``, a device node, FIFO, socket or folder never;
- **atomic**: the whole file is written to a temporary file beside the (symlink-resolved)
  target, flushed, fsynced and renamed onto it; a symlinked output updates its target;
- **permissions**: an existing output keeps its permission bits; a new one follows the
  umask (like any file the user creates);
- **locks**: writers of the same store or gallery take ``.<target>.lock`` (`lock_path`,
  the ``filelock`` package); `output_lock` lets a read-modify-write (``enroll --add``;
  ``compress`` and its parts folder) hold it from the read to the rename. It stays
  (removing a Unix lock file is unsafe: filelock), hence hidden;
- **stale temporary files** (``<name>.ssgallery-tmp-<pid>-<token>``) of a run that died
  (SIGKILL, power loss) are removed by the next writer of the same output;
- **signals**: SIGINT/SIGTERM are held back while the temporary file is created (so it
  never exists unnamed), around the final rename and while a failed write's temporary
  file is removed, and every completed replacement is recorded (`written_paths`) so
  that an interrupted command can say truthfully whether its output was replaced.
"""

import contextlib
import os
import signal
import stat
import threading

from ssgallery.errors import SsgalleryError, interrupt_handlers
from ssgallery.formats.writable import (  # noqa: F401  (public here too)
    HEAD_BYTES,
    PNG_SIGNATURE,
    check_writable,
    has_prefix,
    hdf5_format,
)
from ssgallery.safeio import env_seconds, file_name

TMP_MARK = ".ssgallery-tmp-"
LOCK_TIMEOUT_ENV = "SSGALLERY_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 600.0

_written = []  # targets replaced since forget_written(), in order
_locks = {}  # lock file path -> filelock.FileLock (reentrant per instance)
_locks_guard = threading.Lock()


# --------------------------------------------------------------------------- locks
def _lock_timeout():
    return env_seconds(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT)  # "abc": an error


def lock_path(path):
    """``.<name>.lock`` beside the target of ``path`` (symlinks resolved): hidden, as it
    stays after the run (filelock keeps a Unix lock file: removing its name would let
    a waiter and a newcomer hold two different files at once)."""
    folder, name = os.path.split(os.path.realpath(file_name(path)))
    return os.path.join(folder, f".{name}.lock")


@contextlib.contextmanager
def output_lock(path, wait=None):
    """Hold the lock file `lock_path` of ``path``.

    Reentrant in one thread (the store writer inside ``enroll --add`` takes it again).
    Waits up to ``$SSGALLERY_LOCK_TIMEOUT`` seconds (default 600) for another run;
    ``wait(message)`` is called once if it has to wait. Raises `SsgalleryError`
    when the lock cannot be had.
    """
    import filelock

    timeout = _lock_timeout()  # checked whether or not this run has to wait
    name = lock_path(path)
    with _locks_guard:
        lock = _locks.setdefault(name, filelock.FileLock(name))
    try:
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            if wait is not None:
                wait(f"{path}: another ssgallery run is writing it; waiting for it to finish")
            lock.acquire(timeout=timeout)
    except filelock.Timeout:
        raise SsgalleryError(f"another ssgallery run has been writing it for more than "
                             f"{timeout:g} s (lock {name}); try again later",
                             path=path) from None
    except OSError as exc:  # filelock opens it with O_NOFOLLOW: a link is ELOOP
        why = ("it is a symbolic link, which a writer never follows: remove it"
               if os.path.islink(name) else exc.strerror)
        raise SsgalleryError(f"cannot take the lock {name} ({why})", path=path) from None
    try:
        yield
    finally:
        lock.release()


# --------------------------------------------------------------------------- temporaries
def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temporaries(target):
    """Remove ``<target>.ssgallery-tmp-<pid>-*`` files whose process is dead; returns
    the removed paths."""
    folder, base = os.path.split(target)
    prefix = base + TMP_MARK
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix) or not entry.is_file(follow_symlinks=False):
                continue
            pid = entry.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.path)
    return removed


def _create_temporary(target, shown):
    folder, base = os.path.split(target)
    tmp = os.path.join(folder, f"{base}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
    try:  # mode 0666 minus the umask, like any new file of the user
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
    except OSError as exc:
        raise SsgalleryError(f"cannot write {os.path.basename(shown)} here ({exc.strerror})",
                             path=folder) from None
    return tmp


# --------------------------------------------------------------------------- the writer
def written_paths():
    """Outputs replaced (renamed into place) since the last `forget_written`."""
    return list(_written)


def forget_written():
    _written.clear()


@contextlib.contextmanager
def _signals_deferred():
    """Hold SIGINT/SIGTERM back for the duration (main thread), then deliver them.

    Blocking with ``signal.pthread_sigmask`` alone is not enough in CPython: the
    kernel hands a process-directed signal to any thread that does not block it (BLAS
    and HDF5 threads do not), and the Python handler then runs in the main thread at
    the next bytecode, i.e. in the middle of the rename. So the Python-level handlers
    are swapped for one that only records the signal (`errors.interrupt_handlers`).
    """
    pending = []
    try:
        with interrupt_handlers(lambda signum, frame: pending.append(signum)):
            yield
    finally:
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)  # the restored handler runs now


def _fsync(path, flags=os.O_RDONLY):
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _install(tmp, target, shown):
    """fsync ``tmp``, give it the mode of the output it replaces, rename it onto
    ``target`` with SIGINT/SIGTERM held back, record the replacement."""
    _fsync(tmp)
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(target)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown") and os.geteuid() == 0:
            with contextlib.suppress(OSError):
                os.chown(tmp, st.st_uid, st.st_gid)
    with _signals_deferred():
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise SsgalleryError(f"cannot write it ({exc.strerror})", path=shown) from None
        _written.append(shown)
    with contextlib.suppress(OSError):
        _fsync(os.path.dirname(target))


@contextlib.contextmanager
def atomic_path(path, kind=None, force=False, lock=False, encrypted=None):
    """Yield a temporary path beside ``path``'s target; on success it replaces it.

    The caller writes the whole file to the yielded path (e.g. with ``h5py.File(tmp,
    "w")``) and closes it inside the ``with`` block. On any exception, including
    ``KeyboardInterrupt``, the temporary file is removed and the output is untouched.

    Parameters
    ----------
    path : str or Path
        The output; a symlink is followed (its target is replaced).
    kind, force, encrypted
        See `check_writable`. With a format tag (str) the file is a store or gallery,
        sealed (and encrypted, with a privacy key) in memory by
        `ssgallery.formats.hdf5.hdf5_image` before it is written here.
    lock : bool
        Hold the output's lock (`lock_path`) while writing (stores and galleries).
    """
    shown = file_name(path)
    target = os.path.realpath(shown)
    if lock:  # a missing folder or a file of another kind: refused before any lock file
        check_writable(shown, kind, force, encrypted)
    with output_lock(shown) if lock else contextlib.nullcontext():
        check_writable(shown, kind, force, encrypted)  # under the lock: what is replaced
        remove_stale_temporaries(target)
        tmp = None
        try:
            with _signals_deferred():  # the file and its name in `tmp` come together
                tmp = _create_temporary(target, shown)
            try:
                yield tmp
                _install(tmp, target, shown)
            except OSError as exc:  # ENOSPC, EFBIG (ulimit -f), EIO: name the output
                if exc.filename not in (None, tmp):
                    raise  # another file's problem, named by its own error
                raise SsgalleryError(f"cannot write it ({exc.strerror or exc})",
                                     path=shown) from None
        except BaseException:
            if tmp is not None:
                with _signals_deferred(), contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise


def write_bytes_atomic(path, data, kind=None, force=False, lock=False):
    """Write ``data`` (bytes) to ``path`` atomically; with ``lock``, holding the output's
    lock from the check to the rename (see `atomic_path`: roc's report files, one of
    which, written without it, replaced a store another process wrote at the path
    between its check and its rename)."""
    with atomic_path(path, kind, force, lock=lock) as tmp, open(tmp, "wb") as handle:
        handle.write(data)


def write_text_atomic(path, text, kind=None, force=False, lock=False):
    """Write ``text`` (str, UTF-8) to ``path`` atomically (see `write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), kind, force, lock)


def write_in_folder(folder_fd, name, data, shown):
    """Write ``data`` as ``name`` inside the folder open as ``folder_fd``, atomically,
    never following a symbolic link: the temporary file is created with ``O_EXCL |
    O_NOFOLLOW`` (mode 0600) and renamed onto ``name`` within the folder, which replaces
    a link there rather than its target (`ssgallery.app.parts`: a folder checked once,
    then used through its descriptor only). ``shown`` names the file in messages."""
    tmp = f"{name}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}"
    fd = None
    try:
        with _signals_deferred():
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=folder_fd)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        with _signals_deferred():
            os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            tmp = None
    except OSError as exc:
        raise SsgalleryError(f"cannot write it ({exc.strerror or exc})", path=shown) from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and fd is not None:
            with _signals_deferred(), contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder_fd)
