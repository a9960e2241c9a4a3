"""The load test's own logic (schedule, response checks, counter reading, summary), and one
short run against two proxy workers sharing a dedicated Redis."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _redis_server import RedisServer, running_redis
from fastapi import FastAPI, Response

from eval.load_test import (
    FAULTS,
    Outcome,
    Planned,
    StoreCount,
    check_plain,
    check_stream,
    count_requests,
    main,
    metric_total,
    plan,
    summarise,
)
from eval.loopback import serve
from guardrail.store import CounterName, MemoryStore, open_store
from proxy.metrics import CONTENT_TYPE, ProxyMetrics


def chunk(content: str | None = None, finish: str | None = None) -> str:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"object": "chat.completion.chunk", "choices": [choice]})


def stream(*lines: str) -> bytes:
    return "\n\n".join(lines).encode() + b"\n\n"


ERROR = "data: " + json.dumps({"error": {"message": "upstream cut", "type": "upstream_error"}})


def test_the_plan_is_fixed_rate_seeded_and_faults_at_the_asked_share() -> None:
    requests = plan(rate=100, duration_s=50, fault_rate=0.1, seed=3)
    assert len(requests) == 5000
    assert requests[1].at_s - requests[0].at_s == pytest.approx(0.01)
    faults = [r for r in requests if r.kind != "ok"]
    assert 400 < len(faults) < 600
    assert {r.kind for r in faults} == set(FAULTS)
    assert all(r.stream for r in faults if r.kind == "cut")
    assert plan(100, 50, 0.1, 3) == requests


def test_plain_replies_and_errors_are_told_from_malformed_ones() -> None:
    reply = {"object": "chat.completion", "choices": [{"message": {"content": "Hi"}}]}
    error = {"error": {"message": "upstream timed out", "type": "timeout"}}
    assert check_plain(200, json.dumps(reply).encode()) == "reply"
    assert check_plain(504, json.dumps(error).encode()) == "error"
    assert check_plain(200, b"<html>") == "malformed: not JSON"
    assert check_plain(500, b'{"detail": "boom"}').startswith("malformed")
    assert check_plain(200, json.dumps(error).encode()).startswith("malformed")


def test_streams_must_finish_or_end_with_an_error_then_done() -> None:
    assert check_stream(200, stream(chunk("Hi"), chunk(finish="stop"), "data: [DONE]")) == "reply"
    assert check_stream(200, stream(chunk("Hi"), ERROR, "data: [DONE]")) == "error"
    assert check_stream(200, stream(chunk("Hi"), chunk(finish="stop"))).startswith("malformed")
    assert check_stream(200, stream(chunk("Hi"), "data: [DONE]")) == "malformed: no finish_reason"
    cut = stream(ERROR, chunk("Hi"), "data: [DONE]")
    assert check_stream(200, cut) == "malformed: events after an error"


def test_summary_counts_wrong_statuses_and_overhead_on_clean_requests() -> None:
    ok, fault = Planned(0, "ok", False), Planned(0, "status_500", False)
    proxied = [
        Outcome(ok, 200, 0.012, "reply"),
        Outcome(ok, 200, 0.014, "reply"),
        Outcome(fault, 200, 0.5, "reply"),
    ]
    direct = [Outcome(ok, 200, 0.010, "reply"), Outcome(ok, 200, 0.011, "reply")]
    summary = summarise(proxied, direct, wall_s=1.5)
    assert summary.unexpected_status == 1
    assert summary.failed
    assert summary.requests_per_s == pytest.approx(2.0)
    assert summary.overhead_ms["plain"]["p50"] == pytest.approx(2.0)
    assert "stream" not in summary.overhead_ms


def test_summary_fails_when_the_shared_counter_misses_requests() -> None:
    ok = Planned(0, "ok", False)
    proxied = [Outcome(ok, 200, 0.01, "reply")] * 3
    assert not summarise(proxied, [], 1.0, StoreCount(3, settle_s=0.0, outages=0)).failed
    assert not summarise(proxied, [], 1.0, StoreCount(3, settle_s=2.5, outages=1)).failed
    assert summarise(proxied, [], 1.0, StoreCount(2, settle_s=None, outages=1)).failed
    assert summarise(proxied, [], 1.0, StoreCount(4, settle_s=None, outages=0)).failed
    assert not summarise(proxied, [], 1.0).failed


async def test_totals_are_read_from_the_proxys_metrics() -> None:
    store = MemoryStore()
    metrics = ProxyMetrics(store)
    assert metric_total((await metrics.render()).decode(), "guardrail_shared_requests") == 0
    for _ in range(3):
        await store.increment(CounterName.REQUESTS)
    await store.increment(CounterName.REWRITES, {"policy": "p", "action": "rewritten"})
    exposition = (await metrics.render()).decode()
    assert metric_total(exposition, "guardrail_shared_requests") == 3
    assert metric_total(exposition, "guardrail_store_degraded") == 0


async def test_a_store_serving_from_memory_shows_in_the_totals() -> None:
    store = open_store("redis://127.0.0.1:1/0", socket_timeout=0.2, operation_timeout=0.3)
    try:
        await store.increment(CounterName.REQUESTS)
        exposition = (await ProxyMetrics(store).render()).decode()
    finally:
        await store.aclose()
    assert metric_total(exposition, "guardrail_store_degraded") == 1
    assert metric_total(exposition, "guardrail_store_outages") == 1
    assert metric_total(exposition, "guardrail_shared_requests") == 1


@pytest.fixture
def counting_proxy() -> Iterator[str]:
    """``/metrics`` of a store that counts one more request at every scrape."""
    store = MemoryStore()
    metrics = ProxyMetrics(store)
    app = FastAPI()

    @app.get("/metrics")
    async def scrape() -> Response:
        await store.increment(CounterName.REQUESTS)
        return Response(await metrics.render(), media_type=CONTENT_TYPE)

    with serve(app) as url:
        yield url


def test_the_count_is_awaited_until_it_settles_and_never_overshoots(counting_proxy: str) -> None:
    settled = count_requests(counting_proxy, before=0, sent=3, timeout_s=10)
    assert settled.counted == 3 and settled.settle_s is not None and settled.outages == 0
    over = count_requests(counting_proxy, before=0, sent=1, timeout_s=10)
    assert over.counted == 4 and over.settle_s is None
    late = count_requests(counting_proxy, before=0, sent=100, timeout_s=0.6)
    assert late.counted < 100 and late.settle_s is None


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.mark.e2e
@pytest.mark.redis
def test_two_workers_sharing_redis_count_every_request(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "summary.json"
    argv = ["--workers", "2", "--redis-url", redis_server.url, "--rate", "10", "--duration", "2"]
    assert main([*argv, "--fault-rate", "0.2", "--upstream-timeout", "1", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["sent"] == 20
    assert summary["store"]["counted"] == 20
    assert summary["store"]["settle_s"] is not None
    assert not any(v.startswith(("lost", "malformed")) for v in summary["verdicts"])
