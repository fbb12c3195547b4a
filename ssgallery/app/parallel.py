"""Running per-client jobs: in this process, in local worker processes (joblib, loky) or on
a Dask distributed cluster.

Every backend yields results as they finish, and keeps only a few jobs in flight
(about two per worker), so the jobs -- bounded per-client blocks built lazily by the
caller -- never all sit in memory. What every job shares (``shared``) is sent once:
scattered to every Dask worker before the first job, written once to a file that every
local worker maps (joblib's memory-mapping of large arrays, deduplicated by content),
the same object in this process. Results depend only on their job, never on the
backend or the number of workers; the caller alone writes files.
"""

from ssgallery.errors import InputError
from ssgallery.learn.threads import large_arrays_on_heap, worker_count

CONNECT_TIMEOUT = "20s"  # to reach a Dask scheduler


def check_backend(n_jobs, scheduler):
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise InputError(f"jobs must be a positive integer or -1 (all cores), got {n_jobs!r}")
    if scheduler is not None and n_jobs != 1:
        raise InputError("give either a number of local jobs or a scheduler address, not both")


def run_jobs(func, jobs, *, n_jobs=1, scheduler=None, shared=None, n_tasks=None):
    """Yield ``func(job)`` (``func(job, shared)`` when ``shared`` is given) for every
    job, in completion order.

    Parameters
    ----------
    func : callable
        A module-level function (it is pickled by reference to the workers).
    jobs : iterable
        Consumed lazily.
    shared : object, optional
        What every job needs besides its own data, sent once (module docstring); never
        modified by ``func``.
    n_jobs : int
        Local worker processes (joblib's loky backend); 1 = in this process; at most
        the cores and ``n_tasks`` (`ssgallery.learn.threads.worker_count`).
    scheduler : str, optional
        Address of a Dask distributed scheduler (``tcp://host:8786``).
    n_tasks : int, optional
        The number of jobs, when known.
    """
    check_backend(n_jobs, scheduler)
    extra = () if shared is None else (shared,)
    if scheduler is None and n_jobs != 1:
        n_jobs = worker_count(n_jobs, n_tasks)
    if scheduler is not None:
        yield from _run_dask(func, jobs, scheduler, shared)
    elif n_jobs == 1:
        for job in jobs:
            yield func(job, *extra)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered",
                            pre_dispatch="2*n_jobs")
        yield from parallel(delayed(func)(job, *extra) for job in jobs)


def _run_dask(func, jobs, address, shared=None):
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError("a Dask scheduler needs the 'distributed' extra: "
                         "pip install 'ssgallery[distributed]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        window = 2 * max(1, sum(client.nthreads().values()))
        extra = () if shared is None else (client.scatter(shared, broadcast=True, hash=False),)
        jobs = iter(jobs)
        first = []
        for job in jobs:
            first.append(client.submit(_on_dask_worker, func, job, *extra, pure=False))
            if len(first) >= window:
                break
        if not first:
            return
        pending = as_completed(first, loop=client.loop)
        for future in pending:
            result = future.result()
            future.release()
            job = next(jobs, None)
            if job is not None:
                pending.add(client.submit(_on_dask_worker, func, job, *extra, pure=False))
            yield result
    finally:
        client.close()


def _on_dask_worker(func, job, *shared):
    """``func(job, *shared)`` on a Dask worker, whose allocator the nanny has tuned for
    memory rather than speed (`ssgallery.learn.threads.large_arrays_on_heap`)."""
    with large_arrays_on_heap():
        return func(job, *shared)
