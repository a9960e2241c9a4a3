"""Outages against a dedicated redis-server, started, killed, frozen and restarted in the test."""

import asyncio
import logging
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from _redis_server import RedisServer, running_redis

from guardrail.store import AuditEntry, CounterKey, ResilientStore, open_store

pytestmark = pytest.mark.redis

LOGGER = "guardrail.store"


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.fixture
async def store(server: RedisServer) -> AsyncIterator[ResilientStore]:
    store = open_store(
        server.url,
        socket_timeout=0.2,
        operation_timeout=0.3,
        probe_initial=0.05,
        probe_max=0.4,
    )
    assert isinstance(store, ResilientStore)
    yield store
    await store.aclose()


async def one_request(store: ResilientStore, n: int) -> None:
    """What the proxy does with the store on one request."""
    await store.hit_rate_limit("client", 10_000)
    await store.get_rewrite(f"k{n}")
    await store.set_rewrite(f"k{n}", "rewrite")
    await store.increment("requests")
    await store.append_audit(AuditEntry(time=float(n), key_id="key_x", model="m", action="pass"))


async def wait_until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records if r.name == LOGGER)


async def test_kill_degrades_then_restart_recovers(
    server: RedisServer, store: ResilientStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for n in range(3):
        await one_request(store, n)
    assert await store.counters() == {CounterKey("requests"): 3}
    assert not store.status().degraded

    server.kill()
    started = time.monotonic()
    for n in range(3, 23):
        await one_request(store, n)
    elapsed = time.monotonic() - started

    status = store.status()
    assert status.degraded and status.outages == 1
    assert status.degraded_operations >= 20 * 5 - 1
    assert status.last_error is not None
    assert warnings(caplog, "Redis unavailable") == 1
    assert elapsed < 3.0  # no per-call timeouts once degraded
    # Memory serves while Redis is down: caches work, totals never go backwards.
    assert await store.get_rewrite("k22") == "rewrite"
    assert await store.counters() == {CounterKey("requests"): 23}

    server.start()  # same port, empty: it had no persistence
    await wait_until(lambda: warnings(caplog, "Redis is back") == 1)  # hand-over done
    assert not store.status().degraded
    assert store.status().outages == 1

    # The 20 outage counts and audit entries were handed to the new server.
    raw = aioredis.Redis.from_url(server.url)
    try:
        assert await store.counters() == {CounterKey("requests"): 20}
        assert [e.time for e in await store.read_audit(100)] == [float(n) for n in range(3, 23)]
        await one_request(store, 23)
        field = CounterKey("requests").encode()
        assert await raw.hget("guardrail:counters", field) == b"21"
        assert await raw.get("guardrail:rewrite:k23") == b"rewrite"
    finally:
        await raw.aclose()
    assert warnings(caplog, "Redis unavailable") == 1


async def test_frozen_server_times_out_then_recovers(
    server: RedisServer, store: ResilientStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    await one_request(store, 0)
    server.signal(signal.SIGSTOP)  # accepts nothing, answers nothing: a hung Redis

    started = time.monotonic()
    await one_request(store, 1)
    first = time.monotonic() - started
    assert first < 0.3 + 0.5  # one operation timeout, then memory
    assert store.status().degraded
    assert "Timeout" in (store.status().last_error or "")

    started = time.monotonic()
    for n in range(2, 12):
        await one_request(store, n)
    assert time.monotonic() - started < 1.0

    server.signal(signal.SIGCONT)
    await wait_until(lambda: warnings(caplog, "Redis is back") == 1)  # hand-over done
    assert not store.status().degraded
    # Nothing was lost: the server kept its data and gained the outage counts.
    assert await store.counters() == {CounterKey("requests"): 12}
    assert warnings(caplog, "Redis unavailable") == 1
    assert warnings(caplog, "Redis is back") == 1


async def test_unreachable_at_start_still_serves(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = open_store(f"redis://127.0.0.1:{port}/0", probe_initial=0.05, probe_max=0.1)
    try:
        for n in range(5):
            await one_request(store, n)  # type: ignore[arg-type]
        # Rate limits still hold, per worker.
        assert (await store.hit_rate_limit("other", 1)).allowed
        verdict = await store.hit_rate_limit("other", 1)
        assert not verdict.allowed and 59 < verdict.retry_after <= 60
        assert store.status().degraded
        await asyncio.sleep(0.5)  # several probes fail quietly
        assert warnings(caplog, "Redis unavailable") == 1
    finally:
        await store.aclose()


async def test_bad_arguments_raise_instead_of_degrading(store: ResilientStore) -> None:
    with pytest.raises(TypeError, match="whole numbers"):
        await store.increment("requests", amount=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="requests per minute"):
        await store.hit_rate_limit("client", 0)
    assert not store.status().degraded


async def test_a_hand_over_that_times_out_after_landing_is_resent_not_counted_twice(
    server: RedisServer, store: ResilientStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await one_request(store, 0)
    server.kill()
    for n in range(1, 4):
        await one_request(store, n)
    assert store.status().degraded
    merge = store.primary.merge_pending
    tokens: list[str] = []

    async def lands_then_times_out(*args: Any, token: str) -> None:
        tokens.append(token)
        await merge(*args, token=token)
        if len(tokens) == 1:
            raise TimeoutError("the reply was lost after Redis applied the hand-over")

    monkeypatch.setattr(store.primary, "merge_pending", lands_then_times_out)
    server.start()  # an empty Redis: it holds exactly what is handed over from now on
    await wait_until(lambda: len(tokens) >= 2 and not store.status().degraded)
    assert tokens[0] == tokens[1]
    assert await store.counters() == {CounterKey("requests"): 3}
    assert [e.time for e in await store.read_audit()] == [1.0, 2.0, 3.0]


async def test_a_held_hand_over_still_counts_while_degraded_and_goes_first(
    server: RedisServer, store: ResilientStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.kill()
    for n in range(1, 4):
        await one_request(store, n)
    merge = store.primary.merge_pending
    tokens: list[str] = []

    async def refused(*args: Any, token: str) -> None:
        tokens.append(token)  # fails before any await: no one sees the store in between
        raise TimeoutError("hand-over refused")

    monkeypatch.setattr(store.primary, "merge_pending", refused)
    server.start()
    await wait_until(lambda: len(tokens) >= 2)
    assert store.status().degraded and len(set(tokens)) == 1
    await one_request(store, 4)
    assert await store.counters() == {CounterKey("requests"): 4}
    assert [e.time for e in await store.read_audit()] == [1.0, 2.0, 3.0, 4.0]

    monkeypatch.setattr(store.primary, "merge_pending", merge)
    await wait_until(lambda: not store.status().degraded)
    assert await store.counters() == {CounterKey("requests"): 4}
    assert [e.time for e in await store.read_audit()] == [1.0, 2.0, 3.0, 4.0]
