"""kite.ray's replica deployment: KiteReplica, one `kite serve` pinned to its CPUs.

Its kite serve listens on the replica's node address, and the replica announces itself (name,
URL, pid) to the ingress every second while that kite serve lives (kite._ray_ingress). Two
data paths reach it: the ingress's own HTTP connection to that URL (the default: Ray's proxy
is the only hop beside HTTP), or, under Ray's autoscaling, KiteReplica.forward through Ray's
handle, so that Ray counts each replica's requests (PrefixAffinityRouter picks the replica).
A replica whose kite serve exited fails Ray's health check, and Ray replaces it; a replica
process that dies takes its kite serve with it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, AsyncIterator, Dict, List, Optional

import aiohttp
from ray import serve

from kite._serve_process import CpuClaim, KiteServeProcess


class ReplicaUnavailable(RuntimeError):
    """This replica could not take the request (its kite serve is gone or refused it)."""


class KiteReplica:
    def __init__(self, kite_bin: str, threads: int, serve_args: List[str],
                 ingress_name: str) -> None:
        import ray

        self.claim = CpuClaim(threads)
        # The node's address, not loopback: the ingress may run on another node.
        self.server = KiteServeProcess(kite_bin, ["-t", str(threads), *serve_args],
                                       self.claim.cpus, host=ray.util.get_node_ip_address())
        context = serve.get_replica_context()
        self.name = context.replica_id.unique_id
        self.ingress = serve.get_deployment_handle(ingress_name, app_name=context.app_name)
        threading.Thread(target=self._announce, daemon=True, name="kite-announce").start()
        self.session: Optional[aiohttp.ClientSession] = None  # made in the event loop
        self.info = {"x-kite-replica": self.name, "x-kite-replica-url": self.server.url,
                     "x-kite-replica-pid": str(self.server.pid)}

    async def forward(self, method: str, path: str, headers: Dict[str, str], body: bytes,
                      key: Optional[bytes] = None,
                      avoid: Optional[List[str]] = None) -> AsyncIterator[Any]:
        """Yields (status, headers, first body bytes), then the rest of the body in pieces.
        `key` and `avoid` are for PrefixAffinityRouter, which reads them before the call."""
        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=5.0),
                connector=aiohttp.TCPConnector(limit=0), auto_decompress=False)
        try:
            response = await self.session.request(method, self.server.url + path,
                                                  headers=headers, data=body)
        except aiohttp.ClientError as e:
            raise ReplicaUnavailable(f"replica {self.name}: kite serve unreachable ({e!r})")
        try:
            if response.status == 503:
                raise ReplicaUnavailable(f"replica {self.name}: kite serve answered 503")
            head = {**self.info, "content-type": response.headers.get("content-type", "")}
            try:
                if not head["content-type"].startswith("text/event-stream"):
                    yield response.status, head, await response.read()
                    return
                pieces = response.content.iter_any().__aiter__()
                first = await pieces.__anext__()
            except (aiohttp.ClientError, StopAsyncIteration) as e:
                raise ReplicaUnavailable(f"replica {self.name}: kite serve broke off ({e!r})")
            yield response.status, head, first
            tail = first[-64:]
            async for piece in pieces:
                tail = (tail + piece)[-64:]
                yield piece
            if not tail.rstrip().endswith(b"data: [DONE]"):
                raise RuntimeError(f"replica {self.name}: kite serve ended the stream early")
        finally:
            response.release()

    def _announce(self) -> None:
        """Tells the ingress this replica's kite serve every second while it lives."""
        info = {"name": self.name, "url": self.server.url, "pid": self.server.pid}
        while self.server.exit_status() is None:
            try:
                self.ingress.register.remote(info).result(timeout_s=10)
            except Exception:  # the ingress is starting or being replaced: try again
                pass
            time.sleep(1.0)

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
