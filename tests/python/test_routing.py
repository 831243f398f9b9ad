"""Prefix-affinity routing (kite.routing, used by kite.ray's request router) without Ray: a
prefix returns to the replica that served it, a new one goes to the least loaded replica, an
overloaded or departed replica is passed over, and the affinity text of chat and completion
bodies keeps a conversation's turns on one key."""

import pytest

from kite.routing import PrefixAffinity, affinity_text

SYSTEM = "You are a helpful assistant. Answer briefly. " * 4


def test_prefix_returns_to_the_replica_that_served_it():
    table = PrefixAffinity(prefix_chars=64)
    loads = {"a": 0, "b": 0, "c": 0}
    key = table.key(SYSTEM + "What is 2+2?")
    first = table.choose(key, loads)[0]
    table.routed(key, first)
    # Another question behind the same system prompt: same key, same replica, even when that
    # replica is now busier than the others (within the slack).
    other = table.key(SYSTEM + "Name a river.")
    assert other == key
    assert table.choose(other, {**loads, first: 5})[0] == first


def test_new_prefix_goes_to_the_least_loaded():
    table = PrefixAffinity(prefix_chars=16)
    loads = {"a": 3, "b": 1, "c": 2}
    assert [table.choose(table.key(f"{i:04d} fresh"), loads)[0] for i in range(20)] == ["b"] * 20
    # Among equally loaded replicas the prefix's rendezvous hash decides: they all get some.
    even = {"a": 0, "b": 0, "c": 0}
    picks = [table.choose(table.key(f"{i:04d} prefix"), even)[0] for i in range(300)]
    assert min(picks.count(r) for r in even) > 60


def test_overloaded_or_departed_replica_is_passed_over():
    table = PrefixAffinity(prefix_chars=8, slack=2)
    key = table.key("same prefix for everyone")
    table.routed(key, "a")
    assert table.choose(key, {"a": 2, "b": 0})[0] == "a"
    assert table.choose(key, {"a": 3, "b": 0}) == ["b", "a"]
    table.forget("a")
    assert table.owner(key) is None
    assert table.choose(key, {"b": 1, "c": 0})[0] == "c"
    assert table.choose(key, {}) == []


def test_table_is_bounded():
    table = PrefixAffinity(prefix_chars=8, capacity=10)
    for i in range(25):
        table.routed(table.key(f"{i:08d}"), "a")
    assert table.owners() == {"a": 10}
    assert table.owner(table.key(f"{24:08d}")) == "a"
    assert table.owner(table.key(f"{0:08d}")) is None
    with pytest.raises(ValueError, match="prefix_chars"):
        PrefixAffinity(prefix_chars=0)


def test_affinity_text_of_requests():
    turn1 = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]
    turn2 = turn1 + [{"content": "Hello!", "role": "assistant"},
                     {"role": "user", "content": "Bye"}]
    path = "/v1/chat/completions"
    # A later turn starts with the earlier one (whatever the key order of its messages).
    assert affinity_text(path, {"messages": turn2}).startswith(
        affinity_text(path, {"messages": turn1}))
    assert affinity_text("/v1/completions", {"prompt": "abc"}) == "abc"
    assert affinity_text("/v1/completions", {"prompt": ["abc", "def"]}) == "abc"
    assert affinity_text("/v1/completions", {"prompt": [1, 2, 3]}) == "[1, 2, 3]"
    assert affinity_text(path, {"messages": "not a list"}) == ""
    assert affinity_text(path, []) == ""
