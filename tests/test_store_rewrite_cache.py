from guardrail.store import CachedRewrite, MemoryStore, RewriteCache
from guardrail.types import Action


async def test_a_rewrite_round_trips() -> None:
    cache = RewriteCache(MemoryStore())
    rewrite = CachedRewrite("Je comprends — voilà ce que je peux dire.", Action.REWRITTEN, "model")
    assert await cache.get("k") is None
    await cache.put("k", rewrite)
    assert await cache.get("k") == rewrite


async def test_an_unreadable_entry_is_a_miss() -> None:
    store = MemoryStore()
    cache = RewriteCache(store)
    for value in ("not json", '{"text": "x"}', '{"text": "x", "action": "explode", "source": "m"}'):
        await store.set_rewrite("k", value)
        assert await cache.get("k") is None


class BrokenStore(MemoryStore):
    async def get_rewrite(self, key: str) -> str | None:
        raise ConnectionError("store down")

    async def set_rewrite(self, key: str, value: str) -> None:
        raise ConnectionError("store down")


async def test_a_failing_store_is_a_miss_and_never_raises() -> None:
    cache = RewriteCache(BrokenStore())
    await cache.put("k", CachedRewrite("text", Action.KEPT, "compose"))
    assert await cache.get("k") is None
