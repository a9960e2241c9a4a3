"""The streaming benchmark's own arithmetic and sampling."""

from __future__ import annotations

import httpx
import pytest
from rich.console import Console
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from eval.bench_streaming import (
    CPU_PATH,
    EN,
    LATIN,
    OTHER,
    Sample,
    conversation,
    load_samples,
    percentile,
    plain_table,
    takes_fast_path,
    with_cpu_clock,
)


def test_percentiles_use_the_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile([5.0], 99) == 5.0


@pytest.mark.parametrize(
    ("pieces", "count"),
    [
        (("I", " think", " so.", " Then", " more."), 4),  # the piece after the full stop
        (("Yes", "!"), 2),
        (("no", " end", " here"), 3),
        (("好的。", "然后"), 2),
    ],
)
def test_the_first_sentence_ends_where_a_reader_can_see_it(pieces, count):
    assert Sample("g", "p", pieces).first_sentence_pieces == count


def test_the_fast_path_is_read_from_the_gate_as_a_stream_meets_it():
    assert takes_fast_path(("To", " start"))
    assert takes_fast_path(("In", " 1996"))
    assert not takes_fast_path(("I", "'m", " sorry"))
    assert not takes_fast_path(("好", "的"))


def test_samples_are_answers_grouped_by_script_and_reproducible():
    samples = load_samples(per_group=5, max_pieces=12, seed=3)
    assert [s.group for s in samples] == [EN] * 5 + [LATIN] * 5 + [OTHER] * 5
    assert all(0 < len(s.pieces) <= 12 for s in samples)
    assert len({s.prompt for s in samples}) == 15
    assert samples == load_samples(per_group=5, max_pieces=12, seed=3)


async def test_the_cpu_clock_answers_its_own_path_and_leaves_the_rest_to_the_app():
    async def hello(request):
        return PlainTextResponse("hello")

    app = with_cpu_clock(Starlette(routes=[Route("/hello", hello)]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        first = (await client.get(CPU_PATH)).json()["cpu_s"]
        assert (await client.get("/hello")).text == "hello"
        assert (await client.get(CPU_PATH)).json()["cpu_s"] >= first > 0


def test_the_plain_table_shows_the_median_run_and_the_range_over_runs():
    def run(direct: float, proxy: float, cpu: float) -> dict[str, dict[str, float]]:
        return {
            "direct": {"median_ms": direct, "p99_ms": 9.0, "rps": 900.0},
            "proxy": {"median_ms": proxy, "p99_ms": 20.0, "rps": 150.0, "cpu_ms": cpu},
        }

    runs = [run(1.0, 5.0, 4.0), run(1.5, 9.0, 4.5), run(1.25, 6.0, 5.0)]
    alone = {"median_ms": 3.0, "p99_ms": 12.0, "cpu_ms": 3.3, "http_cpu_ms": 0.7}
    console = Console(record=True, width=200)
    console.print(plain_table(runs, alone, concurrency=8))
    text = console.export_text()
    assert "6.00 (5.00-9.00)" in text  # proxy latency: the median run, then min-max
    assert "4.50 (4.00-5.00)" in text  # proxy CPU per request
    assert "added by the proxy: 4.75 (4.00-7.50) ms" in text
    assert "1.75 ms" in text  # litellm alone over the median direct run


def test_a_conversation_alternates_turns_and_ends_with_the_users_message():
    chat = conversation(4)
    assert [m["role"] for m in chat] == ["user", "assistant", "user", "user"]
    assert chat[-1]["content"] == "plain"
    assert len(chat[0]["content"].split()) == 51
    assert conversation(1) == [{"role": "user", "content": "plain"}]
