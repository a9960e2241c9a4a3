"""A scripted OpenAI-compatible upstream on loopback, and a way to serve any ASGI app in a thread.

Latency benchmarks and end-to-end tests need a real server (real sockets, real SSE framing, real
disconnects) whose replies and timing are known in advance: :class:`StubUpstream` answers
``/v1/chat/completions`` from a :class:`Script`, streaming token by token at a set rate, and can
fail mid-stream on purpose. It records what it was sent and whether each stream was read to the
end, which is how a test sees that a client's disconnect reached the upstream.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp


@dataclass
class Script:
    """What the stub answers next, and how."""

    pieces: Sequence[str] = ("Hello", " there", ".")
    """The reply's text, one streamed content delta per piece."""
    interval_s: float = 0.0
    """Pause before each streamed piece: 0.02 is an upstream at 50 tokens/s."""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    """Function calls to make instead of (or after) text."""
    delay_s: float = 0.0
    """Pause before answering at all: longer than the client's timeout is an upstream timeout."""
    status: int = 200
    """A non-200 status answers with OpenAI's error body and nothing else."""
    retry_after: str | None = None
    cut_after: int | None = None
    """Drop the connection after this many streamed pieces."""
    error_after: int | None = None
    """Send an OpenAI error event after this many streamed pieces."""


@dataclass
class Record:
    """One request the stub served."""

    body: dict[str, Any]
    finished: threading.Event = field(default_factory=threading.Event)
    """Set when a stream was read to its end."""
    abandoned: threading.Event = field(default_factory=threading.Event)
    """Set when the client went away before the stream ended."""


class StubUpstream:
    """An OpenAI-compatible chat server with scripted replies."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        by_prompt: Mapping[str, Script] | None = None,
        instructed: Script | None = None,
    ) -> None:
        self.script = script or Script()
        """The reply to any prompt not in ``by_prompt``."""
        self.by_prompt = dict(by_prompt or {})
        """Replies chosen by the last message's text, for clients in other processes."""
        self.instructed = instructed
        """The reply to requests that open with a system message (a rewrite model's calls do,
        while the test clients' do not); ``None`` answers them like any other."""
        self.records: list[Record] = []
        self.app: ASGIApp = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        record = Record(body)
        self.records.append(record)
        messages = body.get("messages") or [{}]
        script = self.by_prompt.get(str(messages[-1].get("content")), self.script)
        if self.instructed is not None and messages[0].get("role") == "system":
            script = self.instructed
        if script.delay_s:
            await asyncio.sleep(script.delay_s)
        if script.status != 200:
            headers = {"retry-after": script.retry_after} if script.retry_after else None
            error = {"message": f"stub failure {script.status}", "type": "stub_error"}
            return JSONResponse({"error": error}, status_code=script.status, headers=headers)
        reply_id = f"chatcmpl-stub-{uuid.uuid4().hex[:12]}"
        if body.get("stream"):
            stream = self._stream(script, body, record, reply_id)
            return StreamingResponse(stream, media_type="text/event-stream")
        record.finished.set()
        return JSONResponse(self._completion(script, body, reply_id))

    async def _models(self, request: Request) -> Response:
        model = {"id": "stub-model", "object": "model", "created": 0, "owned_by": "stub"}
        return JSONResponse({"object": "list", "data": [model]})

    def _completion(self, script: Script, body: Mapping[str, Any], reply_id: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(script.pieces) or None,
            "refusal": None,
        }
        if script.tool_calls:
            message["tool_calls"] = [dict(call) for call in script.tool_calls]
        return {
            "id": reply_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if script.tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": _usage(body, script),
        }

    async def _stream(
        self, script: Script, body: Mapping[str, Any], record: Record, reply_id: str
    ) -> AsyncIterator[bytes]:
        base = {
            "id": reply_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": str(body.get("model")),
        }

        def event(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
            choices = (
                []
                if delta is None
                else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            )
            return b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n"

        try:
            yield event({"role": "assistant", "content": ""})
            for sent, piece in enumerate(script.pieces):
                if sent == script.cut_after:
                    raise ConnectionAbortedError("scripted cut")
                if sent == script.error_after:
                    error = {"message": "scripted upstream failure", "type": "server_error"}
                    yield b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
                    record.finished.set()
                    return
                if script.interval_s:
                    await asyncio.sleep(script.interval_s)
                yield event({"content": piece})
            for index, call in enumerate(script.tool_calls):
                yield event({"tool_calls": [{"index": index, **call}]})
            yield event({}, "tool_calls" if script.tool_calls else "stop")
            if (body.get("stream_options") or {}).get("include_usage"):
                yield event(None, usage=_usage(body, script))
            yield b"data: [DONE]\n\n"
            record.finished.set()
        finally:
            if not record.finished.is_set():
                record.abandoned.set()


def _usage(body: Mapping[str, Any], script: Script) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", ()))
    completion = len(script.pieces) + len(script.tool_calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@contextmanager
def serve(app: ASGIApp, *, timeout_s: float = 30.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="loopback-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the loopback server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)
