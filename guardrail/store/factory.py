"""Choose the backend: Redis (behind its in-memory safety net) when a URL is given, else memory."""

from __future__ import annotations

from guardrail.store.base import Store
from guardrail.store.memory import MemoryStore
from guardrail.store.redis_backend import RedisStore, connect
from guardrail.store.resilient import ResilientStore


def open_store(
    redis_url: str | None,
    *,
    prefix: str = "guardrail:",
    rewrite_ttl: float = 86_400.0,
    embedding_ttl: float = 7 * 86_400.0,
    audit_maxlen: int = 10_000,
    max_rewrites: int = 10_000,
    max_embeddings: int = 100_000,
    socket_timeout: float = 0.25,
    operation_timeout: float = 0.5,
    probe_initial: float = 0.5,
    probe_max: float = 30.0,
) -> Store:
    """Open the state store; typically ``open_store(os.environ.get("REDIS_URL"))``.

    No connection is made here: a Redis that is down at start-up is handled like any outage.
    ``max_rewrites`` and ``max_embeddings`` bound the in-memory caches (the store itself
    without Redis, the fallback with it).
    """
    for name, value in (
        ("rewrite_ttl", rewrite_ttl),
        ("embedding_ttl", embedding_ttl),
        ("audit_maxlen", audit_maxlen),
        ("max_rewrites", max_rewrites),
        ("max_embeddings", max_embeddings),
        ("socket_timeout", socket_timeout),
        ("operation_timeout", operation_timeout),
        ("probe_initial", probe_initial),
        ("probe_max", probe_max),
    ):
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    memory = MemoryStore(
        rewrite_ttl=rewrite_ttl,
        embedding_ttl=embedding_ttl,
        max_rewrites=max_rewrites,
        max_embeddings=max_embeddings,
        audit_maxlen=audit_maxlen,
    )
    if not redis_url:
        return memory
    redis = RedisStore(
        connect(redis_url, timeout=socket_timeout),
        prefix=prefix,
        rewrite_ttl=rewrite_ttl,
        embedding_ttl=embedding_ttl,
        audit_maxlen=audit_maxlen,
    )
    return ResilientStore(
        redis,
        memory,
        operation_timeout=operation_timeout,
        probe_initial=probe_initial,
        probe_max=probe_max,
    )
