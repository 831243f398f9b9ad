"""kite.ray's two deployments: KiteReplica (one `kite serve` pinned to its CPUs, reached over
127.0.0.1) and KiteIngress (the OpenAI-compatible HTTP entry behind Ray Serve's proxy).

A request's path: Ray's proxy -> KiteIngress, which reads the body and derives its prefix key
-> KiteReplica.forward on the replica PrefixAffinityRouter picks -> that replica's kite serve.
The replica streams the answer back in the pieces kite serve writes (several tokens' events
coalesce into one piece when they arrive together).

Failures: a replica whose kite serve is unreachable, or answers 503 (stopping, full), or that
Ray reports dead, fails the request *before anything was sent to the client*; the ingress then
sends it to another replica, until `retry_timeout_s` passes (then one 503 naming the cause).
A stream that breaks after its first bytes ends with an error event and [DONE], as kite serve
itself ends a stream it must stop. A replica whose kite serve exited fails Ray's health check,
and Ray replaces it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, AsyncIterator, Dict, List, Optional

import httpx
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from kite._serve_process import CpuClaim, KiteServeProcess
from kite.routing import PrefixAffinity, affinity_text

# Paths whose answer depends on the prompt's prefix: these carry an affinity key.
_PREFIX_PATHS = ("/v1/chat/completions", "/v1/completions")
_FORWARDED_HEADERS = ("content-type", "accept")
# How a ReplicaUnavailable names its replica (it reaches the ingress as text in Ray's error).
_UNAVAILABLE = re.compile(r"replica (\S+): kite serve")


class ReplicaUnavailable(RuntimeError):
    """This replica could not take the request (its kite serve is gone or refused it)."""


class KiteReplica:
    def __init__(self, kite_bin: str, threads: int, serve_args: List[str]) -> None:
        self.claim = CpuClaim(threads)
        self.server = KiteServeProcess(kite_bin, ["-t", str(threads), *serve_args],
                                       self.claim.cpus)
        context = serve.get_replica_context()
        self.name = context.replica_id.unique_id
        self.client = httpx.AsyncClient(
            base_url=self.server.url,
            timeout=httpx.Timeout(None, connect=5.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self.info = {"x-kite-replica": self.name, "x-kite-replica-url": self.server.url,
                     "x-kite-replica-pid": str(self.server.pid)}

    async def forward(self, method: str, path: str, headers: Dict[str, str], body: bytes,
                      key: Optional[bytes] = None,
                      avoid: Optional[List[str]] = None) -> AsyncIterator[Any]:
        """Yields (status, headers, first body bytes), then the rest of the body in pieces.
        `key` and `avoid` are for PrefixAffinityRouter, which reads them before the call."""
        request = self.client.build_request(method, path, headers=headers, content=body)
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TransportError as e:
            raise ReplicaUnavailable(f"replica {self.name}: kite serve unreachable ({e!r})")
        try:
            if response.status_code == 503:
                await response.aread()
                raise ReplicaUnavailable(f"replica {self.name}: kite serve answered 503 "
                                         f"({response.text[:200]})")
            head = {**self.info, "content-type": response.headers.get("content-type", "")}
            pieces = response.aiter_raw()
            if not head["content-type"].startswith("text/event-stream"):
                try:
                    body_bytes = await response.aread()
                except httpx.TransportError as e:
                    raise ReplicaUnavailable(f"replica {self.name}: kite serve broke off ({e!r})")
                yield response.status_code, head, body_bytes
                return
            try:
                first = await pieces.__anext__()
            except (httpx.TransportError, StopAsyncIteration) as e:
                raise ReplicaUnavailable(f"replica {self.name}: kite serve broke off ({e!r})")
            yield response.status_code, head, first
            async for piece in pieces:
                yield piece
        finally:
            await response.aclose()

    def check_health(self) -> None:
        status = self.server.exit_status()
        if status is not None:
            raise RuntimeError(f"replica {self.name}: kite serve exited with status {status}")

    def __del__(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        claim = getattr(self, "claim", None)
        if claim is not None:
            claim.release()


class KiteIngress:
    def __init__(self, replicas: Any, prefix_chars: int, retry_timeout_s: float) -> None:
        self.replicas = replicas.options(stream=True, method_name="forward")
        self.keys = PrefixAffinity(prefix_chars=prefix_chars)
        self.retry_timeout_s = retry_timeout_s

    async def __call__(self, request: Request) -> Response:
        body = await request.body()
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        headers = {h: request.headers[h] for h in _FORWARDED_HEADERS if h in request.headers}
        key = self._key(request.url.path, body)
        deadline = time.monotonic() + self.retry_timeout_s
        attempt = 0
        avoid: List[str] = []  # replicas that failed this request: the router passes them over
        while True:
            stream = self.replicas.remote(request.method, path, headers, body, key=key,
                                          avoid=avoid)
            try:
                status, head, first = await stream.__anext__()
            except asyncio.CancelledError:
                stream.cancel()
                raise
            except Exception as e:  # a dead or refusing replica: try another until the deadline
                stream.cancel()
                if time.monotonic() >= deadline:
                    return _error(503, f"no kite replica could answer within "
                                       f"{self.retry_timeout_s:.0f} s (last: {_cause(e)})")
                failed = _UNAVAILABLE.search(str(e))
                if failed:
                    avoid.append(failed.group(1))
                attempt += 1
                await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
                continue
            out_headers = {k: v for k, v in head.items() if k != "content-type"}
            if not head["content-type"].startswith("text/event-stream"):
                return Response(first, status_code=status, headers=out_headers,
                                media_type=head["content-type"] or None)
            return StreamingResponse(_relay(first, stream, head["x-kite-replica"]),
                                     status_code=status, headers=out_headers,
                                     media_type="text/event-stream")

    def _key(self, path: str, body: bytes) -> Optional[bytes]:
        if path not in _PREFIX_PATHS:
            return None
        try:
            text = affinity_text(path, json.loads(body))
        except ValueError:
            return None  # kite serve answers the bad JSON with its 400
        return self.keys.key(text) if text else None


async def _relay(first: bytes, stream: Any, replica: str) -> AsyncIterator[bytes]:
    yield first
    try:
        async for piece in stream:
            yield piece
    except asyncio.CancelledError:
        stream.cancel()
        raise
    except Exception as e:
        # Bytes already reached the client: the stream cannot move to another replica.
        error = {"error": {"message": f"kite replica {replica} failed mid-stream: {_cause(e)}",
                           "type": "server_error", "code": 503}}
        yield f"data: {json.dumps(error)}\n\ndata: [DONE]\n\n".encode()


def _cause(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "server_error", "code": status}},
                        status_code=status)
