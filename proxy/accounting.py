"""What the proxy keeps about each request: rate limits, shared counters, metrics and the audit.

Everything here goes through the :class:`~guardrail.store.Store`, which degrades to memory when
Redis fails, so accounting can slow a request by at most the store's operation timeout and never
fail it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from guardrail.store import AuditConfig, Auditor, CounterName, Store
from guardrail.types import Action, Decision, Message
from proxy.errors import ProxyError
from proxy.metrics import ProxyMetrics
from proxy.streaming import Review


@dataclass
class RequestRecord:
    """The guardrail's part of one request, filled in by the route and read by the access log."""

    model: str | None = None
    stream: bool | None = None
    action: str | None = None
    policy: str | None = None
    review_s: float = 0.0
    key_id: str | None = None


class Accounting:
    """The store-backed side of request handling, shared by every request of one app."""

    def __init__(
        self,
        store: Store,
        metrics: ProxyMetrics,
        *,
        rate_limit_per_minute: int | None = None,
        audit: AuditConfig | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.rate_limit_per_minute = rate_limit_per_minute
        self.auditor = Auditor(store, audit or AuditConfig())

    async def admit(self, client: str) -> None:
        """Count the request and apply the client's rate limit; 429 with Retry-After when over."""
        await self.store.increment(CounterName.REQUESTS)
        if self.rate_limit_per_minute is None:
            return
        verdict = await self.store.hit_rate_limit(client, self.rate_limit_per_minute)
        if verdict.allowed:
            return
        self.metrics.rate_limited.inc()
        retry_after = max(1, math.ceil(verdict.retry_after))
        raise ProxyError(
            429,
            f"Rate limit reached: {verdict.limit} requests per minute. "
            f"Try again in {retry_after} s.",
            code="rate_limit_exceeded",
            headers={
                "retry-after": str(retry_after),
                "x-ratelimit-limit-requests": str(verdict.limit),
                "x-ratelimit-remaining-requests": str(verdict.remaining),
            },
        )

    def watch(
        self,
        review: Review,
        record: RequestRecord,
        *,
        messages: Sequence[Message],
        client_key: str | None,
        request_id: str | None,
    ) -> Review:
        """``review``, timing each call into ``record`` and accounting each final decision.

        A streamed opening that passes is reviewed again in full at the end; only that final
        review is counted, so one reply is never counted twice.
        """

        async def watched(
            reply: str | None, *, refusal: str | None, partial: bool, streamed: bool = False
        ) -> Decision:
            started = time.perf_counter()
            decision = await review(reply, refusal=refusal, partial=partial, streamed=streamed)
            if partial and decision.text is None:
                record.review_s += time.perf_counter() - started
                return decision
            await self._account(
                decision,
                messages=messages,
                reply=reply if reply is not None else refusal,
                model=record.model,
                client_key=client_key,
                request_id=request_id,
            )
            record.review_s += time.perf_counter() - started
            if record.action is None or decision.action is not Action.PASS:
                record.action = decision.action.value
                record.policy = decision.policy
            return decision

        return watched

    async def _account(
        self,
        decision: Decision,
        *,
        messages: Sequence[Message],
        reply: str | None,
        model: str | None,
        client_key: str | None,
        request_id: str | None,
    ) -> None:
        self.metrics.observe_decision(decision)
        before = decision.before
        if before is not None and before.is_refusal:
            await self.store.increment(CounterName.REFUSALS, {"strategy": before.strategy.value})
        if decision.action is not Action.PASS:
            labels = {"policy": decision.policy or "none", "action": decision.action.value}
            await self.store.increment(CounterName.REWRITES, labels)
        if decision.action is Action.FALLBACK:
            await self.store.increment(CounterName.FALLBACKS, {"policy": decision.policy or "none"})
        await self.auditor.record(
            decision,
            client_key=client_key,
            model=model,
            messages=messages,
            reply=reply,
            request_id=request_id,
        )
