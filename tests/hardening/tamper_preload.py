"""A Dask worker preload (``LocalCluster(preload=[this file])``) that makes the worker
hostile, for tests/hardening/test_dask.py. The mode is read from the file named by
$TAMPER_MODE_FILE at every job, so one cluster serves every case:

- ``honest``: nothing changed;
- ``threshold`` / ``nan`` / ``client``: the trained result forged (an accept-all
  threshold, NaN weights, another client's name);
- ``heldout``: the held-out impostor scores forged far below any score (the threshold
  calibrated from them would accept every probe); the model and threshold honest;
- ``provenance``: the provenance and summary row without ``m`` (what the summary
  table prints);
- ``calibrated``: c01's held-out impostor scores forged with the threshold and Z-norm
  they imply (the result consistent): one more than the target FAR's share at the
  honest threshold, the rest far below, which calibrate (``znorm-global``, T over every
  client, the others honest) to an accept-all threshold;
- ``evil_result``: the job returns an object whose unpickling runs a program (it
  writes the unpickling process's pid to $TAMPER_PWNED_FILE);
- ``unpicklable``: the job raises an exception that cannot be pickled;
- ``evil_exception``: the job raises an exception whose unpickling runs a program (Dask
  ships it pickled; as ``evil_result``, its pid goes to $TAMPER_PWNED_FILE);
- ``raw_erred`` / ``serialized_erred``: the worker tells the scheduler itself that the
  job failed, with an exception whose unpickling runs a program, as plain bytes (which
  Dask's client unpickles in ``clean_exception``) or as a pickled frame;
- ``nested_pickled``: the worker answers the request for a result (``get_data``, which
  the scheduler relays) with a plain ``{"__Pickled__": 1}`` (sent pickled: the
  scheduler unpickles it into that dict) beside a serialized part whose header holds
  ``pickled-obj``: relayed, the dict makes Dask's protocol unpickle that header in
  compress whatever its deserializers;
- ``die``: the worker process exits in the middle of the job;
- ``huge``: the job returns 64 MiB (``b"ok\\n"`` and zeros), far more than a result of
  the test's run can be;
- ``bomb``: the worker answers the request for the result (``get_data``) with the same
  64 MiB zlib-compressed (about 64 KiB on the wire): Dask's receiver inflates a frame
  as the sender's header says, whatever was agreed;
- ``hang``: the job never finishes while the mode is ``hang`` (then it returns the
  honest result, so the worker is free for the next case);
- ``slow``: every job takes 2 s more, then returns the honest result.

Modes after which the run must still succeed, with nothing of the worker's shown:

- ``warn_event``: the worker publishes a "warn" event whose message is pickled (Dask's
  client unpickles it) before the honest result;
- ``print_event``: the worker publishes a "print" event (Dask's client prints it on
  stdout) before the honest result.
"""

import os
import threading

import numpy as np

from ssgallery.app import client_training, parallel

# the originals, once: a second import of this module must not wrap its own wrappers
_honest_train = getattr(client_training, "_honest_train_job", client_training.train_job)
_honest_wrapper = getattr(parallel, "_honest_on_dask_worker", parallel._on_dask_worker)
client_training._honest_train_job = _honest_train
parallel._honest_on_dask_worker = _honest_wrapper


def _mode():
    with open(os.environ["TAMPER_MODE_FILE"]) as handle:
        return handle.read().strip()


class Evil:
    def __reduce__(self):
        cmd = f"echo $PPID >> {os.environ['TAMPER_PWNED_FILE']}"
        return (os.system, (cmd,))


class EvilError(Exception):
    def __reduce__(self):
        return Evil().__reduce__()


class Unpicklable(Exception):
    def __init__(self):
        super().__init__("cannot travel")
        self.lock = threading.Lock()

    def __reduce__(self):
        raise TypeError("no pickling")


def train_job(job, *shared):
    result = _honest_train(job, *shared)
    mode = _mode()
    if mode == "threshold":
        result.threshold = -1e9
    elif mode == "nan":
        result.beta = result.beta * float("nan")
    elif mode == "client":
        result.client = "nobody"
    elif mode == "heldout":
        result.heldout["impostor"] = np.full(len(result.heldout["impostor"]), -1e9)
    elif mode == "provenance":
        del result.provenance["m"], result.row["m"]
    elif mode == "calibrated" and job.client == "c01":
        n, far = len(job.y), job.options.target_far
        top = int(np.floor(far * n + 1e-9)) + 1  # its own threshold stays the honest one
        high = np.nextafter(result.threshold, -np.inf)
        # far below, in two values 0.1 % apart: people of constant scores would leave the
        # Z-norm of the others (one person out) no spread but rounding error
        forged = np.r_[np.resize([-1e9, -1.001e9], n - top), [high] * top]
        result.heldout = {"impostor": forged, "genuine": result.heldout["genuine"],
                          "impostor_row": np.resize(result.heldout["impostor_row"],
                                                    len(forged))}
        result.normalization = client_training.znorm_parameters(forged)
        result.threshold = client_training.threshold_at_far(forged,
                                                            job.options.target_far)
    return result


HUGE = 64 << 20


def wrapper(func, job, to_bytes, *shared):
    import time

    mode = _mode()
    if mode == "huge":
        return b"ok\n" + bytes(HUGE)
    if mode == "slow":
        time.sleep(2.0)
    while mode == "hang":
        time.sleep(0.1)
        mode = _mode()
    if mode == "evil_result":
        return Evil()
    if mode == "unpicklable":
        raise Unpicklable()
    if mode == "evil_exception":
        raise EvilError("evil")
    if mode == "die":
        os._exit(1)
    if mode in ("raw_erred", "serialized_erred", "warn_event", "print_event"):
        _tell_the_scheduler(mode)
    return _honest_wrapper(func, job, to_bytes, *shared)


def _tell_the_scheduler(mode):
    """What a worker can send the scheduler besides its results (module docstring)."""
    import pickle
    import time

    from distributed.protocol import to_serialize
    from distributed.worker import get_worker, thread_state

    worker, key = get_worker(), thread_state.key
    if mode.endswith("_event"):
        message = {"message": pickle.dumps(Evil())} if mode == "warn_event" else \
            {"args": ["INJECTED \x1b]0;pwned\x07"]}
        worker.log_event(mode[:-len("_event")], message)
        time.sleep(0.5)  # the event reaches compress before the result
        return
    evil = pickle.dumps(Evil()) if mode == "raw_erred" else to_serialize(Evil())
    worker.batched_stream.send({
        "op": "task-erred", "key": key, "run_id": worker.state.tasks[key].run_id,
        "stimulus_id": "tampered", "exception": evil, "traceback": None,
        "exception_text": "tampered", "traceback_text": "", "thread": None,
        "startstops": []})
    time.sleep(3)  # the forged failure arrives first


client_training.train_job = train_job
parallel._on_dask_worker = wrapper


def dask_setup(worker):
    """The worker's ``get_data`` handler, tampered in ``nested_pickled`` and ``bomb``
    modes."""
    import pickle
    import zlib

    import msgpack
    from distributed.core import Status
    from distributed.protocol import ToPickle
    from distributed.protocol.serialize import Serialized

    honest = worker.handlers["get_data"]

    async def get_data(comm, keys, who=None, serializers=None):
        if _mode() == "bomb":
            packed = msgpack.dumps(b"ok\n" + bytes(HUGE), use_bin_type=True)
            bomb = Serialized({"serializer": "msgpack", "compression": ("zlib",)},
                              [zlib.compress(packed, 9)])
            await comm.write({"status": "OK", "data": dict.fromkeys(keys, bomb)})
            return Status.dont_reply
        if _mode() != "nested_pickled":
            return await honest(comm, keys, who=who, serializers=serializers)
        carrier = Serialized({"pickled-obj": pickle.dumps(Evil()), "serializer": "pickle"},
                             [])
        await comm.write({"status": "OK", "data": {
            k: [ToPickle({"__Pickled__": 1}), carrier] for k in keys}})
        return Status.dont_reply

    worker.handlers["get_data"] = get_data
