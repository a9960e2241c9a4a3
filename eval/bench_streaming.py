"""What the proxy costs on loopback: time to first token for streams, latency for plain replies.

Three processes on this machine: a scripted stub upstream (:mod:`eval.loopback`), the proxy in front
of it with its default settings and pipeline, and this client. Every sample is sent both ways,
directly to the stub and through the proxy, in alternating order, so drift on a shared machine
hits both sides alike.

* Streams: real answers (not refusals) from the bundled data, streamed word by word at
  ``--rate`` tokens per second. Reported: the extra time to the first content token, median and
  p99, per group of replies; how many streams took the fast path; and how many were delayed by
  more than their first sentence takes to arrive.
* Plain replies: the proxy's added latency (median, p99), the proxy process's CPU time per
  request, and requests per second with ``--concurrency`` calls in flight; ``--runs`` repeats
  this and reports the median run with the range over runs. CPU time per request is the figure
  a shared machine distorts least: wall times there depend on what else is running.
* The proxy's upstream call (``litellm.acompletion``) alone against the stub, from this process:
  its latency and its CPU time per call beside a plain HTTP call's, which is litellm's own share
  of the overhead. ``--turns`` sets how many messages each plain request carries.

Run with ``python -m eval.bench_streaming``; ``--help`` lists the knobs.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import multiprocessing
import os
import random
import re
import socket
import statistics
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from eval.loopback import Script, StubUpstream
from proxy.openings import may_open_refusal

DATA = Path(__file__).parent / "data"
_PIECE = re.compile(r"\s*[\u3040-\u30ff\u3400-\u9fff]{1,2}|\s*[^\s\u3040-\u30ff\u3400-\u9fff]+|\s+")
_SENTENCE_END = re.compile(r"[.!?。！？](\s|$)")
EN = "XSTest answers (en)"
LATIN = "answers, other Latin-script languages"
OTHER = "answers, other scripts"
CPU_PATH = "/bench/cpu"
"""Where the benchmarked proxy process reports its own CPU clock."""


@dataclass(frozen=True)
class Sample:
    group: str
    prompt: str
    pieces: tuple[str, ...]

    @property
    def first_sentence_pieces(self) -> int:
        """Pieces until the first sentence visibly ends (its closing mark and what follows)."""
        text = ""
        for count, piece in enumerate(self.pieces, start=1):
            text += piece
            if _SENTENCE_END.search(text):
                return min(count + 1, len(self.pieces))
        return len(self.pieces)


@dataclass
class StreamResult:
    group: str
    fast: bool
    extra_ms: float
    sentence_ms: float
    same_text: bool


def load_samples(per_group: int, max_pieces: int, seed: int) -> list[Sample]:
    """Answers (full compliance) from XSTest and the multilingual set, cut to ``max_pieces``."""
    groups: dict[str, list[str]] = {EN: [], LATIN: [], OTHER: []}
    for path in sorted((DATA / "xstest").glob("xstest_v2_completions_*.csv")):
        with path.open(encoding="utf-8") as handle:
            groups[EN] += [
                row["completion"]
                for row in csv.DictReader(handle)
                if row["final_label"].startswith("1_")
            ]
    with (DATA / "multilingual_replies.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["label3"] == "full_compliance" and row["lang"] != "en":
                groups[LATIN if _latin(row["response"]) else OTHER].append(row["response"])
    rng = random.Random(seed)
    samples = []
    for group, texts in groups.items():
        for index, text in enumerate(rng.sample(texts, min(per_group, len(texts)))):
            pieces = tuple(_PIECE.findall(text.strip()))[:max_pieces]
            samples.append(Sample(group, f"bench-{group}-{index}", pieces))
    return samples


def _latin(text: str) -> bool:
    letter = next((c for c in text if c.isalpha()), "")
    return unicodedata.name(letter, "").startswith("LATIN")


def takes_fast_path(pieces: Sequence[str]) -> bool:
    """Whether the proxy's gate passes this stream on its opening words, as it streams."""
    text = ""
    for piece in pieces:
        text += piece
        verdict = may_open_refusal(text)
        if verdict is not None:
            return not verdict
    return False


def _serve_stub(sock: socket.socket, stub: StubUpstream) -> None:
    import uvicorn

    uvicorn.Server(uvicorn.Config(stub.app, log_level="warning")).run(sockets=[sock])


def _serve_proxy(sock: socket.socket, upstream_url: str) -> None:
    import uvicorn

    from proxy.app import create_app
    from proxy.config import ProxySettings

    app = with_cpu_clock(create_app(ProxySettings(upstream_base_url=upstream_url)))
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def with_cpu_clock(app: ASGIApp) -> ASGIApp:
    """``app`` that also answers ``CPU_PATH`` with its process's CPU seconds, so the client can
    tell what a request costs the proxy itself."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == CPU_PATH:
            await JSONResponse({"cpu_s": time.process_time()})(scope, receive, send)
        else:
            await app(scope, receive, send)

    return wrapped


@contextmanager
def server_process(
    target: Callable[..., None], *args: Any, ready_path: str, timeout_s: float = 180.0
) -> Iterator[str]:
    """Run ``target(sock, *args)`` in a forked process on a free loopback port."""
    # IPPROTO_TCP explicitly: asyncio only turns Nagle off on sockets that say they are TCP,
    # and Nagle with delayed ACKs costs 40 ms per small response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    process = multiprocessing.get_context("fork").Process(target=target, args=(sock, *args))
    process.start()
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(url + ready_path, timeout=2).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not process.is_alive():
                raise RuntimeError(f"the server behind {url} did not start")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.join(10)
        sock.close()


async def time_to_first_token(
    client: httpx.AsyncClient, url: str, prompt: str
) -> tuple[float, str]:
    """Seconds until the first content token, and the whole streamed text."""
    body = {"model": "bench", "messages": [{"role": "user", "content": prompt}], "stream": True}
    started = time.perf_counter()
    first: float | None = None
    text = []
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            for choice in json.loads(line[6:]).get("choices", ()):
                content = choice.get("delta", {}).get("content")
                if content:
                    first = first if first is not None else time.perf_counter() - started
                    text.append(content)
    if first is None:
        raise RuntimeError(f"no content streamed from {url}")
    return first, "".join(text)


async def bench_streams(
    samples: Sequence[Sample], stub_url: str, proxy_url: str, interval_s: float
) -> list[StreamResult]:
    results = []
    async with httpx.AsyncClient(timeout=60) as client:
        for index, sample in enumerate(samples):
            urls = (stub_url, proxy_url) if index % 2 == 0 else (proxy_url, stub_url)
            timed = {url: await time_to_first_token(client, url, sample.prompt) for url in urls}
            (direct_s, direct_text), (proxied_s, proxied_text) = timed[stub_url], timed[proxy_url]
            results.append(
                StreamResult(
                    group=sample.group,
                    fast=takes_fast_path(sample.pieces),
                    extra_ms=(proxied_s - direct_s) * 1000,
                    sentence_ms=sample.first_sentence_pieces * interval_s * 1000,
                    same_text=direct_text == proxied_text,
                )
            )
    return results


def conversation(turns: int) -> list[dict[str, str]]:
    """A chat of ``turns`` messages that ends with the user's; earlier turns are 50-word lines."""
    line = " ".join(["word"] * 50)
    earlier = [
        {"role": "assistant" if index % 2 else "user", "content": f"{line} {index}"}
        for index in range(turns - 1)
    ]
    return [*earlier, {"role": "user", "content": "plain"}]


async def bench_plain(
    stub_url: str, proxy_url: str, requests: int, concurrency: int, turns: int = 1
) -> dict[str, dict[str, float]]:
    body = {"model": "bench", "messages": conversation(turns)}
    figures: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64)) as client:

        async def call(url: str) -> float:
            started = time.perf_counter()
            response = await client.post(url + "/v1/chat/completions", json=body)
            response.raise_for_status()
            return time.perf_counter() - started

        async def proxy_cpu_s() -> float:
            return float((await client.get(proxy_url + CPU_PATH)).json()["cpu_s"])

        latencies: dict[str, list[float]] = {stub_url: [], proxy_url: []}
        cpu_before = await proxy_cpu_s()
        for index in range(requests):
            for url in (stub_url, proxy_url) if index % 2 == 0 else (proxy_url, stub_url):
                latencies[url].append(await call(url))
        proxy_cpu_ms = (await proxy_cpu_s() - cpu_before) / requests * 1000
        for name, url in (("direct", stub_url), ("proxy", proxy_url)):
            figures[name] = {
                "median_ms": statistics.median(latencies[url]) * 1000,
                "p99_ms": percentile(latencies[url], 99) * 1000,
                "rps": await throughput(call, url, requests, concurrency),
            }
        figures["proxy"]["cpu_ms"] = proxy_cpu_ms
    return figures


async def bench_litellm(
    stub_url: str, requests: int, turns: int = 1, block: int = 20
) -> dict[str, float]:
    """The proxy's upstream call (``litellm.acompletion``) against the stub, from this process:
    litellm's share of the overhead.

    Calls go in blocks, alternating with blocks of plain HTTP calls, after a few of each to warm
    up; a block's CPU time includes the logging task litellm starts after each call.
    """
    from proxy.config import ProxySettings
    from proxy.upstream import Upstream

    upstream = Upstream(ProxySettings(upstream_base_url=f"{stub_url}/v1"))
    body = {"model": "bench", "messages": conversation(turns)}
    async with httpx.AsyncClient(timeout=60) as client:

        async def via_litellm() -> None:
            await upstream.complete(body)

        async def via_http() -> None:
            response = await client.post(f"{stub_url}/v1/chat/completions", json=body)
            response.json()

        calls = {"litellm": via_litellm, "http": via_http}
        for call in (*calls.values(),) * 5:  # litellm loads code and builds its client at first
            await call()
        latencies: dict[str, list[float]] = {name: [] for name in calls}
        cpu_s = dict.fromkeys(calls, 0.0)
        for index in range(math.ceil(requests / block)):
            for name in calls if index % 2 == 0 else reversed(calls):
                cpu_started = time.process_time()
                for _ in range(block):
                    started = time.perf_counter()
                    await calls[name]()
                    latencies[name].append(time.perf_counter() - started)
                await asyncio.sleep(0.01)
                cpu_s[name] += time.process_time() - cpu_started
    return {
        "median_ms": statistics.median(latencies["litellm"]) * 1000,
        "p99_ms": percentile(latencies["litellm"], 99) * 1000,
        "cpu_ms": cpu_s["litellm"] / len(latencies["litellm"]) * 1000,
        "http_cpu_ms": cpu_s["http"] / len(latencies["http"]) * 1000,
    }


async def warm_up(stub_url: str, proxy_url: str, sample: Sample | None) -> None:
    """First calls load code lazily on both sides; they are not what a client meets later."""
    async with httpx.AsyncClient(timeout=120) as client:
        for url in (stub_url, proxy_url) * 3:
            if sample is not None:
                await time_to_first_token(client, url, sample.prompt)
            response = await client.post(
                url + "/v1/chat/completions",
                json={"model": "bench", "messages": [{"role": "user", "content": "plain"}]},
            )
            response.raise_for_status()


async def throughput(
    call: Callable[[str], Awaitable[float]], url: str, requests: int, concurrency: int
) -> float:
    remaining = iter(range(requests))

    async def worker() -> None:
        for _ in remaining:
            await call(url)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return requests / (time.perf_counter() - started)


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile: a value that was actually measured."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def stream_table(results: Sequence[StreamResult], rate: float) -> Table:
    table = Table(title=f"Extra time to first token, upstream at {rate:g} tokens/s (ms)")
    columns = ("replies", "n", "median", "p99", "fast path", "median fast", "median held")
    for column in (*columns, "> 1 sentence", "same text"):
        table.add_column(column, justify="left" if column == "replies" else "right")
    for group in [*dict.fromkeys(r.group for r in results), "all"]:
        rows = [r for r in results if group in ("all", r.group)]
        extras = [r.extra_ms for r in rows]
        fast = [r.extra_ms for r in rows if r.fast]
        held = [r.extra_ms for r in rows if not r.fast]
        table.add_row(
            group,
            str(len(rows)),
            f"{statistics.median(extras):.1f}",
            f"{percentile(extras, 99):.1f}",
            f"{len(fast)}/{len(rows)}",
            f"{statistics.median(fast):.1f}" if fast else "-",
            f"{statistics.median(held):.1f}" if held else "-",
            str(sum(r.extra_ms > r.sentence_ms + 25 for r in rows)),
            f"{sum(r.same_text for r in rows)}/{len(rows)}",
        )
    table.caption = (
        "fast path: the opening word cannot start a refusal, so nothing waits; held: waits for "
        "the first sentence (or the window's characters or time); > 1 sentence: streams delayed "
        "by more than their first sentence takes to arrive, plus 25 ms"
    )
    return table


def plain_table(
    runs: Sequence[dict[str, dict[str, float]]], alone: dict[str, float], concurrency: int
) -> Table:
    """The median run of each figure, and its range over runs when there are several."""
    table = Table(title=f"Non-streaming replies (stub answers at once), {len(runs)} run(s)")
    for column in ("path", "median ms", "p99 ms", "CPU ms", f"req/s at {concurrency} in flight"):
        table.add_column(column, justify="left" if column == "path" else "right")

    def cell(values: Sequence[float], digits: int = 2) -> str:
        middle = f"{statistics.median(values):.{digits}f}"
        if len(values) == 1:
            return middle
        return f"{middle} ({min(values):.{digits}f}-{max(values):.{digits}f})"

    for name in ("direct", "proxy"):
        rows = [run[name] for run in runs]
        table.add_row(
            name,
            cell([row["median_ms"] for row in rows]),
            cell([row["p99_ms"] for row in rows], 1),
            cell([row["cpu_ms"] for row in rows]) if "cpu_ms" in rows[0] else "-",
            cell([row["rps"] for row in rows], 0),
        )
    table.add_row(
        "upstream call (litellm) alone",
        f"{alone['median_ms']:.2f}",
        f"{alone['p99_ms']:.1f}",
        f"{alone['cpu_ms']:.2f}",
        "-",
    )
    added = [run["proxy"]["median_ms"] - run["direct"]["median_ms"] for run in runs]
    direct = statistics.median([run["direct"]["median_ms"] for run in runs])
    litellm_share = alone["median_ms"] - direct
    table.caption = (
        f"added by the proxy: {cell(added)} ms median, of which its upstream call through "
        f"litellm.acompletion is about {litellm_share:.2f} ms; CPU ms: the proxy process's CPU "
        f"time per request, and the upstream call's in this process, where a plain HTTP call "
        f"takes {alone['http_cpu_ms']:.2f} ms"
    )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--per-group", type=int, default=40, help="stream samples per group (0: no streams)"
    )
    parser.add_argument("--max-pieces", type=int, default=30, help="tokens streamed per sample")
    parser.add_argument("--rate", type=float, default=50.0, help="upstream tokens per second")
    parser.add_argument("--requests", type=int, default=300, help="plain requests per path")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3, help="repeats of the plain-reply bench")
    parser.add_argument("--turns", type=int, default=1, help="messages in each plain request")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    console = Console(width=140)
    interval_s = 1 / args.rate
    samples = load_samples(args.per_group, args.max_pieces, args.seed)
    stub = StubUpstream(
        Script(pieces=("Plain", " reply", ".")),
        by_prompt={s.prompt: Script(pieces=s.pieces, interval_s=interval_s) for s in samples},
    )
    with (
        server_process(_serve_stub, stub, ready_path="/v1/models") as stub_url,
        server_process(_serve_proxy, f"{stub_url}/v1", ready_path="/healthz") as proxy_url,
    ):
        console.print(
            f"stub {stub_url}, proxy {proxy_url}: {len(samples)} streams; "
            f"load average before: {os.getloadavg()[0]:.2f}"
        )
        asyncio.run(warm_up(stub_url, proxy_url, samples[0] if samples else None))
        if samples:
            results = asyncio.run(bench_streams(samples, stub_url, proxy_url, interval_s))
            console.print(stream_table(results, args.rate))
        runs = [
            asyncio.run(
                bench_plain(stub_url, proxy_url, args.requests, args.concurrency, args.turns)
            )
            for _ in range(args.runs)
        ]
        alone = asyncio.run(bench_litellm(stub_url, args.requests, args.turns))
        console.print(plain_table(runs, alone, args.concurrency))
        console.print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
