"""The chat request as the proxy reads it: checked minimally, forwarded verbatim.

Only the fields the proxy itself acts on are validated; everything else stays in the client's raw
JSON, which is what goes upstream, so new OpenAI fields work without a proxy release.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
)

from proxy.errors import ProxyError
from proxy.limits import RequestLimits


class ChatRequest(BaseModel):
    """The parts of ``POST /v1/chat/completions`` the proxy needs.

    Strict where the proxy acts on a value: ``"stream": "yes"`` must not stream here while the
    upstream reads it differently.
    """

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(
        min_length=1,
        json_schema_extra={
            "items": {
                "type": "object",
                "required": ["role"],
                "properties": {"role": {"type": "string"}},
            }
        },
    )
    stream: StrictBool | None = False
    n: StrictInt | None = Field(default=None, ge=1)
    stream_options: dict[str, Any] | None = None

    @field_validator("messages")
    @classmethod
    def _roles(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, message in enumerate(messages):
            if not isinstance(message.get("role"), str):
                raise ValueError(f"message {index} has no string 'role'")
        return messages

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.get("include_usage"))


def chat_request_openapi() -> dict[str, Any]:
    """The request body as OpenAPI describes it, for a route that reads its body itself."""
    schema = ChatRequest.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def parse_chat_request(
    raw: bytes, limits: RequestLimits | None = None
) -> tuple[dict[str, Any], ChatRequest]:
    """The raw JSON body (to forward) and its checked view; 400/422 errors in OpenAI's shape."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProxyError(
            400, f"request body is not valid JSON: {exc}", code="invalid_json"
        ) from None
    except RecursionError:
        raise ProxyError(400, "request JSON is nested too deeply", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ProxyError(400, "request body must be a JSON object", code="invalid_json")
    if limits is not None:
        limits.check(body)
    try:
        request = ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"]) or None
        raise ProxyError(
            422, f"invalid request: {param}: {first['msg']}", param=param, code="invalid_request"
        ) from None
    return body, request
