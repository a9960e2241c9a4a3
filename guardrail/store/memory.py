"""The in-process backend: the default without Redis, and the fallback while Redis is down.

Everything is bounded (caches by entry count, the audit trail by length, rate-limit state by
expiry) so that a long outage cannot grow memory without limit.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from guardrail.store.audit import AuditEntry
from guardrail.store.base import CounterKey, StoreStatus, check_amount
from guardrail.store.keys import key_id
from guardrail.store.ratelimit import RateLimit, check_limit, gcra

V = TypeVar("V")

Clock = Callable[[], float]


class TTLCache(Generic[V]):
    """A least-recently-used map whose entries also expire after ``ttl`` seconds."""

    def __init__(self, max_entries: int, ttl: float, clock: Clock = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._max_entries = max_entries
        self._ttl = ttl
        self._clock = clock

    def get(self, key: str) -> V | None:
        item = self._entries.get(key)
        if item is None:
            return None
        expires, value = item
        if expires <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def set(self, key: str, value: V) -> None:
        self._entries[key] = (self._clock() + self._ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class MemoryStore:
    """State for one process; counters and limits are per worker."""

    def __init__(
        self,
        *,
        rewrite_ttl: float = 86_400.0,
        embedding_ttl: float = 7 * 86_400.0,
        max_rewrites: int = 10_000,
        max_embeddings: int = 100_000,
        audit_maxlen: int = 10_000,
        clock: Clock = time.monotonic,
    ) -> None:
        self._rewrites: TTLCache[str] = TTLCache(max_rewrites, rewrite_ttl, clock)
        self._embeddings: TTLCache[bytes] = TTLCache(max_embeddings, embedding_ttl, clock)
        self._tats: dict[str, int] = {}
        self._counters: Counter[CounterKey] = Counter()
        self._audit: deque[AuditEntry] = deque(maxlen=audit_maxlen)
        self._clock = clock

    async def get_rewrite(self, key: str) -> str | None:
        return self._rewrites.get(key)

    async def set_rewrite(self, key: str, value: str) -> None:
        self._rewrites.set(key, value)

    async def get_embeddings(self, keys: Sequence[str]) -> list[bytes | None]:
        return [self._embeddings.get(key) for key in keys]

    async def set_embeddings(self, items: Mapping[str, bytes]) -> None:
        for key, value in items.items():
            self._embeddings.set(key, value)

    async def hit_rate_limit(self, client: str, per_minute: int) -> RateLimit:
        check_limit(per_minute)
        now = int(self._clock() * 1_000_000)
        client_id = key_id(client)
        verdict, tat = gcra(self._tats.get(client_id), now, per_minute)
        if tat is not None:
            self._tats[client_id] = tat
            if len(self._tats) > 10_000:
                self._forget_idle_clients(now)
        return verdict

    def _forget_idle_clients(self, now: int) -> None:
        # A TAT in the past carries no state: the client starts afresh either way.
        for client_id in [c for c, tat in self._tats.items() if tat <= now]:
            del self._tats[client_id]

    async def increment(
        self, name: str, labels: Mapping[str, str] | None = None, amount: int = 1
    ) -> None:
        self._counters[CounterKey.of(name, labels)] += check_amount(amount)

    async def counters(self) -> dict[CounterKey, int]:
        return dict(self._counters)

    async def append_audit(self, entry: AuditEntry) -> None:
        self._audit.append(entry)

    async def read_audit(self, count: int = 100) -> list[AuditEntry]:
        return list(self._audit)[-count:] if count > 0 else []

    def status(self) -> StoreStatus:
        return StoreStatus(backend="memory")

    async def aclose(self) -> None:
        return None

    def take_pending(self) -> tuple[dict[CounterKey, int], list[AuditEntry]]:
        """Remove and return counts and audit entries, to hand them to a recovered Redis."""
        counters, entries = dict(self._counters), list(self._audit)
        self._counters.clear()
        self._audit.clear()
        return counters, entries
