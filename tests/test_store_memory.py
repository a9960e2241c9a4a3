from guardrail.store.audit import AuditEntry
from guardrail.store.base import CounterKey
from guardrail.store.memory import MemoryStore, TTLCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def entry(n: int) -> AuditEntry:
    return AuditEntry(time=float(n), key_id="key_x", model="m", action="pass")


def test_ttl_cache_expires_entries() -> None:
    clock = FakeClock()
    cache: TTLCache[str] = TTLCache(10, ttl=60, clock=clock)
    cache.set("a", "1")
    clock.now += 59.9
    assert cache.get("a") == "1"
    clock.now += 0.2
    assert cache.get("a") is None
    assert len(cache) == 0


def test_ttl_cache_evicts_least_recently_used() -> None:
    cache: TTLCache[str] = TTLCache(2, ttl=60)
    cache.set("a", "1")
    cache.set("b", "2")
    assert cache.get("a") == "1"  # "b" is now the least recently used
    cache.set("c", "3")
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == ("1", "3")


async def test_rewrite_ttl_follows_the_clock() -> None:
    clock = FakeClock()
    store = MemoryStore(rewrite_ttl=10, clock=clock)
    await store.set_rewrite("k", "text")
    clock.now += 11
    assert await store.get_rewrite("k") is None


async def test_rate_limit_refills_with_time() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    assert [(await store.hit_rate_limit("c", 2)).allowed for _ in range(3)] == [True, True, False]
    clock.now += 30
    assert (await store.hit_rate_limit("c", 2)).allowed
    assert not (await store.hit_rate_limit("c", 2)).allowed


async def test_idle_rate_limit_state_is_forgotten() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    for n in range(10_001):
        await store.hit_rate_limit(f"client-{n}", 60)
    clock.now += 2  # every client's single request has been paid back
    await store.hit_rate_limit("late", 60)
    assert len(store._tats) == 1


async def test_audit_trail_is_capped() -> None:
    store = MemoryStore(audit_maxlen=3)
    for n in range(5):
        await store.append_audit(entry(n))
    assert [e.time for e in await store.read_audit(10)] == [2.0, 3.0, 4.0]
    assert await store.read_audit(0) == []


async def test_take_pending_empties_counts_and_audit() -> None:
    store = MemoryStore(audit_maxlen=4)
    await store.increment("requests", amount=2)
    await store.append_audit(entry(1))
    await store.append_audit(entry(2))
    counters, entries = store.take_pending()
    assert counters == {CounterKey("requests"): 2}
    assert [e.time for e in entries] == [1.0, 2.0]
    assert await store.counters() == {} and await store.read_audit() == []


async def test_status_is_memory() -> None:
    assert MemoryStore().status().backend == "memory"
