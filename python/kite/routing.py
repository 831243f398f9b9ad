"""Prefix-affinity routing: requests whose prompts begin alike go to the replica that served that
beginning before, whose engine then finds it in its prefix cache instead of computing it again;
a prefix not seen yet goes to the least loaded replica.

The table remembers which replica each prefix (a hash of the request's first ``prefix_chars``
characters) was sent to. A remembered replica already holding ``slack`` more requests than the
least loaded one is passed over, so one hot prefix cannot starve the others; ties between
equally loaded replicas break by rendezvous hashing of the prefix, so separate routers tend to
agree without sharing state. Replicas are named by strings (Ray's replica ids), so replicas
that come and go (autoscaling, a replacement for a dead one) need no renumbering.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional


def affinity_text(path: str, body: Any) -> str:
    """The text whose beginning identifies a request's reusable prefix: a completion's prompt,
    a chat's messages as role and content in order ("" when the request names neither)."""
    if not isinstance(body, dict):
        return ""
    if path.endswith("/chat/completions"):
        messages = body.get("messages")
        if not isinstance(messages, list):
            return ""
        return "".join(_message_text(m) for m in messages)
    prompt = body.get("prompt")
    # A batch of prompts (strings or token lists) goes where its first one's prefix is.
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if prompt is None:
        return ""
    return prompt if isinstance(prompt, str) else json.dumps(prompt)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return json.dumps(message)
    content = message.get("content")
    if not isinstance(content, str):
        # Parts or tool calls: a stable text of them (the key order is fixed).
        content = json.dumps(content, sort_keys=True)
    return f"<{message.get('role')}>{content}\n"


class PrefixAffinity:
    def __init__(self, prefix_chars: int = 256, slack: int = 8, capacity: int = 100_000) -> None:
        if prefix_chars < 1:
            raise ValueError(f"prefix_chars must be at least 1, not {prefix_chars}")
        self.prefix_chars = prefix_chars
        self.slack = slack
        self.capacity = capacity
        self._owner: "OrderedDict[bytes, str]" = OrderedDict()
        self._lock = threading.Lock()

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(text[: self.prefix_chars].encode(), digest_size=16).digest()

    def choose(self, key: bytes, loads: Mapping[str, int]) -> List[str]:
        """The replicas in order of preference for a request with this key, given each
        candidate's requests in flight: its remembered replica first unless overloaded,
        then the least loaded ones."""
        if not loads:
            return []
        least = min(loads.values())

        def rank(name: str):
            weight = hashlib.blake2b(key + name.encode(), digest_size=8).digest()
            return (loads[name], -int.from_bytes(weight, "little"))

        order = sorted(loads, key=rank)
        with self._lock:
            owner = self._owner.get(key)
        if owner in loads and loads[owner] <= least + self.slack:
            order.remove(owner)
            order.insert(0, owner)
        return order

    def routed(self, key: bytes, replica: str) -> None:
        """Remembers that this key's prefix is now cached on `replica`."""
        with self._lock:
            self._owner[key] = replica
            self._owner.move_to_end(key)
            while len(self._owner) > self.capacity:
                self._owner.popitem(last=False)

    def forget(self, replica: str) -> None:
        """Drops a replica that is gone (its cache went with it)."""
        with self._lock:
            for key in [k for k, r in self._owner.items() if r == replica]:
                del self._owner[key]

    def owner(self, key: bytes) -> Optional[str]:
        with self._lock:
            return self._owner.get(key)

    def owners(self) -> Dict[str, int]:
        """How many remembered prefixes each replica holds."""
        with self._lock:
            counts: Dict[str, int] = {}
            for r in self._owner.values():
                counts[r] = counts.get(r, 0) + 1
            return counts
