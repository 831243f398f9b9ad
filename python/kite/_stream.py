"""Streams: the pieces of one generation, as an iterator and for asyncio."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, AsyncIterator, Iterator, Optional, Tuple

from . import _kite

if TYPE_CHECKING:
    from ._llm import LLM


class TextStream(Iterator[str]):
    """The text of one generation, piece by piece. Steps the engine (every sequence it runs)
    as it is read; close() (or leaving a ``with`` block, or dropping it) cancels the rest.
    ``finish_reason`` is set once it ends."""

    def __init__(self, llm: "LLM", seq_id: int) -> None:
        self._llm = llm
        self._seq_id = seq_id
        self._done = False
        self.finish_reason: Optional[str] = None

    def __iter__(self) -> "TextStream":
        return self

    def __next__(self) -> str:
        while not self._done:
            try:
                ev = self._llm._next_event(self._seq_id)
            except BaseException:
                self.close()  # Ctrl-C, a closed LLM: the request goes with the stream
                raise
            if ev.finish:
                self.close()
                if ev.finish == "error":
                    raise _kite.KiteError(
                        "generation stopped: the model produced non-finite logits"
                    )
                self.finish_reason = ev.finish
            if ev.text:
                return ev.text
        raise StopIteration

    def close(self) -> None:
        """Cancels the generation if it is still running (idempotent)."""
        if not self._done:
            self._done = True
            self._llm._cancel(self._seq_id)

    def __enter__(self) -> "TextStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # the LLM may be gone at interpreter exit
            pass


async def astream_pieces(stream: TextStream) -> AsyncIterator[str]:
    """The pieces of `stream`, read in a worker thread (the engine releases the GIL while it
    computes, so the event loop keeps running) and handed over through an asyncio queue."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Tuple[Optional[str], Optional[BaseException]]]" = asyncio.Queue()
    stop = threading.Event()

    def put(item: Tuple[Optional[str], Optional[BaseException]]) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop closed: nobody is listening any more
            stop.set()

    def work() -> None:
        try:
            for piece in stream:
                if stop.is_set():
                    break
                put((piece, None))
            put((None, None))
        except BaseException as e:  # handed to the awaiting task
            put((None, e))
        finally:
            stream.close()

    threading.Thread(target=work, name="kite-astream", daemon=True).start()
    try:
        while True:
            piece, error = await queue.get()
            if error is not None:
                raise error
            if piece is None:
                return
            yield piece
    finally:
        stop.set()
