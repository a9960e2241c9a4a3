"""Rate limits, shared counters and the audit stream, through the app with a mocked upstream."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
import redis.asyncio
import respx
from proxy_doubles import REFUSAL_OPENING, ScriptedGuardrail, completion, sse_body, text_chunks

from guardrail.store import CounterKey, MemoryStore, Store, open_store
from guardrail.types import Action, Decision, Detection, Label3, Message, Strategy
from proxy.app import create_app
from proxy.config import ProxySettings

UPSTREAM = "http://upstream.test/v1"
COMPLETIONS = f"{UPSTREAM}/chat/completions"
USER = [{"role": "user", "content": "Mail me at ann@example.com about locks"}]
REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class DetectingGuardrail(ScriptedGuardrail):
    """The scripted guardrail, with a detection attached as the real pipeline would;
    ``keep`` keeps refusals (no text) instead of rewriting them."""

    keep: bool = False

    async def review(
        self, messages: Sequence[Message], reply: str | None, **kwargs: object
    ) -> Decision:
        decision = await super().review(messages, reply, **kwargs)  # type: ignore[arg-type]
        refused = decision.action is not Action.PASS
        before = Detection(
            is_refusal=refused,
            score=0.9 if refused else 0.1,
            strategy=Strategy.DIRECT_REFUSAL if refused else Strategy.FULL_COMPLIANCE,
            label3=Label3.FULL_REFUSAL if refused else Label3.FULL_COMPLIANCE,
            lang="en",
        )
        if self.keep and refused:
            return Decision(Action.KEPT, None, policy=decision.policy, before=before)
        return Decision(decision.action, decision.text, policy=decision.policy, before=before)


def settings(**extra: object) -> ProxySettings:
    return ProxySettings(upstream_base_url=UPSTREAM, **extra)  # type: ignore[arg-type]


@asynccontextmanager
async def proxy(config: ProxySettings, store: Store) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(config, DetectingGuardrail(), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
        yield client


@pytest.fixture
def upstream() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def chat(content: str = "Hello") -> dict[str, object]:
    return {"model": "m", "messages": USER, "stream": False, "user": content}


async def test_over_the_limit_is_a_429_in_openai_shape_with_retry_after(
    upstream: respx.MockRouter,
) -> None:
    route = upstream.post(COMPLETIONS).mock(return_value=httpx.Response(200, json=completion()))
    async with proxy(settings(rate_limit_per_minute=2), MemoryStore()) as client:
        statuses = [
            (await client.post("/v1/chat/completions", json=chat())).status_code for _ in range(2)
        ]
        refused = await client.post("/v1/chat/completions", json=chat())
    assert statuses == [200, 200]
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 30
    error = refused.json()["error"]
    assert error["type"] == "rate_limit_error"
    assert error["code"] == "rate_limit_exceeded"
    assert route.call_count == 2


async def test_the_limit_is_per_client_key(upstream: respx.MockRouter) -> None:
    upstream.post(COMPLETIONS).mock(return_value=httpx.Response(200, json=completion()))
    config = settings(rate_limit_per_minute=1, api_keys="key-a,key-b")
    async with proxy(config, MemoryStore()) as client:
        a = {"authorization": "Bearer key-a"}
        b = {"authorization": "Bearer key-b"}
        first = await client.post("/v1/chat/completions", json=chat(), headers=a)
        other = await client.post("/v1/chat/completions", json=chat(), headers=b)
        again = await client.post("/v1/chat/completions", json=chat(), headers=a)
    assert (first.status_code, other.status_code, again.status_code) == (200, 200, 429)


async def test_counters_record_requests_refusals_and_rewrites(
    upstream: respx.MockRouter,
) -> None:
    upstream.post(COMPLETIONS).mock(
        side_effect=[
            httpx.Response(200, json=completion(f"{REFUSAL_OPENING} help with that.")),
            httpx.Response(200, json=completion("Locks have pins.")),
        ]
    )
    store = MemoryStore()
    async with proxy(settings(), store) as client:
        for _ in range(2):
            assert (await client.post("/v1/chat/completions", json=chat())).status_code == 200
    counts = await store.counters()
    assert counts[CounterKey.of("requests")] == 2
    assert counts[CounterKey.of("refusals_detected", {"strategy": "direct_refusal"})] == 1
    rewrites = CounterKey.of("rewrites", {"policy": "test-policy", "action": "rewritten"})
    assert counts[rewrites] == 1
    assert not any(key.name == "fallbacks" for key in counts)


async def test_a_kept_streamed_refusal_is_reviewed_twice_but_counted_once(
    upstream: respx.MockRouter,
) -> None:
    pieces = [REFUSAL_OPENING, " help with that.", *[" More."] * 30]
    upstream.post(COMPLETIONS).mock(
        return_value=httpx.Response(
            200,
            content=sse_body(text_chunks(pieces)),
            headers={"content-type": "text/event-stream"},
        )
    )
    store = MemoryStore()
    guardrail = DetectingGuardrail(keep=True)
    app = create_app(settings(), guardrail, store=store)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
    ) as client:
        response = await client.post("/v1/chat/completions", json={**chat(), "stream": True})
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 200
    assert response.headers["x-guardrail-action"] == "kept"
    assert [(call.partial, call.streamed) for call in guardrail.calls] == [
        (True, False),
        (False, True),
    ]
    counts = await store.counters()
    assert counts[CounterKey.of("refusals_detected", {"strategy": "direct_refusal"})] == 1
    assert counts[CounterKey.of("rewrites", {"policy": "test-policy", "action": "kept"})] == 1
    assert 'guardrail_refusals_detected_total{strategy="direct_refusal"} 1.0' in metrics
    assert 'guardrail_overhead_seconds_count{stream="true"} 1.0' in metrics


async def test_audit_records_each_decision_with_its_request_id(
    upstream: respx.MockRouter,
) -> None:
    upstream.post(COMPLETIONS).mock(
        return_value=httpx.Response(200, json=completion(f"{REFUSAL_OPENING} do that."))
    )
    store = MemoryStore()
    config = settings(audit=True, audit_text=True, api_keys="client-secret")
    async with proxy(config, store) as client:
        response = await client.post(
            "/v1/chat/completions",
            json=chat(),
            headers={"authorization": "Bearer client-secret", "x-request-id": "req-42"},
        )
    assert response.headers["x-request-id"] == "req-42"
    [entry] = await store.read_audit()
    assert entry.request_id == "req-42"
    assert entry.action == "rewritten"
    assert entry.strategy_before == "direct_refusal"
    assert entry.request is not None and "ann@example.com" not in entry.request
    assert "client-secret" not in repr(entry)


async def test_audit_is_off_by_default(upstream: respx.MockRouter) -> None:
    upstream.post(COMPLETIONS).mock(
        return_value=httpx.Response(200, json=completion(f"{REFUSAL_OPENING} do that."))
    )
    store = MemoryStore()
    async with proxy(settings(), store) as client:
        await client.post("/v1/chat/completions", json=chat())
    assert await store.read_audit() == []


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    prefix = f"test-proxy-{uuid.uuid4().hex}:"
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except redis.RedisError:
        await client.aclose()
        pytest.skip("no Redis at 127.0.0.1:6379")
    yield prefix
    keys = [key async for key in client.scan_iter(f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_two_apps_share_counters_and_limits_through_redis(
    upstream: respx.MockRouter, redis_prefix: str
) -> None:
    upstream.post(COMPLETIONS).mock(return_value=httpx.Response(200, json=completion()))
    first_store = open_store(REDIS_URL, prefix=redis_prefix)
    second_store = open_store(REDIS_URL, prefix=redis_prefix)
    config = settings(rate_limit_per_minute=3)
    try:
        async with proxy(config, first_store) as first, proxy(config, second_store) as second:
            statuses = [
                (await client.post("/v1/chat/completions", json=chat())).status_code
                for client in (first, second, first, second)
            ]
            scraped = (await second.get("/metrics")).text
        assert statuses == [200, 200, 200, 429]
        assert "guardrail_shared_requests_total 4.0" in scraped
        assert 'guardrail_store_degraded{backend="redis"} 0.0' in scraped
        assert (await first_store.counters())[CounterKey.of("requests")] == 4
    finally:
        await first_store.aclose()
        await second_store.aclose()
