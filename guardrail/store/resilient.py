"""Redis with an in-memory safety net: an outage degrades the store, never the request.

While Redis answers, every operation goes to it. The first failure (error or timeout) logs one
warning, flips the store to its in-memory fallback and starts a background probe that pings
Redis with exponential backoff. On the first good ping the store switches back and hands the
counts and audit entries gathered during the outage over to Redis, so totals stay whole.

A hand-over carries a token and Redis applies each token once, so one that times out after Redis
applied it is sent again, unchanged, without counting twice. Single writes have no such token:
one that times out and still lands is also counted in memory (at least once, never lost).

Degraded semantics: caches start cold, rate limits count per worker, and counters read as the
last shared totals plus this worker's outage counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from redis.exceptions import DataError, RedisError

from guardrail.store.audit import AuditEntry
from guardrail.store.base import CounterKey, Store, StoreStatus
from guardrail.store.memory import MemoryStore
from guardrail.store.ratelimit import RateLimit, check_limit
from guardrail.store.redis_backend import RedisStore

logger = logging.getLogger("guardrail.store")

T = TypeVar("T")

OUTAGE_ERRORS = (RedisError, OSError, TimeoutError)
"""Failures of Redis or the way to it. ``DataError`` (a bad argument) is the caller's bug and
is raised, not mistaken for an outage."""


@dataclass(frozen=True, slots=True)
class _Handover:
    token: str
    counters: dict[CounterKey, int]
    entries: list[AuditEntry]

    @classmethod
    def take(cls, memory: MemoryStore) -> _Handover | None:
        """What memory gathered, removed from it under a fresh token; ``None`` if nothing."""
        counters, entries = memory.take_pending()
        if not counters and not entries:
            return None
        return cls(uuid.uuid4().hex, counters, entries)


class ResilientStore:
    def __init__(
        self,
        primary: RedisStore,
        fallback: MemoryStore,
        *,
        operation_timeout: float = 0.5,
        probe_initial: float = 0.5,
        probe_max: float = 30.0,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self._timeout = operation_timeout
        self._probe_initial = probe_initial
        self._probe_max = probe_max
        self._degraded = False
        self._outages = 0
        self._degraded_operations = 0
        self._last_error: str | None = None
        self._outage_started = 0.0
        self._probe: asyncio.Task[None] | None = None
        self._shared_counters: dict[CounterKey, int] = {}
        self._handover: _Handover | None = None
        """Outage counts taken from memory whose hand-over is not confirmed yet."""

    async def _run(self, operation: Callable[[Store], Awaitable[T]]) -> T:
        if not self._degraded:
            try:
                async with asyncio.timeout(self._timeout):
                    return await operation(self.primary)
            except DataError:
                raise
            except OUTAGE_ERRORS as exc:
                self._enter_outage(exc)
        self._degraded_operations += 1
        return await operation(self.fallback)

    def _enter_outage(self, exc: BaseException) -> None:
        self._last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if not self._degraded:
            self._degraded = True
            self._outages += 1
            self._outage_started = time.monotonic()
            logger.warning(
                "Redis unavailable (%s); serving from memory until it returns", self._last_error
            )
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_until_recovered())

    async def _probe_until_recovered(self) -> None:
        delay = self._probe_initial
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._probe_max)
            try:
                async with asyncio.timeout(self._timeout):
                    await self.primary.ping()
            except OUTAGE_ERRORS as exc:
                self._last_error = f"{type(exc).__name__}: {exc}"
                continue
            # Switch first, then take what memory gathered: no await separates the two, so no
            # operation can land in memory after the hand-over has been taken. A batch whose
            # hand-over failed is sent again first, as it was, under its own token.
            self._degraded = False
            counts = entries = 0
            while True:
                batch = self._handover or _Handover.take(self.fallback)
                if batch is None:
                    break
                self._handover = batch
                try:
                    async with asyncio.timeout(self._timeout * 4):
                        await self.primary.merge_pending(
                            batch.counters, batch.entries, token=batch.token
                        )
                except OUTAGE_ERRORS as exc:
                    self._enter_outage(exc)
                    break
                self._handover = None
                counts += sum(batch.counters.values())
                entries += len(batch.entries)
            if self._degraded:  # the hand-over or an operation failed again meanwhile
                continue
            logger.warning(
                "Redis is back after %.1fs; %d counts and %d audit entries handed over",
                time.monotonic() - self._outage_started,
                counts,
                entries,
            )
            return

    async def get_rewrite(self, key: str) -> str | None:
        return await self._run(lambda store: store.get_rewrite(key))

    async def set_rewrite(self, key: str, value: str) -> None:
        await self._run(lambda store: store.set_rewrite(key, value))

    async def get_embeddings(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._run(lambda store: store.get_embeddings(keys))

    async def set_embeddings(self, items: Mapping[str, bytes]) -> None:
        await self._run(lambda store: store.set_embeddings(items))

    async def hit_rate_limit(self, client: str, per_minute: int) -> RateLimit:
        check_limit(per_minute)
        return await self._run(lambda store: store.hit_rate_limit(client, per_minute))

    async def increment(
        self, name: str, labels: Mapping[str, str] | None = None, amount: int = 1
    ) -> None:
        await self._run(lambda store: store.increment(name, labels, amount))

    async def counters(self) -> dict[CounterKey, int]:
        if not self._degraded:
            try:
                async with asyncio.timeout(self._timeout):
                    self._shared_counters = await self.primary.counters()
                return dict(self._shared_counters)
            except OUTAGE_ERRORS as exc:
                self._enter_outage(exc)
        # Last shared totals plus this worker's outage counts: never lower than before.
        totals = Counter(self._shared_counters)
        totals.update(await self.fallback.counters())
        if self._handover is not None:
            totals.update(self._handover.counters)
        return dict(totals)

    async def append_audit(self, entry: AuditEntry) -> None:
        await self._run(lambda store: store.append_audit(entry))

    async def read_audit(self, count: int = 100) -> list[AuditEntry]:
        entries = await self._run(lambda store: store.read_audit(count))
        if self._degraded and self._handover is not None and count > 0:
            entries = [*self._handover.entries, *entries][-count:]
        return entries

    def status(self) -> StoreStatus:
        return StoreStatus(
            backend="redis",
            degraded=self._degraded,
            outages=self._outages,
            degraded_operations=self._degraded_operations,
            last_error=self._last_error,
        )

    async def aclose(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
        await self.primary.aclose()
