import numpy as np
import pytest

from guardrail.store.embedding_cache import EmbeddingCache
from guardrail.store.memory import MemoryStore


async def test_vectors_round_trip_as_float32() -> None:
    cache = EmbeddingCache(MemoryStore(), "all-MiniLM-L6-v2")
    vectors = np.random.default_rng(0).standard_normal((2, 384))
    await cache.put_many(["a", "b"], vectors)
    a, missing, b = await cache.get_many(["a", "c", "b"])
    assert missing is None
    assert a is not None and b is not None
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, vectors[0].astype(np.float32))
    np.testing.assert_array_equal(b, vectors[1].astype(np.float32))


async def test_models_do_not_share_vectors() -> None:
    store = MemoryStore()
    await EmbeddingCache(store, "model-a").put_many(["a"], np.ones((1, 4)))
    assert await EmbeddingCache(store, "model-b").get_many(["a"]) == [None]


async def test_shape_mismatch_is_a_clear_error() -> None:
    cache = EmbeddingCache(MemoryStore(), "m")
    with pytest.raises(ValueError, match="one vector per text"):
        await cache.put_many(["a", "b"], np.ones((3, 4)))
    with pytest.raises(ValueError, match="one vector per text"):
        await cache.put_many(["a"], np.ones(4))


class BrokenStore(MemoryStore):
    async def get_embeddings(self, keys: object) -> list[bytes | None]:
        raise ConnectionError("store down")

    async def set_embeddings(self, items: object) -> None:
        raise ConnectionError("store down")


async def test_a_failing_store_reads_as_misses_and_never_raises() -> None:
    cache = EmbeddingCache(BrokenStore(), "m")
    await cache.put_many(["a"], np.ones((1, 4)))
    assert await cache.get_many(["a", "b"]) == [None, None]
