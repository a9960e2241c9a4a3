"""The streaming state machine, fed by a scripted chunk source (no HTTP)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
from openai.types.chat import ChatCompletionChunk
from proxy_doubles import (
    FOLLOW_UP,
    LATE_MARKER,
    REWRITE,
    ScriptedGuardrail,
    chunk,
    parse_sse,
    streamed_text,
    text_chunks,
)

from guardrail.types import Action, Decision, Detection, Label3, Strategy
from proxy.review import bind_review
from proxy.streaming import GuardedStream
from proxy.window import DecisionWindow

USER = [{"role": "user", "content": "hello"}]


class ScriptedSource:
    """Yields chunks with an optional pause before each; can fail after some; records closing."""

    def __init__(
        self,
        chunks: Sequence[dict[str, Any]],
        *,
        delay: float = 0.0,
        fail_after: int | None = None,
    ) -> None:
        self.chunks = list(chunks)
        self.delay = delay
        self.fail_after = fail_after
        self.sent = 0
        self.closed = False

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        for item in self.chunks:
            if self.fail_after is not None and self.sent == self.fail_after:
                raise httpx.RemoteProtocolError("peer closed connection mid-body")
            if self.delay:
                await asyncio.sleep(self.delay)
            self.sent += 1
            yield item

    async def aclose(self) -> None:
        self.closed = True


async def run(
    source: ScriptedSource,
    guardrail: ScriptedGuardrail,
    *,
    window: DecisionWindow | None = None,
    include_usage: bool = False,
    errors: list[Exception] | None = None,
) -> tuple[Any, list[Any]]:
    stream = GuardedStream(
        source,
        review=bind_review(guardrail, USER, model="m", client_key=None),
        window=window or DecisionWindow(),
        include_usage=include_usage,
        on_error=errors.append if errors is not None else None,
    )
    decision = await stream.decide()
    body = b"".join([part async for part in stream.events()])
    return decision, parse_sse(body.decode())


def upstream_events(chunks: Sequence[dict[str, Any]]) -> list[Any]:
    return [*chunks, "[DONE]"]


async def test_a_clear_opening_passes_without_waiting_for_a_review():
    guardrail = ScriptedGuardrail()
    chunks = text_chunks(["To", " start,", " open", " the", " terminal."], usage=True)
    source = ScriptedSource(chunks)
    stream = GuardedStream(
        source,
        review=bind_review(guardrail, USER, model="m", client_key=None),
        window=DecisionWindow(),
        include_usage=True,
    )
    decision = await stream.decide()
    assert decision.action is Action.PASS
    assert source.sent == 2  # the role chunk and "To": nothing more was waited for
    assert guardrail.calls == []
    events = parse_sse(b"".join([p async for p in stream.events()]).decode())
    assert events == upstream_events(chunks)
    assert [(c.reply, c.partial) for c in guardrail.calls] == [
        ("To start, open the terminal.", False)
    ]


async def test_an_uncertain_opening_is_reviewed_at_the_first_sentence_end():
    guardrail = ScriptedGuardrail()
    pieces = ["I", " think", " so.", " Here", " is", " why", " it", " works."]
    chunks = text_chunks(pieces)
    decision, events = await run(ScriptedSource(chunks), guardrail)
    assert decision.action is Action.PASS
    assert events == upstream_events(chunks)
    opening, full = guardrail.calls
    assert (opening.reply, opening.partial) == ("I think so. Here", True)
    assert (full.reply, full.partial) == ("".join(pieces), False)


async def test_the_window_closes_after_its_characters():
    guardrail = ScriptedGuardrail()
    chunks = text_chunks(["I", " am", " writing", " a", " long", " clause", " without", " end"])
    await run(ScriptedSource(chunks), guardrail, window=DecisionWindow(chars=12))
    assert guardrail.calls[0].reply == "I am writing"


async def test_the_window_closes_after_its_time_even_if_the_upstream_stalls():
    guardrail = ScriptedGuardrail()
    chunks = text_chunks(["I", " am", " slow", " to", " finish"])
    source = ScriptedSource(chunks, delay=0.05)
    stream = GuardedStream(
        source,
        review=bind_review(guardrail, USER, model="m", client_key=None),
        window=DecisionWindow(ms=60),
        include_usage=False,
    )
    await stream.decide()
    assert guardrail.calls[0].partial is True
    assert guardrail.calls[0].reply in ("I", "I am")
    assert source.sent < len(chunks)
    events = parse_sse(b"".join([p async for p in stream.events()]).decode())
    assert events == upstream_events(chunks)


async def test_a_refusal_opening_switches_to_the_rewrite_and_closes_the_upstream():
    guardrail = ScriptedGuardrail()
    pieces = ["I'm", " sorry,", " but", " I", " can't", " help.", " Really", " not."]
    source = ScriptedSource(text_chunks(pieces, usage=True))
    decision, events = await run(source, guardrail, include_usage=True)
    assert decision.action is Action.REWRITTEN
    assert source.closed
    assert source.sent < len(source.chunks)
    assert events[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(e) for e in events[:-1]]
    assert streamed_text(events) == REWRITE
    assert len(chunks) > 5  # streamed in pieces, not in one block
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.id == "chatcmpl-up" and c.model == "m-upstream" for c in chunks)
    assert all(c.created == 1700000000 for c in chunks)
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (11, 7)


async def test_a_rewritten_stream_has_no_usage_chunk_unless_asked():
    source = ScriptedSource(text_chunks(["I'm", " sorry,", " but", " I", " can't."]))
    _, events = await run(source, ScriptedGuardrail())
    assert all("usage" not in e for e in events[:-1])


async def test_tool_call_deltas_pass_at_once_without_review():
    guardrail = ScriptedGuardrail()
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    chunks = [
        chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}),
        chunk({}, finish_reason="tool_calls"),
    ]
    source = ScriptedSource(chunks)
    decision, events = await run(source, guardrail)
    assert decision.reason == "tool calls pass untouched"
    assert events == upstream_events(chunks)
    assert guardrail.calls == []


async def test_a_late_refusal_gets_its_follow_up_before_the_finish():
    guardrail = ScriptedGuardrail()
    pieces = ["Sure.", " Step one.", f" {LATE_MARKER} I won't go further."]
    chunks = text_chunks(pieces, usage=True)
    decision, events = await run(ScriptedSource(chunks), guardrail, include_usage=True)
    assert decision.action is Action.PASS
    finish, usage, done = events[-3:]
    assert done == "[DONE]"
    assert finish == chunks[-2] and usage == chunks[-1]
    follow_up = events[-4]
    assert follow_up["choices"][0]["delta"] == {"content": "\n\n" + FOLLOW_UP}
    assert events[: len(chunks) - 2] == chunks[:-2]


async def test_a_late_refusal_is_counted_even_when_the_policy_only_marks_it(caplog):
    class MarkingGuardrail(ScriptedGuardrail):
        async def review(self, messages, reply, **kwargs):
            await super().review(messages, reply, **kwargs)
            before = Detection(True, 0.9, Strategy.DIRECT_REFUSAL, Label3.PARTIAL_REFUSAL)
            return Decision(Action.PASS, None, before=before if kwargs["streamed"] else None)

    chunks = text_chunks(["Sure.", " But", " I", " won't", " do", " the", " rest."])
    with caplog.at_level(logging.INFO, logger="guardrail.proxy"):
        _, events = await run(ScriptedSource(chunks), MarkingGuardrail())
    assert events == upstream_events(chunks)
    assert "late refusal in a passed stream: action=pass" in caplog.text


async def test_a_whole_reply_inside_the_window_gets_one_full_review():
    guardrail = ScriptedGuardrail()
    chunks = text_chunks(["I", " agree"])
    _decision, events = await run(ScriptedSource(chunks), guardrail)
    assert [(c.reply, c.partial) for c in guardrail.calls] == [("I agree", False)]
    assert events == upstream_events(chunks)


async def test_a_short_refusal_inside_the_window_is_rewritten():
    source = ScriptedSource(text_chunks(["I'm sorry, but I can't"]))
    decision, events = await run(source, ScriptedGuardrail())
    assert decision.action is Action.REWRITTEN
    assert streamed_text(events) == REWRITE


async def test_refusal_deltas_are_reviewed_as_refusals():
    guardrail = ScriptedGuardrail()
    chunks = [
        chunk({"role": "assistant", "content": None}),
        chunk({"refusal": "Sure"}),
        chunk({"refusal": ", no."}),
        chunk({}, finish_reason="stop"),
    ]
    decision, events = await run(ScriptedSource(chunks), guardrail)
    assert guardrail.calls[0].refusal == "Sure, no."
    assert decision.action is Action.REWRITTEN
    assert streamed_text(events) == REWRITE


async def test_several_choices_pass_and_each_is_reviewed_at_the_end():
    guardrail = ScriptedGuardrail()
    chunks = [
        chunk({"role": "assistant", "content": ""}, index=0),
        chunk({"role": "assistant", "content": ""}, index=1),
        chunk({"content": "First answer."}, index=0),
        chunk({"content": f"Second {LATE_MARKER}."}, index=1),
        chunk({}, finish_reason="stop", index=0),
        chunk({}, finish_reason="stop", index=1),
    ]
    decision, events = await run(ScriptedSource(chunks), guardrail)
    assert decision.action is Action.PASS
    assert sorted(c.reply for c in guardrail.calls) == ["First answer.", f"Second {LATE_MARKER}."]
    follow_up = events[4]
    assert follow_up["choices"][0]["index"] == 1
    assert events[5:] == [*chunks[4:], "[DONE]"]


async def test_an_upstream_error_mid_stream_ends_with_an_error_event():
    chunks = text_chunks(["To", " do", " this,", " first", " check."])
    source = ScriptedSource(chunks, fail_after=4)
    errors: list[Exception] = []
    _decision, events = await run(source, ScriptedGuardrail(), errors=errors)
    assert len(errors) == 1
    assert events[:4] == chunks[:4]
    assert events[-1] == "[DONE]"
    error = events[-2]["error"]
    assert error["code"] == "upstream_unreachable"
    assert "peer closed connection" in error["message"]
    assert source.closed


async def test_an_upstream_error_inside_the_window_still_answers_in_stream():
    source = ScriptedSource(text_chunks(["I", " was", " saying"]), fail_after=2)
    errors: list[Exception] = []
    decision, events = await run(source, ScriptedGuardrail(), errors=errors)
    assert len(errors) == 1
    assert decision.action is Action.PASS
    assert events[:2] == source.chunks[:2]
    assert "error" in events[-2]
    assert events[-1] == "[DONE]"


async def test_a_cancelled_stream_closes_the_upstream():
    source = ScriptedSource(text_chunks(["To", " be", " or", " not"]), delay=10)
    stream = GuardedStream(
        source,
        review=bind_review(ScriptedGuardrail(), USER, model="m", client_key=None),
        window=DecisionWindow(),
        include_usage=False,
    )
    task = asyncio.create_task(stream.decide())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.closed
