"""The store contract, run against memory and the real Redis at 127.0.0.1:6379."""

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from guardrail.store.audit import AuditEntry
from guardrail.store.base import CounterKey, Store
from guardrail.store.keys import key_id, rewrite_key
from guardrail.store.memory import MemoryStore
from guardrail.store.redis_backend import RedisStore, connect

REDIS_URL = "redis://127.0.0.1:6379/0"
OPTIONS = {"rewrite_ttl": 30.0, "embedding_ttl": 60.0, "audit_maxlen": 5}


@contextlib.asynccontextmanager
async def fresh_redis_store() -> AsyncIterator[RedisStore]:
    """A store under a unique key prefix, emptied afterwards."""
    client = connect(REDIS_URL, timeout=1.0)
    try:
        await client.ping()
    except (OSError, aioredis.RedisError) as exc:
        await client.aclose()
        pytest.skip(f"no Redis at {REDIS_URL} ({exc}); .ci/run starts one")
    store = RedisStore(client, prefix=f"test:{uuid.uuid4().hex}:", **OPTIONS)  # type: ignore[arg-type]
    try:
        yield store
    finally:
        keys = [key async for key in client.scan_iter(f"{store.prefix}*")]
        if keys:
            await client.delete(*keys)
        await store.aclose()


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisStore]:
    async with fresh_redis_store() as store:
        yield store


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore(**OPTIONS)  # type: ignore[arg-type]
        return
    async with fresh_redis_store() as redis_store:
        yield redis_store


def entry(n: int) -> AuditEntry:
    return AuditEntry(time=float(n), key_id="key_x", model="m", action="pass", categories=("a",))


async def test_rewrite_round_trip(store: Store) -> None:
    assert await store.get_rewrite("absent") is None
    await store.set_rewrite("k", "Voilà — a rewrite ✓")
    assert await store.get_rewrite("k") == "Voilà — a rewrite ✓"


async def test_embeddings_batch_round_trip(store: Store) -> None:
    assert await store.get_embeddings([]) == []
    await store.set_embeddings({})
    await store.set_embeddings({"a": b"\x00\x01\x02\x03", "b": b"\xff" * 8})
    assert await store.get_embeddings(["a", "missing", "b"]) == [
        b"\x00\x01\x02\x03",
        None,
        b"\xff" * 8,
    ]


async def test_rate_limit_per_client(store: Store) -> None:
    verdicts = [await store.hit_rate_limit("client-a", 3) for _ in range(4)]
    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert [v.remaining for v in verdicts] == [2, 1, 0, 0]
    assert 19.0 < verdicts[-1].retry_after <= 20.0
    assert (await store.hit_rate_limit("client-b", 3)).allowed
    with pytest.raises(ValueError, match="whole number of requests per minute"):
        await store.hit_rate_limit("client-a", 0)


async def test_counters_aggregate_by_name_and_labels(store: Store) -> None:
    await store.increment("requests")
    await store.increment("requests", amount=2)
    await store.increment("rewrites", {"policy": "default", "action": "rewritten"})
    await store.increment("rewrites", {"action": "rewritten", "policy": "default"})
    await store.increment("rewrites", {"policy": "default", "action": "fallback"})
    assert await store.counters() == {
        CounterKey("requests"): 3,
        CounterKey("rewrites", (("action", "rewritten"), ("policy", "default"))): 2,
        CounterKey("rewrites", (("action", "fallback"), ("policy", "default"))): 1,
    }
    with pytest.raises(TypeError, match="whole numbers"):
        await store.increment("requests", amount=1.5)  # type: ignore[arg-type]


async def test_audit_reads_latest_oldest_first(store: Store) -> None:
    assert await store.read_audit() == []
    for n in range(3):
        await store.append_audit(entry(n))
    assert await store.read_audit(2) == [entry(1), entry(2)]
    assert await store.read_audit(0) == []


@pytest.mark.redis
async def test_redis_keys_hold_no_raw_text(redis_store: RedisStore) -> None:
    messages = [{"role": "user", "content": "my neighbour's wifi password"}]
    await redis_store.set_rewrite(rewrite_key(messages, "I can't.", "default", "1"), "ok")
    await redis_store.hit_rate_limit("raw-client-key-42", 10)
    keys = [key.decode() async for key in redis_store.client.scan_iter(f"{redis_store.prefix}*")]
    assert len(keys) == 2
    assert not any("wifi" in key or "raw-client-key-42" in key for key in keys)
    assert f"{redis_store.prefix}ratelimit:{key_id('raw-client-key-42')}" in keys


@pytest.mark.redis
async def test_redis_ttls_are_set(redis_store: RedisStore) -> None:
    await redis_store.set_rewrite("r", "text")
    ttl_ms = await redis_store.client.pttl(f"{redis_store.prefix}rewrite:r")
    assert 29_000 < ttl_ms <= 30_000
    await redis_store.set_embeddings({"e": b"1234"})
    ttl_ms = await redis_store.client.pttl(f"{redis_store.prefix}embedding:e")
    assert 59_000 < ttl_ms <= 60_000
    await redis_store.hit_rate_limit("c", 60)
    ttl_ms = await redis_store.client.pttl(f"{redis_store.prefix}ratelimit:{key_id('c')}")
    assert 0 < ttl_ms <= 1_000  # one request is paid back within a second at 60/min


@pytest.mark.redis
async def test_redis_rate_limit_is_shared_between_clients(redis_store: RedisStore) -> None:
    other = RedisStore(connect(REDIS_URL), prefix=redis_store.prefix)
    try:
        results = await asyncio.gather(
            *(s.hit_rate_limit("shared", 5) for s in [redis_store, other] * 4)
        )
    finally:
        await other.aclose()
    assert sum(r.allowed for r in results) == 5


@pytest.mark.redis
async def test_redis_audit_stream_is_capped_approximately(redis_store: RedisStore) -> None:
    for n in range(300):
        await redis_store.append_audit(entry(n))
    length = await redis_store.client.xlen(f"{redis_store.prefix}audit")
    # MAXLEN ~ trims whole stream nodes (100 entries each by default), never below the cap.
    assert 5 <= length <= 5 + 100
    assert (await redis_store.read_audit(1))[0].time == 299.0


@pytest.mark.redis
async def test_merge_pending_adds_counts_and_entries_once_per_token(
    redis_store: RedisStore,
) -> None:
    await redis_store.increment("requests", amount=5)
    counts = {CounterKey("requests"): 3, CounterKey.of("rewrites", {"policy": "p"}): 1}
    await redis_store.merge_pending(counts, [entry(7), entry(8)], token="t1")
    await redis_store.merge_pending(counts, [entry(7), entry(8)], token="t1")  # a resend
    await redis_store.merge_pending({}, [], token="t2")
    assert await redis_store.counters() == {
        CounterKey("requests"): 8,
        CounterKey.of("rewrites", {"policy": "p"}): 1,
    }
    assert await redis_store.read_audit() == [entry(7), entry(8)]
    await redis_store.merge_pending({CounterKey("requests"): 1}, [], token="t3")
    assert (await redis_store.counters())[CounterKey("requests")] == 9
