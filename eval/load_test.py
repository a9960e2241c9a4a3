"""Drive the proxy at a fixed rate for a bounded time, with upstream faults, and check every reply.

Three processes on loopback: the scripted stub upstream (:mod:`eval.loopback`), the proxy (real
uvicorn, default pipeline) in front of it, and this client. Requests are sent open-loop at
``--rate`` per second for ``--duration`` seconds, half of them streamed; a ``--fault-rate`` share
asks the stub to fail (HTTP 500, no answer within the proxy's upstream timeout, or a stream cut
mid-way). Every response is checked: a complete OpenAI reply, or an OpenAI error (as a response
or as an error event ending a stream). Anything else counts as malformed, and a request that gets
no response at all counts as lost. The same schedule is then sent straight to the stub, and the
proxy's overhead is the difference in latency, median and p99, on the requests without faults.

The proxy starts the way ``guardrail serve`` does, from environment settings through the uvicorn
factory, with ``--workers`` processes sharing one socket. With ``--redis-url`` the workers share
that Redis (pick a database of its own, e.g. ``redis://127.0.0.1:6379/15``); the shared request
counter is read from ``/metrics`` before and after the run and must grow by exactly the number of
requests sent, whichever worker served them (counts a worker kept in memory while Redis did not
answer in time are handed over when it does, so the total may settle shortly after the run).

Run with ``python -m eval.load_test``; ``--help`` lists the knobs. Exits non-zero when a
response was lost or malformed, or when the shared counter missed or added requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from eval.bench_streaming import _serve_stub, percentile, server_process
from eval.loopback import Script, StubUpstream

REPLY: tuple[str, ...] = tuple(
    [
        "Pin-tumbler",
        " locks",
        " use",
        " spring-loaded",
        " pins",
        " of",
        " different",
        " lengths;",
        " the",
        " right",
        " key",
        " lifts",
        " each",
        " pin",
        " to",
        " the",
        " shear",
        " line,",
        " so",
        " the",
        " plug",
        " can",
        " turn.",
    ]
)
FAULTS = ("status_500", "timeout", "cut")
"""Kinds of upstream fault; ``cut`` applies to streams only (plain requests get a 500 instead)."""
EXPECTED_STATUS = {"ok": 200, "status_500": 502, "timeout": 504}


def stub_scripts(pieces: Sequence[str], delay_s: float) -> dict[str, Script]:
    """The stub's answer for each kind of request, chosen by the prompt's text."""
    return {
        "ok": Script(pieces=pieces),
        "status_500": Script(status=500),
        "timeout": Script(pieces=pieces, delay_s=delay_s),
        "cut": Script(pieces=pieces, cut_after=len(pieces) // 2),
    }


@dataclass(frozen=True)
class Planned:
    at_s: float
    kind: str
    stream: bool


@dataclass
class Outcome:
    planned: Planned
    status: int | None
    latency_s: float
    verdict: str
    """``reply``, ``error``, ``malformed: ...`` or ``lost: ...``."""


def plan(rate: float, duration_s: float, fault_rate: float, seed: int) -> list[Planned]:
    rng = random.Random(seed)
    requests = []
    for index in range(int(rate * duration_s)):
        stream = rng.random() < 0.5
        kind = "ok"
        if rng.random() < fault_rate:
            kind = rng.choice(FAULTS if stream else FAULTS[:2])
        requests.append(Planned(index / rate, kind, stream))
    return requests


def check_plain(status: int, body: bytes) -> str:
    """``reply`` or ``error`` when ``body`` is a chat completion or an OpenAI error."""
    try:
        data = json.loads(body)
    except ValueError:
        return "malformed: not JSON"
    if status != 200:
        return "error" if _is_error(data) else "malformed: error without OpenAI's shape"
    choices = data.get("choices") if isinstance(data, dict) else None
    if data.get("object") != "chat.completion" or not isinstance(choices, list) or not choices:
        return "malformed: not a chat.completion"
    message = choices[0].get("message") or {}
    if not isinstance(message.get("content"), str) or not message["content"]:
        return "malformed: no content"
    return "reply"


def check_stream(status: int, body: bytes) -> str:
    """``reply`` for a complete stream, ``error`` for one that ends with an OpenAI error."""
    if status != 200:
        return check_plain(status, body)
    events = [line[6:] for line in body.decode("utf-8").split("\n") if line.startswith("data: ")]
    if not events or events[-1] != "[DONE]":
        return "malformed: stream without [DONE]"
    finished = False
    for raw in events[:-1]:
        try:
            event = json.loads(raw)
        except ValueError:
            return "malformed: event not JSON"
        if _is_error(event):
            return "error" if raw is events[-2] else "malformed: events after an error"
        if event.get("object") != "chat.completion.chunk":
            return "malformed: not a chat.completion.chunk"
        finished |= any(c.get("finish_reason") for c in event.get("choices") or ())
    return "reply" if finished else "malformed: no finish_reason"


def _is_error(data: Any) -> bool:
    error = data.get("error") if isinstance(data, dict) else None
    return isinstance(error, dict) and isinstance(error.get("message"), str)


async def drive(url: str, requests: Sequence[Planned], timeout_s: float) -> list[Outcome]:
    """Send ``requests`` open-loop on their schedule; one :class:`Outcome` each."""
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s, limits=limits) as client:

        async def one(planned: Planned) -> Outcome:
            body = {
                "model": "load",
                "messages": [{"role": "user", "content": planned.kind}],
                "stream": planned.stream,
            }
            started = time.perf_counter()
            try:
                response = await client.post("/v1/chat/completions", json=body)
            except httpx.HTTPError as exc:
                lost = f"lost: {type(exc).__name__}"
                return Outcome(planned, None, time.perf_counter() - started, lost)
            latency = time.perf_counter() - started
            check = check_stream if planned.stream else check_plain
            verdict = check(response.status_code, response.content)
            return Outcome(planned, response.status_code, latency, verdict)

        start = time.perf_counter()
        tasks = []
        for planned in requests:
            delay = start + planned.at_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(planned)))
        return list(await asyncio.gather(*tasks))


def _serve_proxy(sock: socket.socket, environment: dict[str, str], workers: int) -> None:
    """Run the proxy as ``guardrail serve --workers N`` does: the factory reads the environment."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ.pop("REDIS_URL", None)  # without --redis-url the proxy keeps its state in memory
    os.environ.update(environment)
    config = uvicorn.Config(
        "proxy.app:app_from_environment",
        factory=True,
        workers=workers,
        log_level="warning",
        timeout_worker_healthcheck=30,  # a worker loading its models on a busy machine is alive
    )
    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
        return
    # multiprocessing left this process a stdin that spawned workers cannot reopen; they need none.
    sys.stdin = None
    Multiprocess(config, sockets=[sock]).run()


def wait_until_ready(url: str, answers: int, timeout_s: float) -> None:
    """Wait for ``answers`` ready replies in a row, each on a new connection.

    Workers share the socket, so one ready reply says nothing of the others; a run of them on
    fresh connections, which any idle worker may accept, does.
    """
    deadline = time.monotonic() + timeout_s
    in_a_row = 0
    while in_a_row < answers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the proxy behind {url} did not become ready on every worker")
        try:
            ready = httpx.get(f"{url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            ready = False
        in_a_row = in_a_row + 1 if ready else 0
        if not ready:
            time.sleep(0.2)


def metric_total(exposition: str, family: str) -> float:
    """The sum of one family's samples in ``/metrics`` text; 0 when the family is absent."""
    return sum(
        sample.value
        for found in text_string_to_metric_families(exposition)
        if found.name == family
        for sample in found.samples
        if sample.name in (family, f"{family}_total")
    )


def read_metrics(url: str) -> str:
    return httpx.get(f"{url}/metrics", timeout=10).text


def shared_requests(url: str) -> int:
    return int(metric_total(read_metrics(url), "guardrail_shared_requests"))


@dataclass(frozen=True)
class StoreCount:
    counted: int
    """Requests the shared store counted since the run began."""
    settle_s: float | None
    """Seconds after the run until the count matched; ``None`` if it never did."""
    outages: int
    """The most Redis outages any worker that answered a scrape had seen."""


def count_requests(url: str, before: int, sent: int, timeout_s: float) -> StoreCount:
    """Read the shared request count until it reaches ``sent`` or ``timeout_s`` passes.

    A worker that lost Redis under load counts in memory and hands its counts over when Redis
    answers again, so the total may settle a little after the run; it must never overshoot.
    Each scrape opens a new connection, so different workers answer.
    """
    started = time.monotonic()
    outages = 0
    while True:
        exposition = read_metrics(url)
        counted = int(metric_total(exposition, "guardrail_shared_requests")) - before
        outages = max(outages, int(metric_total(exposition, "guardrail_store_outages")))
        waited = time.monotonic() - started
        if counted == sent:
            return StoreCount(counted, waited, outages)
        if waited > timeout_s or counted > sent:
            return StoreCount(counted, None, outages)
        time.sleep(0.5)


@dataclass(frozen=True)
class Summary:
    sent: int
    verdicts: dict[str, int]
    unexpected_status: int
    requests_per_s: float
    overhead_ms: dict[str, dict[str, float]]
    store: StoreCount | None = None
    """The shared request count; ``None`` without Redis."""

    @property
    def failed(self) -> bool:
        bad = sum(n for v, n in self.verdicts.items() if v.startswith(("lost", "malformed")))
        miscounted = self.store is not None and self.store.counted != self.sent
        return bad > 0 or self.unexpected_status > 0 or miscounted


def summarise(
    proxied: Sequence[Outcome],
    direct: Sequence[Outcome],
    wall_s: float,
    store: StoreCount | None = None,
) -> Summary:
    unexpected = 0
    for outcome in proxied:
        expected = EXPECTED_STATUS.get(outcome.planned.kind)
        if expected is not None and outcome.status is not None and outcome.status != expected:
            unexpected += 1
    overhead: dict[str, dict[str, float]] = {}
    for stream in (False, True):
        through = [
            o.latency_s for o in proxied if o.planned.kind == "ok" and o.planned.stream == stream
        ]
        straight = [
            o.latency_s for o in direct if o.planned.kind == "ok" and o.planned.stream == stream
        ]
        if through and straight:
            overhead["stream" if stream else "plain"] = {
                "p50": (percentile(through, 50) - percentile(straight, 50)) * 1000,
                "p99": (percentile(through, 99) - percentile(straight, 99)) * 1000,
                "proxy_p50": percentile(through, 50) * 1000,
                "direct_p50": percentile(straight, 50) * 1000,
            }
    return Summary(
        sent=len(proxied),
        verdicts=dict(Counter(o.verdict for o in proxied)),
        unexpected_status=unexpected,
        requests_per_s=len(proxied) / wall_s,
        overhead_ms=overhead,
        store=store,
    )


def report(summary: Summary, args: argparse.Namespace, console: Console) -> None:
    console.print(
        f"{summary.sent} requests at {args.rate:g}/s for {args.duration:g} s "
        f"(faults {args.fault_rate:.1%}) to {args.workers} worker(s); "
        f"completed at {summary.requests_per_s:.1f} requests/s; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    if summary.store is not None:
        store = summary.store
        verdict = "MISMATCH" if store.settle_s is None else f"match {store.settle_s:.1f} s after"
        console.print(
            f"shared request counter: +{store.counted} for {summary.sent} sent ({verdict}); "
            f"Redis outages seen by a worker: {store.outages}"
        )
    verdicts = Table("verdict", "responses")
    for verdict, count in sorted(summary.verdicts.items()):
        verdicts.add_row(verdict, str(count))
    verdicts.add_row("unexpected status", str(summary.unexpected_status))
    console.print(verdicts)
    overhead = Table(
        "requests without faults", "proxy p50", "direct p50", "overhead p50", "overhead p99"
    )
    for name, figures in summary.overhead_ms.items():
        overhead.add_row(
            name,
            f"{figures['proxy_p50']:.2f} ms",
            f"{figures['direct_p50']:.2f} ms",
            f"{figures['p50']:.2f} ms",
            f"{figures['p99']:.2f} ms",
        )
    console.print(overhead)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.load_test", description=__doc__)
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of traffic")
    parser.add_argument("--fault-rate", type=float, default=0.01, help="share of faulty requests")
    parser.add_argument("--upstream-timeout", type=float, default=2.0, help="proxy's timeout (s)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--redis-url", help="Redis the workers share, e.g. redis://127.0.0.1:6379/15"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", dest="json_path", help="also write the summary here")
    args = parser.parse_args(argv)
    if not (0 < args.rate <= 2000 and 0 < args.duration <= 600 and 0 <= args.fault_rate <= 1):
        parser.error("need 0 < --rate <= 2000, 0 < --duration <= 600, 0 <= --fault-rate <= 1")
    if not 1 <= args.workers <= 32:
        parser.error("need 1 <= --workers <= 32")
    console = Console()
    requests = plan(args.rate, args.duration, args.fault_rate, args.seed)
    stub = StubUpstream(by_prompt=stub_scripts(REPLY, delay_s=args.upstream_timeout * 2))
    client_timeout = args.upstream_timeout * 4 + 10
    store: StoreCount | None = None
    with server_process(_serve_stub, stub, ready_path="/v1/models") as stub_url:
        environment = {
            "GUARDRAIL_UPSTREAM_BASE_URL": f"{stub_url}/v1",
            "GUARDRAIL_UPSTREAM_TIMEOUT_S": str(args.upstream_timeout),
        }
        if args.redis_url:
            environment["REDIS_URL"] = args.redis_url
        with server_process(
            _serve_proxy, environment, args.workers, ready_path="/readyz"
        ) as proxy_url:
            wait_until_ready(proxy_url, answers=5 * args.workers, timeout_s=180)
            warm_up = plan(5 * args.workers, 2, 0, args.seed)  # traffic for every worker
            asyncio.run(drive(proxy_url, warm_up, client_timeout))
            before = shared_requests(proxy_url) if args.redis_url else 0
            started = time.perf_counter()
            proxied = asyncio.run(drive(proxy_url, requests, client_timeout))
            wall_s = time.perf_counter() - started
            if args.redis_url:
                store = count_requests(proxy_url, before, len(requests), timeout_s=40)
        direct = asyncio.run(drive(stub_url, requests, client_timeout))
    summary = summarise(proxied, direct, wall_s, store)
    report(summary, args, console)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), **asdict(summary)}, handle, indent=2)
    return 1 if summary.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
