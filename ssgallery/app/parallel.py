"""Running per-client jobs: in this process, in local worker processes (joblib, loky) or on
a Dask distributed cluster.

Every backend yields results as they finish, and keeps only a few jobs in flight
(about two per worker), so the jobs -- bounded per-client blocks built lazily by the
caller -- never all sit in memory. What every job shares (``shared``) is sent once:
scattered to every Dask worker before the first job, written once to a file that every
local worker maps (joblib's memory-mapping of large arrays, deduplicated by content),
the same object in this process. Results depend only on their job, never on the
backend or the number of workers; the caller alone writes files.

``private`` (a run with the privacy key: its features are personal data) keeps every
such file off the disk (`ssgallery.learn.threads.memmap_options`).
"""

import contextlib
import logging
import time
from dataclasses import dataclass

from ssgallery.app.dask_bounds import bounded_reads
from ssgallery.errors import InputError, SsgalleryError
from ssgallery.learn.threads import large_arrays_on_heap, memmap_options, worker_count

CONNECT_TIMEOUT = "20s"  # to reach a Dask scheduler


@dataclass(frozen=True)
class DaskLimits:
    """What one job may take on a Dask cluster (`run_jobs`).

    Attributes
    ----------
    seconds : float or None
        Its time on the cluster, counted from when a worker thread is free for it (the
        jobs in flight, oldest first, one per thread of the cluster: the scheduler
        runs them in the order they were submitted); past it, the jobs are cancelled
        and the run stops with one line naming the job. None or 0: no limit.
    result_bytes : int or None
        The most bytes of a result; a message from the cluster that announces more
        is refused before it is read (`ssgallery.app.dask_bounds.bounded_reads`).
    name : callable
        ``name(job)``: the job's name in a message (a client id).
    """

    seconds: float = None
    result_bytes: int = None
    name: object = repr


def check_backend(n_jobs, scheduler):
    from ssgallery.checks import jobs_int

    jobs_int("jobs", n_jobs)
    if scheduler is not None and n_jobs != 1:
        raise InputError("give either a number of local jobs or a scheduler address, not both")


def run_jobs(func, jobs, *, n_jobs=1, scheduler=None, shared=None, n_tasks=None,
             to_bytes=None, private=False, limits=None):
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
        Address of a Dask distributed scheduler (``tcp://host:8786``); then each result
        comes back as bytes (``to_bytes(func(...))`` on the worker; `_run_dask`), and
        the caller decodes and checks it.
    n_tasks : int, optional
        The number of jobs, when known.
    to_bytes : callable, optional
        Turns a result into bytes on a Dask worker (default: ``func`` returns bytes).
    private : bool
        The jobs hold personal data (a run with the privacy key): local workers never
        share it through a file on disk (`memmap_options`).
    limits : DaskLimits, optional
        A Dask job's time and result size (default: no limit).
    """
    check_backend(n_jobs, scheduler)
    extra = () if shared is None else (shared,)
    if scheduler is None and n_jobs != 1:
        n_jobs = worker_count(n_jobs, n_tasks)
    if scheduler is not None:
        yield from _run_dask(func, jobs, scheduler, (shared, to_bytes),
                             limits or DaskLimits())
    elif n_jobs == 1:
        for job in jobs:
            yield func(job, *extra)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered",
                            pre_dispatch="2*n_jobs", **memmap_options(private))
        yield from parallel(delayed(func)(job, *extra) for job in jobs)


SAFE_DESERIALIZERS = ["msgpack"]  # what this process accepts from the cluster: no pickle
POLL_SECONDS = 2.0  # how often a quiet cluster is looked at
NO_WORKER_SECONDS = 60.0  # a cluster without any worker this long: the run fails


def _run_dask(func, jobs, address, extra, limits):
    """Yield ``to_bytes(func(job, shared))`` computed on the cluster, as bytes.

    The process that holds the host's keys unpickles nothing a worker sends (module
    docstring of `ssgallery.app.result_checks`; docs/security.md): the job returns
    bytes (``b"ok\\n"`` + payload, or ``b"error\\n"`` + one line: no exception object
    crosses), results are fetched with msgpack only, and the scheduler's report stream
    and its "key in memory" message are read without pickle. Anything else a worker
    could send (a pickled result or exception, a failure Dask reports with a pickled
    exception, a dead cluster) ends the run with one line within about
    `NO_WORKER_SECONDS`, never a hang or a library traceback. ``extra``: ``(shared,
    to_bytes)``; ``limits``: `DaskLimits` (a job past its time, a message larger than
    a result can be: one line).
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError("a Dask scheduler needs the 'distributed' extra: "
                         "pip install 'ssgallery[distributed]'") from None
    with _quiet_dask_logs(), _no_pickled_parts():
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False,
                            deserializers=SAFE_DESERIALIZERS)
        except (OSError, TimeoutError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}") \
                from None
        try:
            _no_pickle_from_the_cluster(client)
            with bounded_reads(client, limits.result_bytes, address) as refused:
                yield from _dask_results(client, (func, jobs, *extra), address, limits,
                                         refused)
        finally:  # a broken report stream raises its error again on close: ours stands
            with contextlib.suppress(Exception):
                client.close(timeout=POLL_SECONDS * 5)


def _dask_results(client, work, address, limits, refused):
    from distributed import as_completed

    func, jobs, shared, to_bytes = work
    threads = max(1, sum(client.nthreads().values()))
    try:
        extra = () if shared is None else (client.scatter(shared, broadcast=True,
                                                          hash=False),)
    except (OSError, TimeoutError) as exc:  # Dask: "No valid workers found"
        raise SsgalleryError(f"the Dask cluster at {address} has no worker to send the "
                             f"run's shared data to ({exc})") from None
    clocks = {}  # key: [future, job's name, when a thread was free for it], oldest first

    def submit(job):
        future = client.submit(_on_dask_worker, func, job, to_bytes, *extra, pure=False)
        clocks[future.key] = [future, limits.name(job), None]
        return future

    jobs = iter(jobs)
    first = [submit(job) for _, job in zip(range(2 * threads), jobs)]
    if not first:
        return
    pending = as_completed(first, loop=client.loop)
    watch, last_look = {"no_worker_since": None}, time.monotonic()
    while not pending.is_empty():
        _start_clocks(clocks, threads)
        _check_clocks(client, clocks, limits.seconds, address)  # also while results flow
        done = pending.next_batch(block=False)
        if not done:  # nothing finished: look at the cluster now and then
            time.sleep(0.05)
            if time.monotonic() - last_look > POLL_SECONDS:
                _check_cluster(client, address, watch, refused)
                last_look = time.monotonic()
            continue
        for future in done:
            name = clocks.pop(future.key)[1]
            if future.cancelled():  # its worker left with the run's shared blocks
                raise ClusterLost(address, [name, *(n for _, n, _ in clocks.values())])
            answer = _answer(future, (address, name), refused)
            future.release()
            job = next(jobs, None)
            if job is not None:
                pending.add(submit(job))
            yield answer


class ClusterLost(SsgalleryError):
    """The cluster dropped the run's jobs: its workers left (the blocks scattered to
    them lost with them: Dask cancels every job that needs them) or the jobs were
    cancelled. ``in_flight``: the jobs submitted and not finished, by name; ``parts``:
    the finished clients the caller kept (`ssgallery.app.compress` sets it)."""

    def __init__(self, address, in_flight):
        from ssgallery.errors import clipped

        named = ", ".join(clipped(n) for n in in_flight[:5])
        more = f" and {len(in_flight) - 5} more" if len(in_flight) > 5 else ""
        super().__init__(f"the Dask cluster at {address} lost the run's jobs (its workers "
                         f"left, or the jobs were cancelled); in flight: {named}{more}")
        self.in_flight, self.parts = list(in_flight), 0


def _start_clocks(clocks, threads):
    """A job's clock starts when it is among the ``threads`` oldest in flight."""
    now = time.monotonic()
    for _, clock in zip(range(threads), clocks.values()):
        clock[2] = clock[2] or now


def _check_clocks(client, clocks, seconds, address):
    """A job past ``seconds`` on its clock: every job in flight cancelled, one line."""
    from ssgallery.errors import option, printable

    now = time.monotonic()
    late = [name for _, name, started in clocks.values()
            if seconds and started is not None and now - started > seconds]
    if late:
        with contextlib.suppress(Exception):
            client.cancel([future for future, _, _ in clocks.values()])
        raise SsgalleryError(f"{printable(late[0])}: no result from the Dask cluster at "
                             f"{address} within {seconds:g} s ({option('job_timeout')}); "
                             "the run's jobs were cancelled")


def _answer(future, source, refused):
    """The payload a finished job sent back, or one line saying why there is none
    (``source``: the cluster's address and the job's name; ``refused``: as
    `ssgallery.app.dask_bounds.bounded_reads` gives)."""
    address = source[0]
    try:
        data = future.result(timeout=POLL_SECONDS * 5)
    except Exception as exc:  # noqa: BLE001 - whatever Dask raises: one line
        _refuse_oversized(refused, source)
        text = " ".join(str(exc).split())[:300]
        raise SsgalleryError(f"a job failed on the Dask cluster at {address} "
                             f"({type(exc).__name__}: {text})") from None
    if not isinstance(data, bytes) or not data.startswith((b"ok\n", b"error\n")):
        raise SsgalleryError(f"a worker of the Dask cluster at {address} answered "
                             f"{type(data).__name__}, not a job's bytes")
    if refused["limit"] and len(data) > refused["limit"]:  # a comm that is not TCP's
        refused["sizes"].append(len(data))
        _refuse_oversized(refused, source)
    if data.startswith(b"error\n"):
        text = data[6:506].decode("utf-8", "replace")
        raise SsgalleryError(f"a job failed on the Dask cluster at {address}: {text}")
    return data[3:]


def _refuse_oversized(refused, source):
    """One line for a message from the cluster larger than a result can be."""
    from ssgallery.errors import printable

    if refused["sizes"]:
        address, name = source
        who = f"{printable(name)}: " if name is not None else ""
        raise SsgalleryError(f"{who}the Dask cluster at {address} sent a message of at "
                             f"least {refused['sizes'][0]} bytes, more than the "
                             f"{refused['limit']} a result of this run can be")


def _check_cluster(client, address, watch, refused):
    """Between results: a broken report stream or no worker for `NO_WORKER_SECONDS`
    ends the run with one line."""
    task = getattr(client, "_handle_report_task", None)
    if client.status != "running" or (task is not None and task.done()):
        _refuse_oversized(refused, (address, None))
        raise SsgalleryError(f"the Dask scheduler at {address} sent what this host does not "
                             "unpickle, or closed the connection (a worker died, or raised "
                             "outside the job; see the cluster's logs)")
    try:
        workers = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - an unreachable scheduler: no worker either
        workers = 0
    if workers:
        watch["no_worker_since"] = None
        return
    since = watch["no_worker_since"] = watch["no_worker_since"] or time.monotonic()
    if time.monotonic() - since > NO_WORKER_SECONDS:
        raise SsgalleryError(f"the Dask cluster at {address} has had no worker for "
                             f"{NO_WORKER_SECONDS:.0f} s")


WORKER_FAILURE = "the worker reported the failure itself (see the cluster's logs)"


def _no_pickle_from_the_cluster(client):
    """Nothing the scheduler relays from a worker is unpickled or acted on here (each
    of these ran a program inside compress before): the report stream deserializes no
    serialized frame (``comm.deserialize``, also for the read already waiting) and
    reads with `SAFE_DESERIALIZERS` only; a failed task's exception, which Dask's
    client unpickles when it arrives as bytes (``clean_exception``), is replaced by a
    plain one (`WORKER_FAILURE`); the pickled type Dask attaches to a result held in
    memory is dropped; published events (a worker's "warn", whose message Dask's client
    unpickles, and "print", which it prints on stdout) are ignored."""
    import functools

    comm = getattr(getattr(client, "scheduler_comm", None), "comm", None)
    if comm is not None:
        comm.deserialize = False
        comm.read = functools.partial(comm.read, deserializers=SAFE_DESERIALIZERS)
    handlers = getattr(client, "_stream_handlers", {})
    in_memory, erred = handlers.get("key-in-memory"), handlers.get("task-erred")
    if in_memory is not None:
        handlers["key-in-memory"] = \
            lambda key=None, type=None, workers=None, **rest: in_memory(
                key=key, workers=workers, **rest)
    if erred is not None:
        handlers["task-erred"] = lambda key=None, **_: erred(
            key=key, exception=Exception(WORKER_FAILURE), traceback=None)
    handlers["event"] = lambda **_: None


_PLAIN = {("builtins", n) for n in ("set", "frozenset", "bytearray", "complex")}


class _PlainPickled:
    """``distributed.protocol.pickle`` whose ``loads`` builds plain values only (tuples,
    lists, dicts, strings, numbers, sets: what the scheduler itself pickles, e.g. a
    tuple), never an object of a class or a call (`_no_pickled_parts`)."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):  # dumps: what this process sends is still pickled
        return getattr(self._module, name)

    @staticmethod
    def loads(data, *, buffers=()):
        import io
        import pickle

        class Plain(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) in _PLAIN:
                    return super().find_class(module, name)
                raise pickle.UnpicklingError(
                    f"{module}.{name[:60]}: a pickled object from the Dask cluster, never "
                    "built by the process that holds the keys")

        return Plain(io.BytesIO(data), buffers=buffers).load()


@contextlib.contextmanager
def _no_pickled_parts():
    """For the run, Dask's protocol in this process builds plain values only from a
    ``__Pickled__`` part of a message (`_PlainPickled`): it unpickles those whatever the
    deserializers say, and the scheduler relays what a worker sends (a worker's answer
    to ``get_data`` that plants a ``__Pickled__`` reference to the header of another
    part ran a program inside compress through the result a job returned)."""
    from distributed.protocol import core

    previous = core.pickle
    core.pickle = _PlainPickled(previous)
    try:
        yield
    finally:
        core.pickle = previous


@contextlib.contextmanager
def _quiet_dask_logs():
    """Dask's own log lines (tracebacks of failed tasks, reconnection notes) stay off
    this command's stderr: a failure is the one line of `SsgalleryError`."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _on_dask_worker(func, job, to_bytes, *shared):
    """On a Dask worker: ``b"ok\\n" + to_bytes(func(job, *shared))``, or ``b"error\\n"``
    and one line of text for any exception (an exception object, perhaps not even
    picklable, never travels back); the allocator tuned for speed
    (`ssgallery.learn.threads.large_arrays_on_heap`)."""
    try:
        with large_arrays_on_heap():
            out = func(job, *shared)
        return b"ok\n" + (to_bytes(out) if to_bytes is not None else out)
    except BaseException as exc:  # noqa: BLE001 - reported as text to the host
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        return b"error\n" + text.encode("utf-8", "replace")
