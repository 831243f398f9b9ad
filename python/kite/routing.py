"""Prefix-affinity routing: requests whose prompts begin alike go to the same replica, whose
engine then finds that prefix in its prefix cache instead of computing it again.

Rendezvous (highest random weight) hashing of the prompt's first ``prefix_chars`` characters
picks a replica; every router agrees without sharing state, and adding a replica moves only
the prefixes it wins. A replica already holding ``slack`` more requests than the least loaded
one is passed over for the next choice, so one hot prefix cannot starve the others.
"""

from __future__ import annotations

import hashlib
import threading
from typing import List


class PrefixRouter:
    def __init__(self, replicas: int, prefix_chars: int = 256, slack: int = 8) -> None:
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, not {replicas}")
        self.replicas = replicas
        self.prefix_chars = prefix_chars
        self.slack = slack
        self._in_flight = [0] * replicas
        self._lock = threading.Lock()

    def ranking(self, prompt: str) -> List[int]:
        """Replica indices in this prompt's order of preference (its prefix decides)."""
        key = prompt[: self.prefix_chars].encode()

        def weight(i: int) -> bytes:
            return hashlib.blake2b(key + i.to_bytes(4, "little"), digest_size=8).digest()

        return sorted(range(self.replicas), key=weight, reverse=True)

    def acquire(self, prompt: str) -> int:
        """The replica for a request (counted as in flight until release)."""
        with self._lock:
            least = min(self._in_flight)
            for i in self.ranking(prompt):
                if self._in_flight[i] <= least + self.slack:
                    self._in_flight[i] += 1
                    return i
            raise AssertionError("unreachable: the least loaded replica always qualifies")

    def release(self, replica: int) -> None:
        with self._lock:
            self._in_flight[replica] -= 1

    def in_flight(self) -> List[int]:
        with self._lock:
            return list(self._in_flight)
