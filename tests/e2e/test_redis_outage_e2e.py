"""The proxy through a Redis outage, seen by an OpenAI SDK client, against a dedicated redis-server.

The real app (default pipeline, rate limit, audit) keeps its state in a redis-server on its own
port. Killing or freezing that server must not fail a request, plain or streamed; ``/metrics``
must show the store degraded; and once the server is back the proxy must return to it by itself
and write its counters there again, the counts gathered during the outage included.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest
from _redis_server import RedisServer, running_redis
from openai.types.chat import ChatCompletionMessageParam

from eval.load_test import metric_total
from eval.loopback import Script, StubUpstream, serve
from guardrail.store import CounterKey, CounterName, RedisStore
from guardrail.store.redis_backend import connect
from proxy.app import create_app
from proxy.config import ProxySettings

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

ANSWER = ("Pin-tumbler", " locks", " use", " pins", " of", " different", " lengths.")
REFUSAL = ("I'm", " sorry,", " but", " I", " can't", " help", " with", " that.")
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "How do pin-tumbler locks work?"}
]
OUTAGE_BUDGET_S = 10.0
"""Wall time allowed for all the requests sent during an outage, the first one's wait included."""
OUTAGE_HOLD_S = 2.0
"""The least an outage lasts, so that the store's probe meets the dead server at least once."""
RECOVERY_BUDGET_S = 40.0
"""The store probes Redis with backoff capped at 30 s; recovery must come within one cap."""


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.fixture(scope="module")
def proxy_url(stub: tuple[StubUpstream, str], redis_server: RedisServer) -> Iterator[str]:
    settings = ProxySettings(
        upstream_base_url=f"{stub[1]}/v1",
        upstream_timeout_s=30,
        redis_url=redis_server.url,
        rate_limit_per_minute=100_000,
        audit=True,
    )
    with serve(create_app(settings)) as url:
        wait_for(lambda: httpx.get(f"{url}/readyz", timeout=5).status_code == 200, 180)
        yield url


@pytest.fixture
def client(proxy_url: str, stub: tuple[StubUpstream, str]) -> openai.OpenAI:
    stub[0].script = Script(pieces=ANSWER)
    return openai.OpenAI(base_url=f"{proxy_url}/v1", api_key="k", max_retries=0, timeout=15)


def wait_for(condition: Callable[[], bool], timeout_s: float) -> float:
    """Poll ``condition`` until it holds; the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s:g} s"
        time.sleep(0.1)
    return time.monotonic() - started


def plain(client: openai.OpenAI) -> str | None:
    return client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content


def streamed(client: openai.OpenAI) -> str:
    chunks = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def traffic(client: openai.OpenAI, stub: StubUpstream, rounds: int) -> int:
    """``rounds`` of a plain answer, a streamed answer and a rewritten refusal; requests sent."""
    for _ in range(rounds):
        stub.script = Script(pieces=ANSWER)
        assert plain(client) == "".join(ANSWER)
        assert streamed(client) == "".join(ANSWER)
        stub.script = Script(pieces=REFUSAL)
        raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        assert raw.status_code == 200
        assert raw.headers["x-guardrail-action"] != "pass"
        assert raw.parse().choices[0].message.content
    stub.script = Script(pieces=ANSWER)
    return 3 * rounds


def metrics(proxy_url: str) -> dict[str, float]:
    """The store's series in the proxy's ``/metrics``."""
    exposition = httpx.get(f"{proxy_url}/metrics", timeout=10).text
    return {
        name: metric_total(exposition, f"guardrail_{name}")
        for name in ("store_degraded", "store_outages", "shared_requests")
    }


def in_redis(url: str) -> tuple[int, int]:
    """The request counter and the audit stream's length, read straight from Redis."""

    async def read() -> tuple[int, int]:
        store = RedisStore(connect(url, timeout=2))
        try:
            counters = await store.counters()
            audit = await store.read_audit(10_000)
        finally:
            await store.aclose()
        return counters.get(CounterKey.of(CounterName.REQUESTS), 0), len(audit)

    return asyncio.run(read())


def degraded_then_recovered(
    proxy_url: str,
    client: openai.OpenAI,
    stub: StubUpstream,
    stop: Callable[[], None],
    resume: Callable[[], None],
) -> tuple[int, int]:
    """Requests through one outage made by ``stop`` and ended by ``resume``.

    Returns the requests sent during the outage and after recovery.
    """
    healthy = metrics(proxy_url)
    assert healthy["store_degraded"] == 0
    stop()
    started = time.monotonic()
    during = traffic(client, stub, rounds=2)
    assert time.monotonic() - started < OUTAGE_BUDGET_S
    degraded = metrics(proxy_url)
    assert degraded["store_degraded"] == 1
    assert degraded["store_outages"] == healthy["store_outages"] + 1
    # The last shared totals plus this worker's outage counts: never lower than before.
    assert degraded["shared_requests"] == healthy["shared_requests"] + during
    ready = httpx.get(f"{proxy_url}/readyz", timeout=5)
    assert ready.status_code == 200, "a degraded store still serves: the proxy stays ready"
    assert ready.json()["store"] == {
        "backend": "redis",
        "degraded": True,
        "outages": healthy["store_outages"] + 1,
    }
    time.sleep(max(0.0, OUTAGE_HOLD_S - (time.monotonic() - started)))  # the probe fails too

    resume()
    wait_for(lambda: metrics(proxy_url)["store_degraded"] == 0, RECOVERY_BUDGET_S)
    after = traffic(client, stub, rounds=1)
    assert metrics(proxy_url)["store_outages"] == healthy["store_outages"] + 1
    return during, after


def test_a_killed_redis_degrades_the_store_not_the_requests(
    proxy_url: str, client: openai.OpenAI, stub: tuple[StubUpstream, str], redis_server: RedisServer
) -> None:
    before = traffic(client, stub[0], rounds=1)
    counted, audited = in_redis(redis_server.url)
    assert counted >= before and audited >= before
    assert metrics(proxy_url)["shared_requests"] == counted

    during, after = degraded_then_recovered(
        proxy_url, client, stub[0], redis_server.kill, redis_server.start
    )

    # The restarted server starts empty: what it holds is the outage's hand-over and what followed.
    assert in_redis(redis_server.url) == (during + after, during + after)
    assert metrics(proxy_url)["shared_requests"] == during + after


def test_a_frozen_redis_degrades_the_store_and_loses_no_count(
    proxy_url: str, client: openai.OpenAI, stub: tuple[StubUpstream, str], redis_server: RedisServer
) -> None:
    traffic(client, stub[0], rounds=1)
    counted, audited = in_redis(redis_server.url)

    during, after = degraded_then_recovered(
        proxy_url,
        client,
        stub[0],
        lambda: redis_server.signal(signal.SIGSTOP),
        lambda: redis_server.signal(signal.SIGCONT),
    )

    now_counted, now_audited = in_redis(redis_server.url)
    extra_counts = now_counted - (counted + during + after)
    extra_entries = now_audited - (audited + during + after)
    # Nothing is lost. The one write that timed out when the freeze began reaches Redis when it
    # thaws and was also kept in memory, so it may be there twice: at-least-once, by one at most.
    assert extra_counts >= 0 and extra_entries >= 0
    assert extra_counts + extra_entries <= 1
