import pytest

from guardrail.store import MemoryStore, ResilientStore, open_store


async def test_no_url_means_memory() -> None:
    assert isinstance(open_store(None), MemoryStore)
    assert isinstance(open_store(""), MemoryStore)


async def test_url_means_redis_behind_a_fallback() -> None:
    store = open_store("redis://127.0.0.1:6379/0")
    assert isinstance(store, ResilientStore)
    assert store.status().backend == "redis"
    await store.aclose()


def test_bad_url_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="invalid Redis URL"):
        open_store("http://127.0.0.1:6379")


def test_non_positive_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="rewrite_ttl must be positive"):
        open_store(None, rewrite_ttl=0)
