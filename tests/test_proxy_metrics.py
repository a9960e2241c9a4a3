"""``GET /metrics``: per-worker series, the store's shared counters and its health."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import respx
from prometheus_client.parser import text_string_to_metric_families
from proxy_doubles import ScriptedGuardrail, completion

from guardrail.store import MemoryStore
from guardrail.types import Action, Decision, Detection, Label3, Strategy
from proxy.app import create_app
from proxy.auth import hash_key
from proxy.config import ProxySettings
from proxy.metrics import ProxyMetrics

UPSTREAM = "http://upstream.test/v1"
COMPLETIONS = f"{UPSTREAM}/chat/completions"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def upstream() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


async def test_requests_latency_and_upstream_errors_are_exposed(
    upstream: respx.MockRouter,
) -> None:
    upstream.post(COMPLETIONS).mock(
        side_effect=[
            httpx.Response(200, json=completion()),
            httpx.Response(500, json={"error": {"message": "boom", "type": "server_error"}}),
        ]
    )
    app = create_app(ProxySettings(upstream_base_url=UPSTREAM), ScriptedGuardrail())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
    ) as client:
        ok = await client.post("/v1/chat/completions", json=CHAT)
        failed = await client.post("/v1/chat/completions", json=CHAT)
        await client.get("/no/such/route")
        response = await client.get("/metrics")
    assert (ok.status_code, failed.status_code) == (200, 502)
    assert response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)
    route = "/v1/chat/completions"
    key = (("method", "POST"), ("route", route))
    assert found[("guardrail_http_requests_total", (*key, ("status", "200")))] == 1
    assert found[("guardrail_http_requests_total", (*key, ("status", "502")))] == 1
    unmatched = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert found[("guardrail_http_requests_total", unmatched)] == 1
    assert found[("guardrail_http_request_duration_seconds_count", (("route", route),))] == 2
    assert found[("guardrail_upstream_errors_total", (("status", "502"),))] == 1
    assert found[("guardrail_overhead_seconds_count", (("stream", "false"),))] == 2
    assert found[("guardrail_shared_requests_total", ())] == 2
    assert found[("guardrail_store_degraded", (("backend", "memory"),))] == 0


def test_decisions_are_counted_by_strategy_policy_action_and_language() -> None:
    metrics = ProxyMetrics(MemoryStore())
    refusal = Detection(
        is_refusal=True,
        score=0.95,
        strategy=Strategy.REDIRECTION,
        label3=Label3.FULL_REFUSAL,
        lang="de",
    )
    metrics.observe_decision(Decision(Action.FALLBACK, None, policy="medical", before=refusal))
    metrics.observe_decision(Decision(Action.PASS, None))
    registry = metrics.registry
    assert (
        registry.get_sample_value("guardrail_refusals_detected_total", {"strategy": "redirection"})
        == 1
    )
    assert (
        registry.get_sample_value(
            "guardrail_rewrites_total",
            {"policy": "medical", "action": "fallback", "language": "de"},
        )
        == 1
    )
    assert registry.get_sample_value("guardrail_fallbacks_total", {"policy": "medical"}) == 1
    assert (
        registry.get_sample_value(
            "guardrail_rewrites_total", {"policy": "none", "action": "pass", "language": "und"}
        )
        is None
    )


def test_cache_lookups_are_counted_by_cache_and_result() -> None:
    metrics = ProxyMetrics(MemoryStore())
    metrics.observe_decision(
        Decision(Action.REWRITTEN, "x", cache={"embedding": "hit", "rewrite": "miss"})
    )
    metrics.observe_decision(Decision(Action.REWRITTEN, "x", cache={"rewrite": "hit"}))
    value = metrics.registry.get_sample_value
    assert value("guardrail_cache_lookups_total", {"cache": "rewrite", "result": "hit"}) == 1
    assert value("guardrail_cache_lookups_total", {"cache": "rewrite", "result": "miss"}) == 1
    assert value("guardrail_cache_lookups_total", {"cache": "embedding", "result": "hit"}) == 1


async def test_shared_counters_with_labels_are_read_from_the_store_at_scrape_time() -> None:
    store = MemoryStore()
    metrics = ProxyMetrics(store)
    await store.increment("rewrites", {"policy": "p", "action": "rewritten"}, 3)
    first = samples((await metrics.render()).decode())
    await store.increment("rewrites", {"policy": "p", "action": "rewritten"})
    second = samples((await metrics.render()).decode())
    key = ("guardrail_shared_rewrites_total", (("action", "rewritten"), ("policy", "p")))
    assert (first[key], second[key]) == (3, 4)


async def test_metrics_need_a_metrics_key_when_one_is_configured() -> None:
    settings = ProxySettings(upstream_base_url=UPSTREAM, metrics_keys=(hash_key("scraper"),))
    app = create_app(settings, ScriptedGuardrail(), store=MemoryStore())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
        refused = await client.get("/metrics")
        wrong = await client.get("/metrics", headers={"authorization": "Bearer client"})
        allowed = await client.get("/metrics", headers={"authorization": "Bearer scraper"})
    assert refused.status_code == wrong.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"
    assert allowed.status_code == 200 and "guardrail_store_degraded" in allowed.text


def test_each_app_has_its_own_registry() -> None:
    settings = ProxySettings(upstream_base_url=UPSTREAM)
    create_app(settings, ScriptedGuardrail(), store=MemoryStore())
    create_app(settings, ScriptedGuardrail(), store=MemoryStore())
