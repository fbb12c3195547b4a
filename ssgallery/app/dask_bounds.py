"""How much a Dask cluster can make ``compress`` read (`bounded_reads`): a worker's
result is data of a size this run can predict
(`ssgallery.app.result_checks.max_result_bytes`), and a message announcing more is
refused before its buffer is allocated.

Dask's TCP and TLS comms read a message's length, then allocate it
(``distributed.comm.tcp.read_bytes_rw``) and its frames' (``unpack_frames``); a frame
the sender marked compressed is then inflated as the sender says
(``distributed.protocol.compression``), whatever this process's own configuration:
zlib frames are inflated at most to the bound; a frame of another codec (lz4, snappy,
zstd, when installed here) is checked once inflated.
"""

import asyncio
import contextlib
import threading
import zlib


@contextlib.contextmanager
def bounded_reads(client, limit, address):
    """For the run, a message to ``client`` (read on its event loop) that announces more
    than ``limit`` bytes is refused before it is allocated, and no message is inflated
    past ``limit`` bytes (module docstring).

    Parameters
    ----------
    client : distributed.Client
    limit : int or None
        None: nothing is bounded.
    address : str
        The cluster's, for the error text.

    Yields
    ------
    dict
        ``{"limit": limit, "sizes": [...]}``: the sizes refused (for the one line
        `ssgallery.app.parallel` gives, instead of the closed comm Dask reports).
    """
    refused = {"limit": limit, "sizes": []}
    if not limit:
        yield refused
        return
    from distributed import protocol
    from distributed.comm import tcp
    from distributed.protocol import compression

    loop, budget = client.loop.asyncio_loop, threading.local()

    def refuse(n):
        refused["sizes"].append(n)
        raise OSError(f"a message of {n} bytes from the Dask cluster at {address}")

    def check(n):
        try:
            ours = asyncio.get_running_loop() is loop
        except RuntimeError:
            ours = False
        if ours and n > limit:
            refuse(n)

    async def read_bytes(stream, n):
        check(n)
        return await saved["read"](stream, n)

    def unpack_frames(frames, *args, **kwargs):
        out = saved["unpack"](frames, *args, **kwargs)
        if kwargs.get("partial"):  # (frames, sizes of the buffers still to be read)
            check(len(frames) + sum(out[1]))
        return out

    def loads(*args, **kwargs):  # one message: one budget for what it inflates to
        budget.left = limit
        try:
            return saved["loads"](*args, **kwargs)
        finally:
            budget.left = None

    def inflate(name, decompress):
        def bounded(frame):
            left = getattr(budget, "left", None)
            if left is None:
                return decompress(frame)
            if name == "zlib":
                inflater = zlib.decompressobj()
                out = inflater.decompress(frame, left + 1)
            else:
                out = decompress(frame)
            if len(out) > left:
                refuse(limit - left + len(out))
            budget.left = left - len(out)
            return out
        return bounded

    saved = {"read": tcp.read_bytes_rw, "unpack": tcp.unpack_frames,
             "loads": protocol.loads, "codecs": dict(compression.compressions)}
    tcp.read_bytes_rw, tcp.unpack_frames, protocol.loads = read_bytes, unpack_frames, loads
    for key, codec in saved["codecs"].items():
        if codec.name is not None:  # not the identity of uncompressed frames
            compression.compressions[key] = codec._replace(
                decompress=inflate(codec.name, codec.decompress))
    try:
        yield refused
    finally:
        tcp.read_bytes_rw, tcp.unpack_frames = saved["read"], saved["unpack"]
        protocol.loads = saved["loads"]
        compression.compressions.update(saved["codecs"])
