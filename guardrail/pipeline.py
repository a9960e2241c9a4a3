"""The one pipeline every front door calls: detect, categorise, decide, rewrite.

The proxy (plain and streaming), the command line, the benchmark and the LiteLLM adapter all
hand a reply to :meth:`Guardrail.review`; none of them re-implements a step.
"""

from __future__ import annotations

from collections.abc import Sequence

from guardrail.types import Action, Decision, Message


class Guardrail:
    """Reviews upstream replies and decides what the client receives."""

    async def review(
        self,
        messages: Sequence[Message],
        reply: str | None,
        *,
        refusal: str | None = None,
        model: str | None = None,
        client_key: str | None = None,
        partial: bool = False,
    ) -> Decision:
        """Decide what to do with ``reply``, the assistant text answering ``messages``.

        ``refusal`` is the OpenAI ``message.refusal`` field when the upstream set it.
        ``partial`` marks the opening of a streamed reply, reviewed before the rest arrives.
        """
        return Decision(action=Action.PASS, text=None, reason="no policy engine configured")
