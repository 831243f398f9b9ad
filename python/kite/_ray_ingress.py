"""kite.ray's ingress: the OpenAI-compatible HTTP entry behind Ray Serve's proxy.

It reads each request's body, derives its prefix key (kite.routing.affinity_text of the first
--prefix-chars characters) and sends it to a replica's kite serve, on one of two paths:
- direct (fixed --replicas, the default): its own HTTP connection to the URL each replica
  announces (register); the ingress counts each replica's requests in flight and picks with
  PrefixAffinity. Ray's proxy is then the only hop beside HTTP.
- through Ray (under autoscaling): KiteReplica.forward on Ray's handle, PrefixAffinityRouter
  picking, so that Ray sees every replica's load (one more Ray hop per request and piece).

Failures: a replica that cannot take the request (kite serve unreachable, or answering 503:
stopping, or full), or that Ray reports dead, fails it *before anything was sent to the
client*; the ingress then sends it to another replica, passing over the failed ones, until
`retry_timeout_s` passes (then one 503 naming the cause). A stream that breaks after its first
bytes ends with an error event and [DONE], as kite serve itself ends a stream it must stop.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, AsyncIterator, Dict, List, Optional

import aiohttp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from kite.routing import PrefixAffinity, affinity_text

# Paths whose answer depends on the prompt's prefix: these carry an affinity key.
_PREFIX_PATHS = ("/v1/chat/completions", "/v1/completions")
_FORWARDED_HEADERS = ("content-type", "accept")
# How a ReplicaUnavailable names its replica (it reaches the ingress as text in Ray's error).
_UNAVAILABLE = re.compile(r"replica (\S+): kite serve")
# A replica not heard from for this long is gone (it announces itself every second).
_ANNOUNCE_EXPIRY_S = 5.0


class Unavailable(Exception):
    def __init__(self, replica: Optional[str], message: str) -> None:
        super().__init__(message)
        self.replica = replica


class KiteIngress:
    def __init__(self, replicas: Any, prefix_chars: int, retry_timeout_s: float,
                 through_ray: bool) -> None:
        self.through_ray = through_ray
        self.forward = replicas.options(stream=True, method_name="forward")
        self.affinity = PrefixAffinity(prefix_chars=prefix_chars)
        self.retry_timeout_s = retry_timeout_s
        self.replicas: Dict[str, Dict[str, Any]] = {}  # name -> url, pid, last announced
        self.in_flight: Dict[str, int] = {}
        self.failed_at: Dict[str, float] = {}
        # aiohttp: ray[serve] depends on it already (httpx, timed the same here, it does not).
        self.session: Optional[aiohttp.ClientSession] = None

    def register(self, info: Dict[str, Any]) -> None:
        """A replica's announcement: its name, kite serve URL and pid."""
        name = info["name"]
        if time.monotonic() - self.failed_at.get(name, -1e9) < _ANNOUNCE_EXPIRY_S:
            return  # it just failed a request: gone (Ray replaces it) or full for a moment
        self.replicas[name] = {**info, "seen": time.monotonic()}
        self.in_flight.setdefault(name, 0)

    async def __call__(self, request: Request) -> Response:
        if request.url.path == "/kite/replicas":
            return JSONResponse(self.listing())
        body = await request.body()
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        headers = {h: request.headers[h] for h in _FORWARDED_HEADERS if h in request.headers}
        key = self._key(request.url.path, body)
        send = self._through_ray if self.through_ray else self._direct
        deadline = time.monotonic() + self.retry_timeout_s
        avoid: List[str] = []
        attempt = 0
        while True:
            try:
                return await send(request.method, path, headers, body, key, avoid)
            except Unavailable as e:
                if e.replica:
                    avoid.append(e.replica)
                if time.monotonic() >= deadline:
                    return _error(503, f"no kite replica could answer within "
                                       f"{self.retry_timeout_s:.0f} s (last: {e})")
                attempt += 1
                await asyncio.sleep(min(0.02 * 2 ** attempt, 1.0))

    def _key(self, path: str, body: bytes) -> Optional[bytes]:
        if path not in _PREFIX_PATHS:
            return None
        try:
            text = affinity_text(path, json.loads(body))
        except ValueError:
            return None  # kite serve answers the bad JSON with its 400
        return self.affinity.key(text) if text else None

    # The direct path.

    def _expire(self) -> None:
        now = time.monotonic()
        for name in [n for n, r in self.replicas.items() if now - r["seen"] > _ANNOUNCE_EXPIRY_S]:
            self._drop(name)

    def _pick(self, key: Optional[bytes], avoid: List[str]) -> Optional[str]:
        self._expire()
        loads = {n: self.in_flight.get(n, 0) for n in self.replicas if n not in avoid}
        if not loads:
            return None
        if key is None:
            return min(loads, key=loads.get)
        return self.affinity.choose(key, loads)[0]

    def _drop(self, name: str) -> None:
        self.replicas.pop(name, None)
        self.affinity.forget(name)

    def _failed(self, name: str, why: str) -> Unavailable:
        self.failed_at[name] = time.monotonic()
        self._drop(name)
        return Unavailable(name, f"replica {name}: {why}")

    def listing(self) -> Dict[str, Any]:
        """GET /kite/replicas: the replicas announced (direct path), with their requests."""
        self._expire()
        now = time.monotonic()
        return {name: {"url": r["url"], "pid": r["pid"], "in_flight": self.in_flight.get(name, 0),
                       "announced_s_ago": round(now - r["seen"], 1)}
                for name, r in self.replicas.items()}

    async def _direct(self, method: str, path: str, headers: Dict[str, str], body: bytes,
                      key: Optional[bytes], avoid: List[str]) -> Response:
        name = self._pick(key, avoid)
        if name is None:
            raise Unavailable(None, f"no replica has announced itself ({len(avoid)} failed)")
        replica = self.replicas[name]
        self.in_flight[name] = self.in_flight.get(name, 0) + 1
        try:
            response, pieces, first = await self._open(name, method, replica["url"] + path,
                                                       headers, body)
        except BaseException:
            self._release(name)
            raise
        if key is not None:
            self.affinity.routed(key, name)
        out = {"x-kite-replica": name, "x-kite-replica-url": replica["url"],
               "x-kite-replica-pid": str(replica["pid"])}
        if pieces is None:  # a whole answer, already read
            self._release(name)
            return Response(first, status_code=response.status, headers=out,
                            media_type=response.headers.get("content-type") or None)

        async def relay() -> AsyncIterator[bytes]:
            tail = first[-64:]
            try:
                yield first
                try:
                    async for piece in pieces:
                        tail = (tail + piece)[-64:]
                        yield piece
                except aiohttp.ClientError as e:
                    self._failed(name, f"kite serve broke off ({e!r})")
                    yield _stream_error(name, repr(e))
                    return
                if not tail.rstrip().endswith(b"data: [DONE]"):
                    # The connection closed cleanly but early: as much a failure.
                    self._failed(name, "kite serve ended the stream early")
                    yield _stream_error(name, "the stream ended before [DONE]")
            finally:
                self._release(name)
                await _close(response)

        return StreamingResponse(relay(), status_code=response.status, headers=out,
                                 media_type="text/event-stream")

    async def _open(self, name: str, method: str, url: str, headers: Dict[str, str],
                    body: bytes):
        """(response, None, whole body) for a JSON answer; (response, the rest of its pieces,
        the first piece) for a stream. Unavailable before anything was read."""
        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=5.0),
                connector=aiohttp.TCPConnector(limit=0), auto_decompress=False)
        try:
            response = await self.session.request(method, url, headers=headers, data=body)
        except aiohttp.ClientError as e:
            raise self._failed(name, f"kite serve unreachable ({e!r})")
        try:
            if response.status == 503:
                raise self._failed(name, "kite serve answered 503")
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                content = await response.read()
                await _close(response)
                return response, None, content
            pieces = response.content.iter_any().__aiter__()
            return response, pieces, await pieces.__anext__()
        except (aiohttp.ClientError, StopAsyncIteration) as e:
            await _close(response)
            raise self._failed(name, f"kite serve broke off ({e!r})")
        except BaseException:
            await _close(response)
            raise

    def _release(self, name: str) -> None:
        self.in_flight[name] = max(0, self.in_flight.get(name, 0) - 1)

    # The path through Ray's handles (autoscaling).

    async def _through_ray(self, method: str, path: str, headers: Dict[str, str], body: bytes,
                           key: Optional[bytes], avoid: List[str]) -> Response:
        stream = self.forward.remote(method, path, headers, body, key=key, avoid=avoid)
        try:
            status, head, first = await stream.__anext__()
        except asyncio.CancelledError:
            stream.cancel()
            raise
        except Exception as e:  # a dead or refusing replica
            stream.cancel()
            failed = _UNAVAILABLE.search(str(e))
            raise Unavailable(failed.group(1) if failed else None, _cause(e))
        out = {k: v for k, v in head.items() if k != "content-type"}
        if not head["content-type"].startswith("text/event-stream"):
            return Response(first, status_code=status, headers=out,
                            media_type=head["content-type"] or None)

        async def relay() -> AsyncIterator[bytes]:
            yield first
            try:
                async for piece in stream:
                    yield piece
            except asyncio.CancelledError:
                stream.cancel()
                raise
            except Exception as e:
                yield _stream_error(head["x-kite-replica"], _cause(e))

        return StreamingResponse(relay(), status_code=status, headers=out,
                                 media_type="text/event-stream")


async def _close(response: aiohttp.ClientResponse) -> None:
    response.release()


def _stream_error(replica: str, cause: str) -> bytes:
    """The end of a stream whose replica failed after its first bytes reached the client: it
    cannot move to another replica."""
    error = {"error": {"message": f"kite replica {replica} failed mid-stream: {cause}",
                       "type": "server_error", "code": 503}}
    return f"data: {json.dumps(error)}\n\ndata: [DONE]\n\n".encode()


def _cause(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "server_error", "code": status}},
                        status_code=status)
