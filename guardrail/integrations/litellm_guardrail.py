"""Refusal rewriting as a LiteLLM proxy guardrail.

Users of the LiteLLM proxy add it to their existing ``config.yaml`` as a post-call guardrail;
each chat reply then goes through :meth:`guardrail.Guardrail.review`, the same pipeline the
guardrail proxy runs, and a flat refusal is replaced by what the matching policy asks for::

    guardrails:
      - guardrail_name: refusal-rewrite
        litellm_params:
          guardrail: guardrail.integrations.litellm_guardrail.RefusalRewriteGuardrail
          mode: post_call
          default_on: true
          # review_streams: false   # stream replies through untouched instead of buffering
          # redis_url: os.environ/REDIS_URL   # share cached rewrites between proxy workers

The ``guardrail-proxy`` package must be installed in the LiteLLM proxy's environment. Only
``post_call`` is supported: the guardrail judges replies, not requests.

Streamed replies are held back until the upstream finishes, then sent on unchanged or replaced
by the rewrite: clients see their first token later, but never half a refusal followed by a
rewrite. ``review_streams: false`` trades that for untouched streaming.

The guardrail fails open: if reviewing raises, the reply goes out as the upstream sent it and
the error is logged, because a missed rewrite costs less than a failed request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks
from litellm.types.utils import (
    GuardrailStatus,
    LLMResponseTypes,
    ModelResponse,
    ModelResponseStream,
)

from guardrail.pipeline import Guardrail
from guardrail.settings import GuardrailSettings
from guardrail.store import open_store
from guardrail.types import Decision, Message, content_text

if TYPE_CHECKING:
    from litellm.proxy._types import UserAPIKeyAuth

logger = logging.getLogger("guardrail.integrations.litellm")


class RefusalRewriteGuardrail(CustomGuardrail):
    """A LiteLLM ``CustomGuardrail`` that rewrites flat refusals in chat completion replies."""

    def __init__(
        self,
        guardrail: Guardrail | None = None,
        *,
        review_streams: bool = True,
        policies: str | None = None,
        redis_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        # LiteLLM passes every field of the guardrail's litellm_params; the base class takes
        # the ones it knows (guardrail_name, event_hook, default_on, ...) and ignores the rest.
        # ``policies`` names a policy directory; without it the bundled set applies.
        # ``redis_url`` keeps the rewrite cache in Redis; without it, in this process's memory.
        if guardrail is None:
            settings = (
                GuardrailSettings()
                if policies is None
                else GuardrailSettings(policies_dir=Path(policies))
            )
            guardrail = Guardrail.from_settings(settings, store=open_store(redis_url))
        self.guardrail = guardrail
        self.review_streams = review_streams
        kwargs.setdefault("supported_event_hooks", [GuardrailEventHooks.post_call])
        super().__init__(**kwargs)

    async def async_post_call_success_hook(
        self,
        data: dict,
        user_api_key_dict: UserAPIKeyAuth,
        response: LLMResponseTypes,
    ) -> Any:
        """Review each text choice of a chat completion and replace the rewritten ones."""
        if not isinstance(response, ModelResponse):
            return response
        started = time.time()
        messages = _messages(data)
        choices = [c for c in response.choices if _is_text(getattr(c, "message", None))]
        decisions = await asyncio.gather(
            *(
                self._review(
                    data,
                    user_api_key_dict,
                    messages,
                    _text_or_none(c.message.content),
                    getattr(c.message, "refusal", None),
                )
                for c in choices
            )
        )
        for choice, decision in zip(choices, decisions, strict=True):
            if decision is not None and decision.text is not None:
                choice.message.content = decision.text
                if getattr(choice.message, "refusal", None) is not None:
                    # litellm keeps OpenAI's refusal field as an untyped extra attribute.
                    choice.message.refusal = None  # type: ignore[attr-defined]
                _add_usage(response, decision)
        self._log(data, decisions, started)
        return response

    async def async_post_call_streaming_iterator_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        response: Any,
        request_data: dict,
    ) -> AsyncGenerator[ModelResponseStream, None]:
        """Hold the stream until it ends, review each choice, then replay or replace it."""
        if not self.review_streams:
            async for chunk in response:
                yield chunk
            return
        chunks: list[ModelResponseStream] = [chunk async for chunk in response]
        started = time.time()
        texts, has_tools = _stream_texts(chunks)
        indexes = [i for i in texts if i not in has_tools]
        decisions = await asyncio.gather(
            *(
                self._review(request_data, user_api_key_dict, _messages(request_data), texts[i])
                for i in indexes
            )
        )
        self._log(request_data, decisions, started)
        rewrites = {
            i: d.text for i, d in zip(indexes, decisions, strict=True) if d and d.text is not None
        }
        for chunk in _replace_stream_text(chunks, rewrites) if rewrites else chunks:
            yield chunk

    async def _review(
        self,
        data: dict,
        user_api_key_dict: UserAPIKeyAuth,
        messages: Sequence[Message],
        reply: str | None,
        refusal: str | None = None,
    ) -> Decision | None:
        try:
            return await self.guardrail.review(
                messages,
                reply,
                refusal=refusal,
                model=data.get("model"),
                client_key=getattr(user_api_key_dict, "token", None),
            )
        except Exception:
            logger.exception("refusal review failed; the reply is passed on unchanged")
            return None

    def _log(
        self,
        data: dict,
        decisions: Sequence[Decision | None],
        started: float,
    ) -> None:
        """Record the outcome in LiteLLM's guardrail logging, without any reply text."""
        if not decisions:
            return
        ended = time.time()
        self.add_standard_logging_guardrail_information_to_request_data(
            guardrail_json_response=[
                {"action": d.action.value, "policy": d.policy, "reason": d.reason}
                if d is not None
                else {"action": "error"}
                for d in decisions
            ],
            request_data=data,
            guardrail_status=_status(decisions),
            start_time=started,
            end_time=ended,
            duration=ended - started,
            guardrail_provider="guardrail",
            event_type=GuardrailEventHooks.post_call,
        )


def _status(decisions: Sequence[Decision | None]) -> GuardrailStatus:
    if any(d is None for d in decisions):
        return "guardrail_failed_to_respond"
    return "guardrail_intervened" if any(d and d.changed for d in decisions) else "success"


def _messages(data: dict) -> list[Message]:
    messages = data.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _text_or_none(content: Any) -> str | None:
    return None if content is None else content_text(content)


def _is_text(message: Any) -> bool:
    """A reply that is text (or a refusal), not a tool or function call."""
    return (
        message is not None
        and not getattr(message, "tool_calls", None)
        and not getattr(message, "function_call", None)
    )


def _add_usage(response: ModelResponse, decision: Decision) -> None:
    usage = getattr(response, "usage", None)
    if usage is None or decision.usage.total_tokens == 0:
        return
    usage.prompt_tokens += decision.usage.prompt_tokens
    usage.completion_tokens += decision.usage.completion_tokens
    usage.total_tokens += decision.usage.total_tokens


def _stream_texts(chunks: Sequence[ModelResponseStream]) -> tuple[dict[int, str], set[int]]:
    """Each choice's streamed text, and the choices that streamed tool or function calls."""
    parts: dict[int, list[str]] = {}
    has_tools: set[int] = set()
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            parts.setdefault(choice.index, [])
            if delta.content:
                parts[choice.index].append(content_text(delta.content))
            if delta.tool_calls or getattr(delta, "function_call", None):
                has_tools.add(choice.index)
    return {index: "".join(p) for index, p in parts.items()}, has_tools


def _replace_stream_text(
    chunks: Sequence[ModelResponseStream], rewrites: dict[int, str]
) -> list[ModelResponseStream]:
    """The stream with each rewritten choice's text sent whole in that choice's first chunk.

    Chunks left with nothing to say (no content, role, finish reason or usage) are dropped;
    the rest (ids, roles, finish reasons, usage) go out as the upstream sent them.
    """
    placed: set[int] = set()
    out: list[ModelResponseStream] = []
    for chunk in chunks:
        keep = getattr(chunk, "usage", None) is not None
        for choice in chunk.choices:
            delta = choice.delta
            if choice.index in rewrites:
                delta.content = None if choice.index in placed else rewrites[choice.index]
                placed.add(choice.index)
            if delta.content or delta.role or choice.finish_reason or delta.tool_calls:
                keep = True
        if keep:
            out.append(chunk)
    return out
