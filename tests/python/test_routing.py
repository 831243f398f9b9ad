"""Prefix-affinity routing (kite.routing, used by kite.ray) without Ray: equal prefixes pick
one replica, different ones spread, and a loaded replica is passed over."""

import pytest

from kite.routing import PrefixRouter


def test_same_prefix_same_replica():
    router = PrefixRouter(4, prefix_chars=32)
    system = "You are a helpful assistant. Answer briefly."
    first = router.ranking(system + " What is 2+2?")[0]
    assert all(router.ranking(system + f" Question {i}?")[0] == first for i in range(20))
    # Another router (another ingress replica) agrees without sharing state.
    assert PrefixRouter(4, prefix_chars=32).ranking(system)[0] == first


def test_prefixes_spread_over_replicas():
    router = PrefixRouter(4, prefix_chars=16)
    picks = [router.ranking(f"{i:04d} distinct prefix")[0] for i in range(200)]
    counts = [picks.count(r) for r in range(4)]
    assert min(counts) > 25, counts


def test_loaded_replica_is_passed_over():
    router = PrefixRouter(3, prefix_chars=8, slack=2)
    prompt = "same prefix for everyone"
    taken = [router.acquire(prompt) for _ in range(9)]
    # The favourite runs up to slack ahead of the least loaded; then the others take turns.
    assert set(taken) == {0, 1, 2}
    assert max(router.in_flight()) - min(router.in_flight()) <= router.slack + 1
    for r in taken:
        router.release(r)
    assert router.in_flight() == [0, 0, 0]
    with pytest.raises(ValueError):
        PrefixRouter(0)
