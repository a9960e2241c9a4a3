"""The one interface every state backend implements, and the values it speaks in.

Callers (the pipeline, the proxy) depend only on :class:`Store`, so running with Redis, in
memory, or degraded from one to the other never changes their code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple, Protocol

from guardrail.store.audit import AuditEntry
from guardrail.store.ratelimit import RateLimit


class CounterName(StrEnum):
    """The counters shared across workers."""

    REQUESTS = "requests"
    REFUSALS = "refusals_detected"
    REWRITES = "rewrites"
    FALLBACKS = "fallbacks"


class CounterKey(NamedTuple):
    """A counter and its labels, sorted so that label order never splits a count."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, labels: Mapping[str, str] | None = None) -> CounterKey:
        return cls(str(name), tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items())))

    def encode(self) -> str:
        return json.dumps([self.name, dict(self.labels)], sort_keys=True, ensure_ascii=False)

    @classmethod
    def decode(cls, field: str) -> CounterKey:
        name, labels = json.loads(field)
        return cls.of(name, labels)


def check_amount(amount: int) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"counter increments must be whole numbers, got {amount!r}")
    return amount


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """Health of the store, for metrics and health checks."""

    backend: str
    """``memory`` or ``redis``."""
    degraded: bool = False
    """Redis is unreachable and operations are served from memory."""
    outages: int = 0
    degraded_operations: int = 0
    last_error: str | None = None


class Store(Protocol):
    """Shared state: caches, rate limits, counters and the audit stream.

    Cache keys are digests from :mod:`guardrail.store.keys`; the store adds its own prefix.
    """

    async def get_rewrite(self, key: str) -> str | None: ...

    async def set_rewrite(self, key: str, value: str) -> None:
        """Cache a serialised rewrite for the store's rewrite TTL."""
        ...

    async def get_embeddings(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def set_embeddings(self, items: Mapping[str, bytes]) -> None:
        """Cache float32 vectors for the store's embedding TTL."""
        ...

    async def hit_rate_limit(self, client: str, per_minute: int) -> RateLimit:
        """Count one request by ``client`` (hashed before use) and decide whether it may pass."""
        ...

    async def increment(
        self, name: str, labels: Mapping[str, str] | None = None, amount: int = 1
    ) -> None: ...

    async def counters(self) -> dict[CounterKey, int]:
        """Every counter's total across all workers sharing the store."""
        ...

    async def append_audit(self, entry: AuditEntry) -> None: ...

    async def read_audit(self, count: int = 100) -> list[AuditEntry]:
        """The latest ``count`` audit entries, oldest first."""
        ...

    def status(self) -> StoreStatus: ...

    async def aclose(self) -> None: ...
