"""Runners produce the before-and-after pairs the judges grade.

``replay`` needs no key: "before" is a real recorded reply, "after" is what
:meth:`guardrail.Guardrail.review` makes of it. ``live`` asks a model for "before" and sends that
reply through the guardrail in-process, or asks a running proxy for "after". Live calls are
cached on disk as they finish, so an interrupted run picks up where it stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eval.cache import ResponseCache, cache_key
from eval.datasets import Record
from eval.llm import (
    Completion,
    ModelCallError,
    RetryPolicy,
    litellm_complete,
    proxy_base_url,
    proxy_model_name,
)
from guardrail import Guardrail
from guardrail.types import Decision, Detection, Usage

Tick = Callable[[], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One request's reply before and after the guardrail, and what the guardrail did."""

    record: Record
    before: str
    after: str
    action: str
    policy: str | None = None
    added_latency_ms: float | None = None
    rewrite_usage: Usage | None = None
    """``None`` when it cannot be measured (a proxy URL folds it into the reply's usage)."""
    before_detection: Detection | None = None
    after_detection: Detection | None = None
    categories: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.after != self.before


@dataclass(frozen=True, slots=True)
class Failure:
    """A record that produced no outcome, and why."""

    record: Record
    stage: str
    message: str


@dataclass(slots=True)
class RunResult:
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Reviewed:
    """The guardrail's verdict on one reply, in a form that survives the on-disk cache."""

    text: str
    action: str
    policy: str | None
    latency_ms: float
    usage: Usage
    categories: tuple[str, ...]
    before_detection: Detection | None = None
    after_detection: Detection | None = None

    def to_cache(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "action": self.action,
            "policy": self.policy,
            "latency_ms": self.latency_ms,
            "usage": [self.usage.prompt_tokens, self.usage.completion_tokens],
            "categories": list(self.categories),
        }

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> _Reviewed:
        return cls(
            text=data["text"],
            action=data["action"],
            policy=data["policy"],
            latency_ms=data["latency_ms"],
            usage=Usage(*data["usage"]),
            categories=tuple(data["categories"]),
        )


async def review(
    guardrail: Guardrail,
    record: Record,
    reply: str,
    *,
    model: str | None,
    refusal: str | None = None,
) -> _Reviewed:
    """Run the pipeline on one reply and time it: the latency the guardrail adds.

    ``model`` is the request's model as a proxy would see it; ``None`` means there is none to
    call, so policies that rewrite with the upstream model compose instead.
    """
    started = time.perf_counter()
    decision: Decision = await guardrail.review(
        record.messages, reply, refusal=refusal, model=model
    )
    latency = (time.perf_counter() - started) * 1000
    after = decision.text if decision.text is not None else reply
    return _Reviewed(
        text=after,
        action=decision.action.value,
        policy=decision.policy,
        latency_ms=latency,
        usage=decision.usage,
        categories=tuple(c.name for c in decision.categories),
        before_detection=decision.before,
        after_detection=decision.after if decision.text is not None else decision.before,
    )


async def _bounded(
    records: Sequence[Record],
    work: Callable[[Record], Awaitable[Outcome | Failure]],
    concurrency: int,
    tick: Tick | None,
) -> RunResult:
    """Run ``work`` over ``records`` at most ``concurrency`` at a time, keeping input order."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(record: Record) -> Outcome | Failure:
        async with semaphore:
            result = await work(record)
        if tick is not None:
            tick()
        return result

    result = RunResult()
    for item in await asyncio.gather(*(one(r) for r in records)):
        if isinstance(item, Outcome):
            result.outcomes.append(item)
        else:
            result.failures.append(item)
    return result


class ReplayRunner:
    """Recorded replies through the in-process pipeline: offline, no key."""

    def __init__(self, guardrail: Guardrail, *, concurrency: int = 1) -> None:
        self._guardrail = guardrail
        self._concurrency = concurrency

    async def run(self, records: Sequence[Record], tick: Tick | None = None) -> RunResult:
        return await _bounded(records, self._one, self._concurrency, tick)

    async def _one(self, record: Record) -> Outcome | Failure:
        if record.reply is None:
            return Failure(record, "replay", "no recorded reply")
        try:
            # Recorded replies came from models this run cannot call.
            reviewed = await review(self._guardrail, record, record.reply, model=None)
        except Exception as exc:
            return Failure(record, "guardrail", f"{type(exc).__name__}: {exc}")
        return Outcome(
            record=record,
            before=record.reply,
            after=reviewed.text,
            action=reviewed.action,
            policy=reviewed.policy,
            added_latency_ms=reviewed.latency_ms,
            rewrite_usage=reviewed.usage,
            before_detection=reviewed.before_detection,
            after_detection=reviewed.after_detection,
            categories=reviewed.categories,
        )


def _header_policy(value: str | None) -> str | None:
    """The proxy sends ``none`` when no policy matched."""
    return None if value in (None, "", "none") else value


class LiveRunner:
    """A live model answers directly ("before") and through the guardrail ("after").

    Model calls run ``concurrency`` at a time; in-process reviews run one at a time, so the
    latency measured for each is the guardrail's own and not time spent waiting for the others.
    """

    def __init__(
        self,
        model: str,
        *,
        cache: ResponseCache,
        guardrail: Guardrail | None = None,
        proxy_url: str | None = None,
        proxy_model: str | None = None,
        proxy_api_key: str | None = None,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        **completion_kwargs: Any,
    ) -> None:
        if (guardrail is None) == (proxy_url is None):
            raise ValueError("give exactly one of guardrail (in-process) or proxy_url")
        self.model = model
        self._cache = cache
        self._guardrail = guardrail
        self._proxy_base = proxy_base_url(proxy_url) if proxy_url else None
        self._proxy_model = proxy_model or proxy_model_name(model)
        self._proxy_api_key = proxy_api_key
        self._concurrency = concurrency
        self._retry = retry or RetryPolicy()
        self._kwargs = completion_kwargs
        self._review_lock = asyncio.Lock()

    async def run(self, records: Sequence[Record], tick: Tick | None = None) -> RunResult:
        # The first call pays for the client's cold start; alone, it does not slow the others.
        result = await _bounded(records[:1], self._one, 1, tick)
        rest = await _bounded(records[1:], self._one, self._concurrency, tick)
        result.outcomes += rest.outcomes
        result.failures += rest.failures
        return result

    async def _one(self, record: Record) -> Outcome | Failure:
        record = replace(record, source_model=self.model)
        try:
            before = await self._direct(record)
        except ModelCallError as exc:
            return Failure(record, "model", str(exc))
        try:
            if self._guardrail is not None:
                reviewed = await self._in_process(record, before)
                added, usage = reviewed.latency_ms, reviewed.usage
            else:
                reviewed = await self._through_proxy(record)
                added, usage = reviewed.latency_ms - before.latency_ms, None
        except ModelCallError as exc:
            return Failure(record, "proxy", str(exc))
        except Exception as exc:
            return Failure(record, "guardrail", f"{type(exc).__name__}: {exc}")
        return Outcome(
            record=record,
            before=before.text,
            after=reviewed.text,
            action=reviewed.action,
            policy=reviewed.policy,
            added_latency_ms=added,
            rewrite_usage=usage,
            before_detection=reviewed.before_detection,
            after_detection=reviewed.after_detection,
            categories=reviewed.categories,
        )

    def _key(self, record: Record, mode: str) -> str:
        return cache_key(record.dataset, record.id, self.model, mode)

    async def _direct(self, record: Record) -> Completion:
        key = self._key(record, "direct")
        cached = self._cache.get(key)
        if cached is not None:
            return Completion(
                text=cached["text"],
                refusal=cached["refusal"],
                latency_ms=cached["latency_ms"],
                usage=Usage(*cached["usage"]),
                headers={},
            )
        completion = await litellm_complete(
            self.model, record.messages, policy=self._retry, **self._kwargs
        )
        self._cache.put(
            key,
            {
                "text": completion.text,
                "refusal": completion.refusal,
                "latency_ms": completion.latency_ms,
                "usage": [completion.usage.prompt_tokens, completion.usage.completion_tokens],
            },
        )
        return completion

    async def _in_process(self, record: Record, before: Completion) -> _Reviewed:
        assert self._guardrail is not None
        key = self._key(record, "guardrail")
        cached = self._cache.get(key)
        if cached is not None:
            return _Reviewed.from_cache(cached)
        async with self._review_lock:
            reviewed = await review(
                self._guardrail, record, before.text, model=self.model, refusal=before.refusal
            )
        self._cache.put(key, reviewed.to_cache())
        return reviewed

    async def _through_proxy(self, record: Record) -> _Reviewed:
        """The same request to the proxy, through litellm like the direct call, so that the
        difference of their wall times is the proxy's and not a different client's."""
        assert self._proxy_base is not None
        key = self._key(record, "proxy")
        cached = self._cache.get(key)
        if cached is not None:
            return _Reviewed.from_cache(cached)
        completion = await litellm_complete(
            f"openai/{self._proxy_model}",
            record.messages,
            policy=self._retry,
            api_base=self._proxy_base,
            api_key=self._proxy_api_key or "none",
        )
        reviewed = _Reviewed(
            text=completion.text,
            action=completion.headers.get("x-guardrail-action", "unknown"),
            policy=_header_policy(completion.headers.get("x-guardrail-policy")),
            latency_ms=completion.latency_ms,
            usage=completion.usage,
            categories=(),
        )
        self._cache.put(key, reviewed.to_cache())
        return reviewed
