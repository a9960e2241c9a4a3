"""The official openai SDK against the proxy, in front of a real stub upstream, all on loopback."""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from proxy_doubles import FOLLOW_UP, LATE_MARKER, REWRITE

from eval.loopback import Script

pytestmark = pytest.mark.e2e

USER = [{"role": "user", "content": "How do pin tumbler locks work?"}]
ANSWER = ["To", " open", " a", " pin", " tumbler", " lock,", " the", " pins", " align."]
REFUSAL = ["I'm", " sorry,", " but", " I", " can't", " help", " with", " that."]
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def stream_chunks(client: openai.OpenAI, **kwargs) -> list:
    return list(client.chat.completions.create(model="m", messages=USER, stream=True, **kwargs))


def text_of(chunks) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_a_plain_completion_round_trips(client, upstream):
    upstream.script = Script(pieces=ANSWER)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=USER, seed=3)
    reply = raw.parse()
    assert reply.choices[0].message.content == "".join(ANSWER)
    assert raw.headers["x-guardrail-action"] == "pass"
    assert raw.headers["x-request-id"]
    assert upstream.records[0].body == {"model": "m", "messages": USER, "seed": 3}


def test_a_passed_stream_matches_the_upstreams_chunk_for_chunk(client, direct, upstream):
    upstream.script = Script(pieces=ANSWER, interval_s=0.005)
    options = {"stream_options": {"include_usage": True}}
    expected = stream_chunks(direct, **options)
    received = stream_chunks(client, **options)
    assert text_of(received) == text_of(expected) == "".join(ANSWER)
    assert len(received) == len(expected)
    strip = {"id", "created"}  # the stub mints these per request
    assert [c.model_dump(exclude=strip) for c in received] == [
        c.model_dump(exclude=strip) for c in expected
    ]
    assert received[-1].usage == expected[-1].usage
    assert received[-1].usage is not None and received[-1].usage.completion_tokens == len(ANSWER)


def test_an_opening_held_for_review_still_arrives_intact(client, upstream, guardrail):
    pieces = ["I", " think", " the", " pins", " align.", " Then", " it", " turns."]
    upstream.script = Script(pieces=pieces, interval_s=0.005)
    chunks = stream_chunks(client)
    assert text_of(chunks) == "".join(pieces)
    assert [call.partial for call in guardrail.calls] == [True, False]


def test_a_refused_stream_is_rewritten_and_the_upstream_stopped(client, upstream, guardrail):
    upstream.script = Script(pieces=REFUSAL + [" More"] * 200, interval_s=0.005)
    with client.chat.completions.with_streaming_response.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    ) as response:
        assert response.headers["x-guardrail-action"] == "rewritten"
        assert response.headers["x-guardrail-policy"] == "test-policy"
        chunks = list(response.parse())
    assert text_of(chunks) == REWRITE
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 18
    assert upstream.records[0].abandoned.wait(5)


def test_a_refused_completion_is_rewritten(client, upstream):
    upstream.script = Script(pieces=REFUSAL)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=USER)
    assert raw.parse().choices[0].message.content == REWRITE
    assert raw.headers["x-guardrail-action"] == "rewritten"


def test_a_late_refusal_gets_its_follow_up(client, upstream):
    pieces = ["Sure.", " Here", " is", " the", " idea.", f" {LATE_MARKER}."]
    upstream.script = Script(pieces=pieces)
    chunks = stream_chunks(client)
    assert text_of(chunks) == "".join(pieces) + "\n\n" + FOLLOW_UP
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_tool_calls_round_trip(client, upstream, guardrail):
    upstream.script = Script(pieces=(), tool_calls=[TOOL_CALL])
    reply = client.chat.completions.create(model="m", messages=USER, tools=TOOLS)
    (call,) = reply.choices[0].message.tool_calls
    assert call.model_dump() == TOOL_CALL
    assert upstream.records[0].body["tools"] == TOOLS
    chunks = stream_chunks(client, tools=TOOLS)
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or ()]
    assert [d.function.arguments for d in deltas] == [TOOL_CALL["function"]["arguments"]]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert guardrail.calls == []


def test_an_upstream_error_event_mid_stream_reaches_the_client(client, upstream):
    upstream.script = Script(pieces=ANSWER, error_after=3)
    started = time.monotonic()
    with pytest.raises(openai.APIError, match="scripted upstream failure"):
        stream_chunks(client)
    assert time.monotonic() - started < 10


def test_a_connection_cut_mid_stream_ends_in_an_error_not_a_hang(client, upstream, proxy_url):
    upstream.script = Script(pieces=ANSWER, cut_after=4)
    started = time.monotonic()
    with pytest.raises(openai.APIError, match="upstream"):
        stream_chunks(client)
    assert time.monotonic() - started < 10
    metrics = httpx.get(f"{proxy_url}/metrics", timeout=10).text
    assert 'guardrail_upstream_stream_errors_total{status="502"}' in metrics


def test_a_client_disconnect_cancels_the_upstream(proxy_url, upstream):
    upstream.script = Script(pieces=ANSWER * 50, interval_s=0.02)
    body = {"model": "m", "messages": USER, "stream": True}
    url = f"{proxy_url}/v1/chat/completions"
    with httpx.Client(timeout=10) as http, http.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        next(response.iter_bytes())
    record = upstream.records[0]
    assert record.abandoned.wait(5)
    assert not record.finished.is_set()


def test_upstream_statuses_reach_the_sdk(client, upstream):
    upstream.script = Script(status=429, retry_after="4")
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.response.headers["retry-after"] == "4"
    assert "stub failure 429" in caught.value.message


def test_models_are_listed(client):
    assert [m.id for m in client.models.list()] == ["stub-model"]
