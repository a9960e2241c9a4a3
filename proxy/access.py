"""One JSON line per request on the ``guardrail.access`` logger, and the HTTP metrics.

The line carries the request id the client got in ``x-request-id``, so a client's report can be
matched to the log. It holds ids, names and timings only: never a key (a client key appears as its
hashed id) and never message text.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proxy.accounting import RequestRecord
from proxy.metrics import ProxyMetrics
from proxy.request_id import HEADER as REQUEST_ID_HEADER

log = logging.getLogger("guardrail.access")

RECORD = "guardrail_record"
"""Where the request's :class:`RequestRecord` lives in ``scope["state"]`` (``request.state``)."""


def request_record(scope: Scope) -> RequestRecord:
    """The record the access middleware opened for this request (a fresh one outside it)."""
    state = scope.setdefault("state", {})
    record = state.get(RECORD)
    if not isinstance(record, RequestRecord):
        record = state[RECORD] = RequestRecord()
    return record


class AccessMiddleware:
    """Times each HTTP request to its last byte, then logs it and counts it.

    Add it after :class:`~proxy.request_id.RequestIdMiddleware` so that it wraps it and sees the
    request id on the way out.
    """

    def __init__(self, app: ASGIApp, metrics: ProxyMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        record = request_record(scope)
        response: dict[str, Any] = {"status": 500, "request_id": None}

        async def observe(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                for name, value in message.get("headers", ()):
                    if name == REQUEST_ID_HEADER.encode():
                        response["request_id"] = value.decode("latin-1")
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            self._finish(scope, record, response, time.perf_counter() - started)

    def _finish(
        self, scope: Scope, record: RequestRecord, response: dict[str, Any], elapsed: float
    ) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        status = int(response["status"])
        self.metrics.requests.labels(method=scope["method"], route=route, status=str(status)).inc()
        self.metrics.latency.labels(route=route).observe(elapsed)
        if record.model is not None:
            self.metrics.overhead.labels(stream=str(bool(record.stream)).lower()).observe(
                record.review_s
            )
        if not log.isEnabledFor(logging.INFO):
            return
        line = {
            "request_id": response["request_id"],
            "method": scope["method"],
            "path": scope["path"],
            "route": route,
            "status": status,
            "model": record.model,
            "stream": record.stream,
            "action": record.action,
            "policy": record.policy,
            "client": record.key_id,
            "duration_ms": round(elapsed * 1000, 3),
            "guardrail_ms": round(record.review_s * 1000, 3),
        }
        log.info(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
