"""Every failure leaves the proxy in OpenAI's error shape, never as a traceback.

``{"error": {"message", "type", "code", "param"}}`` is what OpenAI SDKs parse into their own
exception classes, so clients see upstream failures exactly as if they had called the upstream.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import httpx
import openai
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

log = logging.getLogger("guardrail.proxy")

_DEFAULT_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout",
}
_PASSED_STATUSES = frozenset({400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 503})
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+: )?(?:\w+: )?(?:\w+Exception - )?")


class ProxyError(Exception):
    """A failure with its HTTP status and OpenAI error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or _DEFAULT_TYPES.get(status, "api_error")
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "code": self.code,
                "param": self.param,
            }
        }

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def from_exception(exc: BaseException) -> ProxyError:
    """Map an upstream (litellm, openai or httpx) or internal exception to a client error.

    Statuses a client can act on pass through; timeouts become 504 and anything else the
    upstream got wrong (5xx, unreachable, unparseable) becomes 502.
    """
    if isinstance(exc, ProxyError):
        return exc
    if isinstance(exc, HTTPException):
        return ProxyError(exc.status_code, str(exc.detail), headers=exc.headers)
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        return ProxyError(504, f"upstream timed out: {_message(exc)}", code="upstream_timeout")
    if isinstance(exc, openai.APIError):
        status = getattr(exc, "status_code", None)
        upstream = exc.body if isinstance(exc.body, Mapping) else {}
        upstream = upstream.get("error", upstream)
        if not isinstance(upstream, Mapping):
            upstream = {}
        message = str(upstream.get("message") or _message(exc))
        if status == 408:
            return ProxyError(504, f"upstream timed out: {message}", code="upstream_timeout")
        if isinstance(status, int) and status in _PASSED_STATUSES:
            return ProxyError(
                status,
                message,
                type=_str_or_none(upstream.get("type")),
                code=_str_or_none(upstream.get("code")),
                param=_str_or_none(upstream.get("param")),
                headers=_retry_after(exc),
            )
        return ProxyError(502, f"upstream error: {message}", code="upstream_error")
    if isinstance(exc, httpx.HTTPError):
        return ProxyError(502, f"upstream unreachable: {exc}", code="upstream_unreachable")
    log.error("unexpected error", exc_info=exc)
    return ProxyError(500, "internal error in the guardrail proxy", type="api_error")


def install_handlers(app: FastAPI) -> None:
    """Answer upstream failures, unknown routes and anything unforeseen in the OpenAI shape.

    Expected failures get their own handlers; the ``Exception`` one is the last resort, after
    which the server also logs the traceback (never sent to the client).
    """

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return from_exception(exc).response()

    for exc_class in (ProxyError, HTTPException, openai.APIError, httpx.HTTPError, Exception):
        app.add_exception_handler(exc_class, handle)


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return _LITELLM_PREFIX.sub("", str(text), count=1)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _retry_after(exc: openai.APIError) -> dict[str, str]:
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if headers and headers.get("retry-after"):
            return {"retry-after": str(headers["retry-after"])}
    return {}
