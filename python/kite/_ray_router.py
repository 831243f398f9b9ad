"""Ray Serve's request router for kite.ray's replicas: prefix affinity (kite.routing) on top of
Ray's own replica tracking, queue-length probing and back-off.

It runs inside the ingress (the caller of the replicas' handle). Each request's affinity key
arrives as the `key` keyword of KiteReplica.forward; the replica it is routed to is remembered
for that key, and a replica Ray reports dead is forgotten, so its prefixes go elsewhere.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica

from kite.routing import PrefixAffinity


class PrefixAffinityRouter(RequestRouter):
    def initialize_state(self, prefix_chars: int = 256, slack: int = 8, **kwargs) -> None:
        self.affinity = PrefixAffinity(prefix_chars=prefix_chars, slack=slack)
        self._in_flight: Dict[str, int] = {}

    async def choose_replicas(
        self,
        candidate_replicas: List[RunningReplica],
        pending_request: Optional[PendingRequest] = None,
    ) -> List[List[RunningReplica]]:
        if not candidate_replicas:
            return []
        by_name = {r.replica_id.unique_id: r for r in candidate_replicas}
        # Replicas that already failed this request (their kite serve is gone; Ray replaces
        # them in a few seconds): last resort only, and their cached prefixes are forgotten.
        avoid = (pending_request.kwargs.get("avoid") or []) if pending_request else []
        for name in avoid:
            self.affinity.forget(name)
        if any(name not in avoid for name in by_name):
            by_name = {name: r for name, r in by_name.items() if name not in avoid}
        loads = {name: self._load(r) for name, r in by_name.items()}
        key = _key(pending_request)
        if key is None:
            order = sorted(loads, key=loads.get)
        else:
            order = self.affinity.choose(key, loads)
        # One rank per replica: Ray tries them in turn, skipping any at max_ongoing_requests.
        return [[by_name[name]] for name in order]

    def _load(self, replica: RunningReplica) -> int:
        """Requests in flight on a replica: Ray's queue-length cache (what its replica reported
        plus what this router sent since), else what this router counts itself."""
        cached = self.replica_queue_len_cache.get(replica.replica_id)
        if cached is not None:
            return cached
        return self._in_flight.get(replica.replica_id.unique_id, 0)

    def on_request_routed(self, pending_request: PendingRequest, replica_id, result) -> None:
        name = replica_id.unique_id
        self._in_flight[name] = self._in_flight.get(name, 0) + 1
        key = _key(pending_request)
        if key is not None:
            self.affinity.routed(key, name)

    def on_request_completed(self, replica_id, internal_request_id: str) -> None:
        name = replica_id.unique_id
        self._in_flight[name] = max(0, self._in_flight.get(name, 0) - 1)

    def on_replica_actor_died(self, replica_id) -> None:
        super().on_replica_actor_died(replica_id)
        self.affinity.forget(replica_id.unique_id)
        self._in_flight.pop(replica_id.unique_id, None)


def _key(pending_request: Optional[PendingRequest]) -> Optional[bytes]:
    if pending_request is None:
        return None
    key = pending_request.kwargs.get("key")
    return key if isinstance(key, bytes) and key else None
