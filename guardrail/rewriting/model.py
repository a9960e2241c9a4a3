"""Model rewrites through litellm: one call, its text and its token usage."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from guardrail.types import Usage

Completion = Callable[..., Awaitable[Any]]
"""``litellm.acompletion`` or anything with its signature (tests pass a stand-in)."""


class RewriteModelError(Exception):
    """The rewrite model could not be called or gave no usable text."""


def _litellm_completion() -> Completion:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm.acompletion


async def complete(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    timeout: float,
    max_tokens: int,
    options: Mapping[str, Any] | None = None,
    completion: Completion | None = None,
) -> tuple[str, Usage]:
    """Call ``model`` and return its text and usage; raises :class:`RewriteModelError`."""
    call = completion or _litellm_completion()
    try:
        response = await call(
            model=model,
            messages=[dict(m) for m in messages],
            timeout=timeout,
            max_tokens=max_tokens,
            temperature=0.3,
            num_retries=0,
            **dict(options or {}),
        )
    except Exception as error:  # litellm raises many provider-specific types
        raise RewriteModelError(f"{type(error).__name__}: {error}") from error
    try:
        text = response.choices[0].message.content or ""
    except (AttributeError, IndexError, KeyError, TypeError) as error:
        raise RewriteModelError(f"malformed response: {error}") from error
    usage = getattr(response, "usage", None)
    return text.strip(), Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
