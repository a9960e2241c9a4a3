"""State backends behind one interface: in memory by default, Redis when configured.

Open one with ``open_store(os.environ.get("REDIS_URL"))``; key the caches with
:func:`rewrite_key` and :func:`embedding_key`, which hash their inputs so that no stored key
holds raw text.
"""

from guardrail.store.audit import AuditConfig, AuditEntry, Auditor, audit_entry
from guardrail.store.base import CounterKey, CounterName, Store, StoreStatus
from guardrail.store.embedding_cache import EmbeddingCache
from guardrail.store.factory import open_store
from guardrail.store.keys import embedding_key, key_id, rewrite_key
from guardrail.store.memory import MemoryStore
from guardrail.store.ratelimit import RateLimit
from guardrail.store.redaction import mask_secrets, redact
from guardrail.store.redis_backend import RedisStore
from guardrail.store.resilient import ResilientStore
from guardrail.store.rewrite_cache import CachedRewrite, RewriteCache

__all__ = [
    "AuditConfig",
    "AuditEntry",
    "Auditor",
    "CachedRewrite",
    "CounterKey",
    "CounterName",
    "EmbeddingCache",
    "MemoryStore",
    "RateLimit",
    "RedisStore",
    "ResilientStore",
    "RewriteCache",
    "Store",
    "StoreStatus",
    "audit_entry",
    "embedding_key",
    "key_id",
    "mask_secrets",
    "open_store",
    "redact",
    "rewrite_key",
]
