"""``x-request-id`` on every response, errors included, for tracing one call through logs."""

from __future__ import annotations

import re
import uuid

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
STATE_KEY = "request_id"
"""The id is also kept in ``scope["state"]``: handlers read it as ``request.state.request_id``."""
_ACCEPTABLE = re.compile(r"[\w.\-:]{1,128}")


class RequestIdMiddleware:
    """Echo the client's request id when it is sane, otherwise mint one.

    A pure ASGI middleware: it costs one header per response, not a task per request.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _from_client(scope) or uuid.uuid4().hex
        scope.setdefault("state", {})[STATE_KEY] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)


def _from_client(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == HEADER.encode():
            text = value.decode("latin-1")
            return text if _ACCEPTABLE.fullmatch(text) else None
    return None
