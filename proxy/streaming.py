"""Refusal-aware streaming: hold the opening, decide, then pass through or switch.

The state machine in :class:`GuardedStream` runs in two phases. :meth:`GuardedStream.decide` reads
the upstream until the decision window closes and returns the decision, so the response headers
can carry it. :meth:`GuardedStream.events` then produces the body: either the buffered chunks and
the rest of the upstream stream unchanged (with any late follow-up appended before the finish), or,
when the opening was a refusal to rewrite, the rewrite as a fresh stream while the upstream is
closed so that it stops generating.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from guardrail.types import Action, Decision, Usage
from proxy.errors import from_exception
from proxy.window import DecisionWindow, Verdict

log = logging.getLogger("guardrail.proxy")

DONE = b"data: [DONE]\n\n"
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_PIECE = re.compile(r"\s*\S{1,16}\s*|\s+")


class ChunkSource(Protocol):
    """An upstream stream of chunk dicts that can be closed early."""

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


class Review(Protocol):
    """The guardrail's review, already bound to the request's messages, model and client."""

    async def __call__(
        self, reply: str | None, *, refusal: str | None, partial: bool, streamed: bool = False
    ) -> Decision: ...


def sse(data: Mapping[str, Any]) -> bytes:
    return (
        b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    )


@dataclass
class _Choice:
    """What one choice of the stream has said so far."""

    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: bool = False

    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def refusal_text(self) -> str | None:
        return "".join(self.refusal) or None


_END: Any = object()
_TIMEOUT: Any = object()


class _Reader:
    """Reads chunks with an optional timeout, without ever cancelling a read in flight."""

    def __init__(self, source: ChunkSource) -> None:
        self._source = source
        self._iterator = source.__aiter__()
        self._pending: asyncio.Task[Any] | None = None
        self._closed = False

    async def next(self, timeout: float | None = None) -> Any:
        if self._pending is None and timeout is None:
            return await self._read()
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._read())
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            return _TIMEOUT
        task, self._pending = self._pending, None
        return task.result()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._pending is not None:
                self._pending.cancel()
                await asyncio.gather(self._pending, return_exceptions=True)
            try:
                await self._source.aclose()
            except Exception as exc:  # closing a broken stream must not mask the real outcome
                log.debug("closing the upstream stream failed: %r", exc)

    async def _read(self) -> Any:
        try:
            return await self._iterator.__anext__()
        except StopAsyncIteration:
            return _END


class GuardedStream:
    """One client stream: the upstream's chunks, reviewed and passed on or replaced."""

    def __init__(
        self,
        source: ChunkSource,
        *,
        review: Review,
        window: DecisionWindow,
        include_usage: bool,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """``on_error`` hears of every upstream failure that ends the stream with an error
        event (the response has started, so it is the only place the failure is counted)."""
        self._reader = _Reader(source)
        self._reviewer = review
        self._window = window
        self._include_usage = include_usage
        self._choices: dict[int, _Choice] = {}
        self._buffer: list[dict[str, Any]] = []
        self._held: list[dict[str, Any]] = []
        self._meta: dict[str, Any] = {}
        self._extra_usage = Usage()
        self._decision: Decision | None = None
        self._ended = False
        self._reviewed_in_full = False
        self._error: Exception | None = None
        self._on_error = on_error

    async def decide(self) -> Decision:
        """Read until the decision window closes; the result goes into the response headers."""
        try:
            self._decision = await self._watch_opening()
        except Exception as exc:  # the upstream broke inside the window: report it in-stream
            self._error = exc
            self._decision = Decision(action=Action.PASS, text=None, reason="upstream error")
        except BaseException:
            await self._reader.aclose()
            raise
        self._add_usage(self._decision)
        if self._decision.text is not None:
            await self._reader.aclose()
        return self._decision

    def response(self, headers: Mapping[str, str]) -> StreamingResponse:
        """The SSE response; the upstream is closed however the response ends."""
        return _ClosingStreamingResponse(
            self.events(),
            self._reader,
            headers={**headers, **_SSE_HEADERS},
            media_type="text/event-stream",
        )

    async def events(self) -> AsyncIterator[bytes]:
        decision = self._decision
        if decision is None:
            raise RuntimeError("decide() must run before events()")
        try:
            if decision.text is not None:
                for chunk in self._rewrite(decision.text):
                    yield sse(chunk)
                yield DONE
                return
            for chunk in self._buffer:
                if self._hold(chunk):
                    continue
                yield sse(chunk)
            self._buffer.clear()
            if self._error is not None:
                yield self._error_event(self._error)
                yield DONE
                return
            while not self._ended:
                chunk = await self._reader.next()
                if chunk is _END:
                    self._ended = True
                    break
                self._observe(chunk)
                if not self._hold(chunk):
                    yield sse(chunk)
            for chunk in await self._late_follow_ups():
                yield sse(chunk)
            for chunk in self._held:
                yield sse(self._with_extra_usage(chunk))
            yield DONE
        except Exception as exc:
            yield self._error_event(exc)
            yield DONE
        finally:
            await self._reader.aclose()

    def _error_event(self, error: Exception) -> bytes:
        if self._on_error is not None:
            self._on_error(error)
        return sse(from_exception(error).body())

    async def _watch_opening(self) -> Decision:
        started: float | None = None
        while True:
            timeout = None
            if started is not None:
                timeout = max(0.0, started + self._window.ms / 1000 - time.monotonic())
            chunk = await self._reader.next(timeout)
            if chunk is _END:
                self._ended = True
                return await self._review_final()
            if chunk is not _TIMEOUT:
                self._buffer.append(chunk)
                self._observe(chunk)
                if len(self._choices) > 1:
                    return Decision(
                        Action.PASS, None, reason="several choices: reviewed at the end"
                    )
                if any(choice.tool_calls for choice in self._choices.values()):
                    return Decision(Action.PASS, None, reason="tool calls pass untouched")
            choice = self._choices.get(0, _Choice())
            refusal = choice.refusal_text
            text = refusal or choice.text
            if not text:
                continue
            if started is None:
                started = time.monotonic()
            elapsed_ms = (time.monotonic() - started) * 1000
            verdict = Verdict.REVIEW if chunk is _TIMEOUT else Verdict.WAIT
            if verdict is Verdict.WAIT:
                verdict = self._window.assess(text, elapsed_ms, refusal=refusal is not None)
            if verdict is Verdict.PASS:
                return Decision(Action.PASS, None, reason="opening cannot start a refusal")
            if verdict is Verdict.REVIEW:
                return await self._reviewer(choice.text or None, refusal=refusal, partial=True)

    async def _review_final(self) -> Decision:
        """The whole reply arrived inside the window: one full review decides."""
        self._reviewed_in_full = True
        choice = self._choices.get(0, _Choice())
        if len(self._choices) != 1 or choice.tool_calls or not (choice.text or choice.refusal):
            return Decision(Action.PASS, None, reason="nothing to review")
        return await self._reviewer(choice.text or None, refusal=choice.refusal_text, partial=False)

    async def _late_follow_ups(self) -> list[dict[str, Any]]:
        """Review each finished choice in full; a refusal that shows late is always counted."""
        if self._reviewed_in_full:
            return []
        chunks: list[dict[str, Any]] = []
        for index, choice in sorted(self._choices.items()):
            if choice.tool_calls or not (choice.content or choice.refusal):
                continue
            decision = await self._reviewer(
                choice.text or None, refusal=choice.refusal_text, partial=False, streamed=True
            )
            refused = decision.before.is_refusal if decision.before else False
            if not refused and decision.action is Action.PASS and decision.follow_up is None:
                continue
            log.info(
                "late refusal in a passed stream: action=%s policy=%s follow_up=%s",
                decision.action.value,
                decision.policy or "none",
                decision.follow_up is not None,
            )
            self._add_usage(decision)
            if decision.follow_up:
                text = decision.follow_up
                if not text[:1].isspace():
                    text = "\n\n" + text
                chunks.append(self._chunk({"content": text}, index=index))
        return chunks

    def _observe(self, chunk: Mapping[str, Any]) -> None:
        if not self._meta:
            self._meta = {
                key: chunk[key]
                for key in ("id", "created", "model", "system_fingerprint")
                if chunk.get(key) is not None
            }
        for raw in chunk.get("choices") or ():
            choice = self._choices.setdefault(int(raw.get("index", 0)), _Choice())
            delta = raw.get("delta") or {}
            if isinstance(delta.get("content"), str):
                choice.content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                choice.refusal.append(delta["refusal"])
            if delta.get("tool_calls") or delta.get("function_call"):
                choice.tool_calls = True

    def _hold(self, chunk: dict[str, Any]) -> bool:
        """Keep finish and usage chunks back so that a late follow-up can precede them."""
        choices = chunk.get("choices") or []
        finishing = any(raw.get("finish_reason") for raw in choices)
        if finishing or self._held or (not choices and "usage" in chunk):
            self._held.append(chunk)
            return True
        return False

    def _rewrite(self, text: str) -> Iterator[dict[str, Any]]:
        yield self._chunk({"role": "assistant", "content": ""})
        for piece in _PIECE.findall(text):
            yield self._chunk({"content": piece})
        yield self._chunk({}, finish_reason="stop")
        if self._include_usage:
            usage = self._extra_usage
            yield {
                **self._base(),
                "choices": [],
                "usage": {
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens,
                },
            }

    def _chunk(
        self, delta: dict[str, Any], *, index: int = 0, finish_reason: str | None = None
    ) -> dict[str, Any]:
        choice = {"index": index, "delta": delta, "finish_reason": finish_reason}
        return {**self._base(), "choices": [choice]}

    def _base(self) -> dict[str, Any]:
        return {"object": "chat.completion.chunk", **self._meta}

    def _add_usage(self, decision: Decision) -> None:
        extra = decision.usage
        self._extra_usage = replace(
            self._extra_usage,
            prompt_tokens=self._extra_usage.prompt_tokens + extra.prompt_tokens,
            completion_tokens=self._extra_usage.completion_tokens + extra.completion_tokens,
        )

    def _with_extra_usage(self, chunk: dict[str, Any]) -> dict[str, Any]:
        usage = chunk.get("usage")
        if not isinstance(usage, dict) or self._extra_usage.total_tokens == 0:
            return chunk
        return {**chunk, "usage": add_usage(usage, self._extra_usage)}


def add_usage(usage: Mapping[str, Any], extra: Usage) -> dict[str, Any]:
    """OpenAI usage plus the tokens a rewrite model spent."""
    prompt = int(usage.get("prompt_tokens") or 0) + extra.prompt_tokens
    completion = int(usage.get("completion_tokens") or 0) + extra.completion_tokens
    return {
        **usage,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class _ClosingStreamingResponse(StreamingResponse):
    """Closes the upstream even when the client leaves before the body is first iterated."""

    def __init__(self, content: AsyncIterator[bytes], reader: _Reader, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._reader = reader

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._reader.aclose()
