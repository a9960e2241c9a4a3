"""Test doubles for the proxy's tests: a scripted guardrail and OpenAI-shaped replies.

The guardrail double decides by a fixed marker, not by detection: the proxy's tests check what the
proxy does with a decision (rewrite, switch streams, append, headers), not how decisions are made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from guardrail import Guardrail
from guardrail.store import Store
from guardrail.types import Action, Decision, Message, Usage

REFUSAL_OPENING = "I'm sorry, but I can't"
LATE_MARKER = "LATE-REFUSAL"
REWRITE = "Here is what I can tell you in general terms. Locks work by aligning pins."
FOLLOW_UP = "If you meant something else, tell me more and I will help."


@dataclass
class ReviewCall:
    reply: str | None
    refusal: str | None
    model: str | None
    client_key: str | None
    partial: bool
    streamed: bool
    messages: Sequence[Message]


@dataclass
class ScriptedGuardrail(Guardrail):
    """Rewrites replies that open with :data:`REFUSAL_OPENING` or carry a ``refusal`` field;
    asks for a follow-up on already streamed replies containing :data:`LATE_MARKER`."""

    rewrite: str = REWRITE
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=11, completion_tokens=7))
    calls: list[ReviewCall] = field(default_factory=list)
    fail: bool = False
    warmed: bool = False
    store: Store | None = None

    def attach_store(self, store: Store) -> None:
        self.store = store

    def warm_up(self) -> None:
        if self.fail:
            raise RuntimeError("policy engine exploded")
        self.warmed = True

    async def review(
        self,
        messages: Sequence[Message],
        reply: str | None,
        *,
        refusal: str | None = None,
        model: str | None = None,
        client_key: str | None = None,
        partial: bool = False,
        streamed: bool = False,
    ) -> Decision:
        self.calls.append(
            ReviewCall(reply, refusal, model, client_key, partial, streamed, messages)
        )
        if self.fail:
            raise RuntimeError("policy engine exploded")
        text = reply or ""
        if refusal is not None or text.startswith(REFUSAL_OPENING):
            return Decision(
                action=Action.REWRITTEN, text=self.rewrite, policy="test-policy", usage=self.usage
            )
        if streamed and LATE_MARKER in text:
            return Decision(
                action=Action.KEPT, text=None, policy="late-policy", follow_up=FOLLOW_UP
            )
        return Decision(action=Action.PASS, text=None)


def completion(
    content: str | None = "Hello there.",
    *,
    message: dict[str, Any] | None = None,
    n: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """An upstream chat.completion as OpenAI sends it, nulls included."""
    body = {"role": "assistant", "content": content, "refusal": None, **(message or {})}
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "m-upstream",
        "system_fingerprint": "fp_1",
        "choices": [
            {"index": i, "message": dict(body), "finish_reason": "stop", "logprobs": None}
            for i in range(n)
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
        **extra,
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    index: int = 0,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One chat.completion.chunk; ``delta=None`` with ``usage`` is the final usage chunk."""
    data: dict[str, Any] = {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m-upstream",
        "system_fingerprint": "fp_1",
        "choices": []
        if delta is None
        else [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    if usage is not None:
        data["usage"] = usage
    return data


def text_chunks(pieces: Sequence[str], *, usage: bool = False) -> list[dict[str, Any]]:
    """A whole streamed reply: role chunk, one chunk per piece, finish, optional usage."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in pieces]
    chunks.append(chunk({}, finish_reason="stop"))
    if usage:
        chunks.append(
            chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})
        )
    return chunks


def sse_body(chunks: Sequence[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def parse_sse(body: str) -> list[Any]:
    """The data payloads of an SSE body, ``[DONE]`` as the string it is."""
    events = []
    for line in body.splitlines():
        if line.startswith("data: "):
            payload = line[len("data: ") :]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def streamed_text(events: Sequence[Any]) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for event in events
        if isinstance(event, dict)
        for choice in event.get("choices", [])
    )
