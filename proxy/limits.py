"""Request limits: body size, message count, JSON depth and text that cannot be re-encoded.

Each limit is checked before the request costs anything upstream, and each failure is a 4xx in
OpenAI's error shape: a request the proxy cannot safely forward must never become a 500.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request

from proxy.errors import ProxyError

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class RequestLimits:
    max_body_bytes: int = 1_048_576
    max_messages: int = 1_000
    max_depth: int = 64

    async def read_body(self, request: Request) -> bytes:
        """The body, refused with 413 as soon as it exceeds ``max_body_bytes``."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise self._too_large()
                chunks.append(chunk)
        except ClientDisconnect:
            # Nobody will read the answer; a 4xx keeps it out of the error log.
            raise ProxyError(400, "client disconnected", code="client_disconnected") from None
        return b"".join(chunks)

    def check(self, body: dict[str, Any]) -> None:
        """Depth, lone surrogates (``"\\ud800"`` parses but cannot be sent on), message count."""
        _check_values(body, self.max_depth)
        messages = body.get("messages")
        if isinstance(messages, list) and len(messages) > self.max_messages:
            raise ProxyError(
                400,
                f"too many messages: {len(messages)} (the limit is {self.max_messages})",
                code="too_many_messages",
                param="messages",
            )

    def _too_large(self) -> ProxyError:
        return ProxyError(
            413,
            f"request body is larger than {self.max_body_bytes} bytes",
            type="invalid_request_error",
            code="request_too_large",
        )


def _check_values(value: Any, max_depth: int) -> None:
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _invalid_text()
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > max_depth:
            raise ProxyError(
                400,
                f"request JSON is nested deeper than {max_depth} levels",
                code="invalid_json",
            )
        if isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    raise _invalid_text()
                pending.append((child, depth + 1))
        else:
            pending.extend((child, depth + 1) for child in item)


def _invalid_text() -> ProxyError:
    return ProxyError(
        400, "request contains an unpaired UTF-16 surrogate escape", code="invalid_json"
    )
