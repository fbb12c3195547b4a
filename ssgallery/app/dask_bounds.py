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
    bounds = _Bounds(client.loop.asyncio_loop, limit, address, refused)
    bounds.install()
    try:
        yield refused
    finally:
        bounds.restore()


class _Bounds:
    """`bounded_reads`' replacements of Dask's readers (``read_bytes``, ``unpack_frames``,
    ``loads``, each codec's ``decompress``), the originals they call (``saved``) and the
    budget of the message being inflated (per thread)."""

    def __init__(self, loop, limit, address, refused):
        self.loop, self.limit, self.address, self.refused = loop, limit, address, refused
        self.budget = threading.local()
        self.saved = None

    def install(self):
        """Put the replacements in place (the originals in ``saved``)."""
        from distributed import protocol
        from distributed.comm import tcp
        from distributed.protocol import compression

        self.saved = {"read": tcp.read_bytes_rw, "unpack": tcp.unpack_frames,
                      "loads": protocol.loads, "codecs": dict(compression.compressions)}
        tcp.read_bytes_rw, tcp.unpack_frames = self.read_bytes, self.unpack_frames
        protocol.loads = self.loads
        for key, codec in self.saved["codecs"].items():
            if codec.name is not None:  # not the identity of uncompressed frames
                compression.compressions[key] = codec._replace(
                    decompress=self.inflate(codec.name, codec.decompress))

    def restore(self):
        """Put Dask's originals back."""
        from distributed import protocol
        from distributed.comm import tcp
        from distributed.protocol import compression

        saved = self.saved
        tcp.read_bytes_rw, tcp.unpack_frames = saved["read"], saved["unpack"]
        protocol.loads = saved["loads"]
        compression.compressions.update(saved["codecs"])

    def refuse(self, n):
        """Record the size ``n`` refused and raise (Dask closes the comm)."""
        self.refused["sizes"].append(n)
        raise OSError(f"a message of {n} bytes from the Dask cluster at {self.address}")

    def check(self, n):
        """Refuse ``n`` bytes over the limit, when read on the client's event loop."""
        try:
            ours = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            ours = False
        if ours and n > self.limit:
            self.refuse(n)

    async def read_bytes(self, stream, n):
        """``tcp.read_bytes_rw``: the length checked before the buffer is allocated."""
        self.check(n)
        return await self.saved["read"](stream, n)

    def unpack_frames(self, frames, *args, **kwargs):
        """``tcp.unpack_frames``: the frames' announced sizes checked."""
        out = self.saved["unpack"](frames, *args, **kwargs)
        if kwargs.get("partial"):  # (frames, sizes of the buffers still to be read)
            self.check(len(frames) + sum(out[1]))
        return out

    def loads(self, *args, **kwargs):
        """``protocol.loads``: one message, one budget for what it inflates to."""
        self.budget.left = self.limit
        try:
            return self.saved["loads"](*args, **kwargs)
        finally:
            self.budget.left = None

    def inflate(self, name, decompress):
        """The codec ``name``'s ``decompress`` within the message's budget (zlib inflated
        at most to it, another codec checked once inflated)."""
        budget, limit = self.budget, self.limit

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
                self.refuse(limit - left + len(out))
            budget.left = left - len(out)
            return out
        return bounded
