"""Handing upstream replies to the guardrail and applying its decisions.

The proxy never judges a reply itself: every choice with text goes to :meth:`Guardrail.review`,
and the decision says whether the client gets the upstream's text or a rewrite. A review that
fails lets the upstream reply through, so a guardrail fault never loses a request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail import Guardrail
from guardrail.types import Action, Decision, Message, Usage, content_text
from proxy.streaming import Review, add_usage

log = logging.getLogger("guardrail.proxy")

ACTION_HEADER = "x-guardrail-action"
POLICY_HEADER = "x-guardrail-policy"
UNREVIEWED = Decision(action=Action.PASS, text=None, reason="tool calls or no text")


def bind_review(
    guardrail: Guardrail,
    messages: Sequence[Message],
    *,
    model: str,
    client_key: str | None,
) -> Review:
    """The guardrail's review for one request, failing open."""

    async def review(
        reply: str | None, *, refusal: str | None, partial: bool, streamed: bool = False
    ) -> Decision:
        try:
            return await guardrail.review(
                messages,
                reply,
                refusal=refusal,
                model=model,
                client_key=client_key,
                partial=partial,
                streamed=streamed,
            )
        except Exception:
            log.exception("review failed; the upstream reply is passed unchanged")
            return Decision(action=Action.PASS, text=None, reason="review failed")

    return review


async def review_completion(reply: dict[str, Any], review: Review) -> list[Decision]:
    """Review every choice of a non-streaming reply and apply rewrites in place.

    Choices with tool calls or without text pass untouched; a set ``message.refusal`` is handed
    to the review as the refusal it is.
    """
    choices = [c for c in reply.get("choices") or () if isinstance(c, dict)]
    decisions = await asyncio.gather(*(_review_choice(choice, review) for choice in choices))
    extra = Usage(
        prompt_tokens=sum(d.usage.prompt_tokens for d in decisions),
        completion_tokens=sum(d.usage.completion_tokens for d in decisions),
    )
    if extra.total_tokens and isinstance(reply.get("usage"), Mapping):
        reply["usage"] = add_usage(reply["usage"], extra)
    return list(decisions) or [UNREVIEWED]


async def _review_choice(choice: dict[str, Any], review: Review) -> Decision:
    message = choice.get("message")
    if not isinstance(message, dict) or message.get("tool_calls") or message.get("function_call"):
        return UNREVIEWED
    text = content_text(message.get("content"))
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
    if not text and not refusal:
        return UNREVIEWED
    decision = await review(text or None, refusal=refusal or None, partial=False)
    if decision.text is not None:
        message["content"] = decision.text
        message.pop("refusal", None)
    return decision


def guardrail_headers(decisions: Sequence[Decision]) -> dict[str, str]:
    """``x-guardrail-action`` and ``x-guardrail-policy``: one value per choice, comma-separated."""
    return {
        ACTION_HEADER: ",".join(d.action.value for d in decisions),
        POLICY_HEADER: ",".join(d.policy or "none" for d in decisions),
    }
