"""Process resources for training: BLAS threads and the memory allocator.

Per-client problems are small (n in the hundreds, d under a hundred, m + 1 unknowns in
the beta-step), and a multi-threaded BLAS spends more time synchronising its threads
than computing on them, all the more when the other cores are busy with other clients.
Training entry points therefore run with one BLAS thread; parallelism comes from
processing clients in parallel (``roc --jobs``, ``compress --jobs``), not from BLAS. So
does ``enroll``'s matcher fit: the eigenface SVD of a few hundred images is fast on one
thread and many times slower on two when the other core is busy.

The learner allocates and frees arrays of a few hundred KiB to a few MiB on every
iteration. glibc serves them from its heap, unless the process was started with a fixed
mmap threshold -- which Dask's nanny does to every worker it spawns (it sets
``MALLOC_TRIM_THRESHOLD_``, and any such setting freezes the threshold at 128 KiB). Then
every such array is a fresh ``mmap`` whose pages fault in one by one, and training costs
far more CPU time (the Dask row of `benchmarks/scale.py`). `large_arrays_on_heap` undoes
that for the duration of a job.

Local worker processes (joblib's loky) get large arrays (above 1 MB) through files
they memory-map. For a run on personal data (a store or gallery read with the privacy
key) `memmap_options` keeps those files off the disk: in `RAM_FOLDER` when it is a
RAM file system (tmpfs, ramfs; joblib's folder mode 0700, files 0600, removed when the
run ends), else nothing is memory-mapped and each job's data is pickled to its worker
through a pipe (more copying, no file); never joblib's fallback, the temporary folder
on disk.
"""

import contextlib
import os
import threading

# glibc's malloc.h: mallopt parameters, their defaults and the values for training
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_DEFAULTS = {_M_TRIM_THRESHOLD: 128 * 1024, _M_MMAP_THRESHOLD: 128 * 1024}
_TRAINING = {_M_TRIM_THRESHOLD: 256 * 1024 * 1024,  # keep freed pages for the next array
             _M_MMAP_THRESHOLD: 32 * 1024 * 1024}  # glibc's ceiling of its dynamic value
_INSIDE_LOCK = threading.Lock()
_inside = 0  # threads inside `large_arrays_on_heap`


@contextlib.contextmanager
def single_threaded_blas():
    """Context manager (and decorator) limiting BLAS to one thread inside it."""
    import numpy  # noqa: F401  (load the BLAS libraries so that the limit applies)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _glibc_mallopt():
    """glibc's ``mallopt`` function, or None on another C library or platform."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def large_arrays_on_heap():
    """Context manager: inside it, glibc serves arrays under 32 MiB from its heap and
    keeps freed pages for the next ones (up to 256 MiB).

    When the last thread inside leaves (a Dask worker may run several jobs at once), the
    mmap and trim thresholds return to glibc's defaults (128 KiB each), and the heap is
    trimmed as usual on later frees. A no-op where the C library is not glibc.
    """
    global _inside
    mallopt = _glibc_mallopt()
    if mallopt is None:
        yield
        return
    with _INSIDE_LOCK:
        _inside += 1
        if _inside == 1:
            for param, value in _TRAINING.items():
                mallopt(param, value)
    try:
        yield
    finally:
        with _INSIDE_LOCK:
            _inside -= 1
            if _inside == 0:
                for param, value in _GLIBC_DEFAULTS.items():
                    mallopt(param, value)


def worker_count(n_jobs, n_tasks=None):
    """Local worker processes to start for ``n_jobs`` (-1: every core): never more than
    the cores this process may use (CPU affinity and cgroup quota, as joblib counts
    them) nor than the tasks (``n_tasks``, when known); at least 1. ``--jobs 1000`` on
    2 cores starts 2 processes, not 1,000."""
    from joblib import cpu_count

    cores = max(1, int(cpu_count()))
    n = cores if n_jobs is None or n_jobs == -1 else min(int(n_jobs), cores)
    if n_tasks is not None:
        n = min(n, int(n_tasks))
    return max(1, n)


RAM_FOLDER = "/dev/shm"  # where a private run's workers share their arrays, if RAM
RAM_FILE_SYSTEMS = ("tmpfs", "ramfs")


def ram_folder(folder=RAM_FOLDER, mounts="/proc/self/mounts"):
    """``folder`` when it is the mount point of a RAM file system (`RAM_FILE_SYSTEMS`)
    this user can write to, else None (not mounted so, not Linux, not writable)."""
    target = os.path.realpath(folder)
    try:
        with open(mounts, encoding="utf-8", errors="replace") as handle:
            table = [line.split() for line in handle]
    except OSError:
        return None
    kinds = [fields[2] for fields in table if len(fields) >= 3 and fields[1] == target]
    if kinds and kinds[-1] in RAM_FILE_SYSTEMS and os.access(target, os.W_OK | os.X_OK):
        return target
    return None


def memmap_options(private):
    """joblib ``Parallel`` arguments for where workers' shared arrays go: joblib's own
    choice for a plain run; for a ``private`` one `ram_folder`, else no memory-mapping
    (``max_nbytes=None``)."""
    if not private:
        return {}
    folder = ram_folder()
    return {"temp_folder": folder} if folder else {"max_nbytes": None}
