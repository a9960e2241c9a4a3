"""The Redis backend: state shared by every worker and every proxy instance.

This class reports failures by raising; :class:`~guardrail.store.resilient.ResilientStore`
is what turns an outage into a degraded but working store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.typing import EncodableT, FieldT

from guardrail.store.audit import AuditEntry
from guardrail.store.base import CounterKey, StoreStatus, check_amount
from guardrail.store.keys import key_id
from guardrail.store.ratelimit import GCRA_LUA, PERIOD_US, RateLimit, check_limit


def connect(url: str, *, timeout: float = 0.25) -> aioredis.Redis:
    """A client with short timeouts and one immediate retry.

    The retry replaces a pooled connection that died with a restarted server; short timeouts
    bound what a slow or vanished server can add to a request.
    """
    try:
        return aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
            decode_responses=False,
        )
    except ValueError as exc:
        raise ValueError(
            f"invalid Redis URL ({exc}); expected redis://host:port/db, rediss://... or unix://..."
        ) from None


HANDOVER_MARK_SECONDS = 86_400
"""How long an applied hand-over's token is remembered (retries come within seconds)."""
HANDOVER_LUA = """
-- KEYS: the token's mark, the counters hash, the audit stream.
-- ARGV: mark lifetime, audit max length, number of counters, then field/amount pairs, then one
-- JSON array of alternating field names and values per audit entry.
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  return 0
end
local i = 4
for _ = 1, tonumber(ARGV[3]) do
  redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  i = i + 2
end
for j = i, #ARGV do
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', unpack(cjson.decode(ARGV[j])))
end
return 1
"""


class RedisStore:
    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "guardrail:",
        rewrite_ttl: float = 86_400.0,
        embedding_ttl: float = 7 * 86_400.0,
        audit_maxlen: int = 10_000,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self._rewrite_ttl_ms = int(rewrite_ttl * 1000)
        self._embedding_ttl_ms = int(embedding_ttl * 1000)
        self._audit_maxlen = audit_maxlen
        self._gcra = client.register_script(GCRA_LUA)
        self._handover = client.register_script(HANDOVER_LUA)
        self._counters_key = f"{prefix}counters"
        self._audit_key = f"{prefix}audit"

    async def ping(self) -> None:
        await self.client.ping()

    async def get_rewrite(self, key: str) -> str | None:
        value = await self.client.get(f"{self.prefix}rewrite:{key}")
        return _text(value) if value is not None else None

    async def set_rewrite(self, key: str, value: str) -> None:
        await self.client.set(
            f"{self.prefix}rewrite:{key}", value.encode("utf-8"), px=self._rewrite_ttl_ms
        )

    async def get_embeddings(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        values = await self.client.mget([f"{self.prefix}embedding:{key}" for key in keys])
        return [value.encode("utf-8") if isinstance(value, str) else value for value in values]

    async def set_embeddings(self, items: Mapping[str, bytes]) -> None:
        if not items:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for key, value in items.items():
                pipe.set(f"{self.prefix}embedding:{key}", value, px=self._embedding_ttl_ms)
            await pipe.execute()

    async def hit_rate_limit(self, client: str, per_minute: int) -> RateLimit:
        check_limit(per_minute)
        allowed, remaining, retry_after_us = await self._gcra(
            keys=[f"{self.prefix}ratelimit:{key_id(client)}"], args=[PERIOD_US, per_minute]
        )
        return RateLimit(bool(allowed), per_minute, int(remaining), int(retry_after_us) / 1e6)

    async def increment(
        self, name: str, labels: Mapping[str, str] | None = None, amount: int = 1
    ) -> None:
        field = CounterKey.of(name, labels).encode()
        await self.client.hincrby(self._counters_key, field, check_amount(amount))

    async def counters(self) -> dict[CounterKey, int]:
        raw = await self.client.hgetall(self._counters_key)
        return {CounterKey.decode(_text(field)): int(value) for field, value in raw.items()}

    async def append_audit(self, entry: AuditEntry) -> None:
        await self.client.xadd(
            self._audit_key, _fields(entry), maxlen=self._audit_maxlen, approximate=True
        )

    async def read_audit(self, count: int = 100) -> list[AuditEntry]:
        if count <= 0:
            return []
        rows = await self.client.xrevrange(self._audit_key, count=count) or []
        return [
            AuditEntry.from_fields({_text(k): _text(v) for k, v in fields.items()})
            for _, fields in reversed(rows)
            if fields
        ]

    async def merge_pending(
        self, counters: Mapping[CounterKey, int], entries: Sequence[AuditEntry], *, token: str
    ) -> None:
        """Add counts and audit entries gathered in memory during an outage, all or nothing,
        and at most once per ``token``: a hand-over that timed out after Redis applied it can
        be sent again without counting twice."""
        if not counters and not entries:
            return
        arguments: list[EncodableT] = [HANDOVER_MARK_SECONDS, self._audit_maxlen, len(counters)]
        for key, amount in counters.items():
            arguments += [key.encode(), check_amount(amount)]
        arguments += [json.dumps(_flat(entry), ensure_ascii=False) for entry in entries]
        keys = [f"{self.prefix}handover:{token}", self._counters_key, self._audit_key]
        await self._handover(keys=keys, args=arguments)

    def status(self) -> StoreStatus:
        return StoreStatus(backend="redis")

    async def aclose(self) -> None:
        await self.client.aclose()


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _flat(entry: AuditEntry) -> list[str]:
    return [part for pair in entry.to_fields().items() for part in pair]


def _fields(entry: AuditEntry) -> dict[FieldT, EncodableT]:
    fields: dict[FieldT, EncodableT] = {}
    fields.update(entry.to_fields())
    return fields
