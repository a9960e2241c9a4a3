"""Model calls for live runs and the LLM judge, through litellm, with retries.

Benchmarks run for minutes against rate-limited APIs, so transient failures (timeouts, 429,
5xx, dropped connections) are retried with exponential backoff; anything else (a bad key, an
unknown model) fails at once with the provider's message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from guardrail.types import Message, Usage, content_text

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ModelCallError(Exception):
    """A model call failed for good (after retries, or with a non-retryable error)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One assistant reply and what it cost."""

    text: str
    refusal: str | None
    latency_ms: float
    usage: Usage
    headers: dict[str, str]
    """The response's ``x-*`` headers (a guardrail proxy's ``x-guardrail-action``...)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_delay_s, self.base_delay_s * 2**attempt))


def is_retryable(exc: BaseException) -> bool:
    """Transient errors worth another try, from litellm or httpx."""
    if isinstance(exc, httpx.TransportError | asyncio.TimeoutError | TimeoutError):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in RETRYABLE_STATUS
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS
    return type(exc).__name__ in {"APIConnectionError", "Timeout", "APITimeoutError"}


async def with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Run ``call``, retrying transient failures with exponential backoff."""
    for attempt in range(policy.attempts):
        try:
            return await call()
        except ModelCallError:
            raise
        except Exception as exc:
            if not is_retryable(exc) or attempt == policy.attempts - 1:
                raise ModelCallError(_describe(exc)) from exc
            await asyncio.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def _describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _usage(data: Any) -> Usage:
    if not data:
        return Usage()
    get = data.get if isinstance(data, dict) else lambda key, default=0: getattr(data, key, 0)
    return Usage(
        prompt_tokens=int(get("prompt_tokens", 0) or 0),
        completion_tokens=int(get("completion_tokens", 0) or 0),
    )


async def litellm_complete(
    model: str,
    messages: Sequence[Message],
    *,
    policy: RetryPolicy,
    **kwargs: Any,
) -> Completion:
    """Ask ``model`` (any litellm model name) for a reply."""
    import litellm

    litellm.suppress_debug_info = True
    kwargs.setdefault("max_retries", 0)  # ``policy`` is the one retry layer

    async def call() -> Completion:
        started = time.perf_counter()
        response = await litellm.acompletion(model=model, messages=list(messages), **kwargs)
        latency = (time.perf_counter() - started) * 1000
        message = response.choices[0].message
        headers = getattr(response, "_response_headers", None) or {}
        return Completion(
            text=content_text(message.content),
            refusal=getattr(message, "refusal", None),
            latency_ms=latency,
            usage=_usage(getattr(response, "usage", None)),
            headers={k.lower(): v for k, v in headers.items() if k.lower().startswith("x-")},
        )

    return await with_retries(call, policy)


def proxy_base_url(url: str) -> str:
    """A proxy's OpenAI base URL (ending in ``/v1``), from its address with or without it."""
    base = url.rstrip("/").removesuffix("/chat/completions")
    return base if base.endswith("/v1") else f"{base}/v1"


def proxy_model_name(model: str) -> str:
    """The name a proxy in front of an OpenAI-compatible upstream expects for a litellm model:
    the name without its provider prefix, as litellm itself would send it upstream."""
    return model.split("/", 1)[1] if "/" in model else model
