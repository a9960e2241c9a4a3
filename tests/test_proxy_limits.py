"""Request limits: every oversized or malformed body is a clean 4xx in OpenAI's error shape."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import respx
from proxy_doubles import ScriptedGuardrail
from starlette.requests import Request

from proxy.app import create_app
from proxy.config import ProxySettings
from proxy.errors import ProxyError
from proxy.limits import RequestLimits

UPSTREAM = "http://upstream.test/v1"


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    settings = ProxySettings(
        upstream_base_url=UPSTREAM, max_body_bytes=4096, max_messages=3, max_json_depth=8
    )
    app = create_app(settings, ScriptedGuardrail())
    with respx.mock(assert_all_mocked=True):  # nothing may reach the upstream
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
        ) as client:
            yield client


def messages(count: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "hi"}] * count


async def post(client: httpx.AsyncClient, content: bytes) -> tuple[int, dict[str, object]]:
    response = await client.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    return response.status_code, response.json()["error"]


async def test_a_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]})
    status, error = await post(client, body.encode())
    assert status == 413
    assert error["code"] == "request_too_large"


async def test_a_chunked_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b" " * 1000

    response = await client.post("/v1/chat/completions", content=chunks())
    assert response.status_code == 413


async def test_too_many_messages_is_400(client: httpx.AsyncClient) -> None:
    status, error = await post(client, json.dumps({"model": "m", "messages": messages(4)}).encode())
    assert (status, error["code"], error["param"]) == (400, "too_many_messages", "messages")


def nested_request(depth: int) -> bytes:
    nested = "[" * depth + "]" * depth
    body = f'{{"model": "m", "messages": [{{"role": "user", "content": "hi"}}], "x": {nested}}}'
    return body.encode()


async def test_json_deeper_than_the_limit_is_400(client: httpx.AsyncClient) -> None:
    status, error = await post(client, nested_request(9))
    assert (status, error["code"]) == (400, "invalid_json")


async def test_json_too_deep_for_the_parser_is_400() -> None:
    app = create_app(ProxySettings(upstream_base_url=UPSTREAM), ScriptedGuardrail())
    with respx.mock(assert_all_mocked=True):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
        ) as client:
            status, error = await post(client, nested_request(100_000))
    assert (status, error["code"]) == (400, "invalid_json")


async def test_nesting_within_the_limit_passes_the_check(client: httpx.AsyncClient) -> None:
    with respx.mock() as router:
        router.post(f"{UPSTREAM}/chat/completions").respond(500, json={"error": {"message": "x"}})
        response = await client.post("/v1/chat/completions", content=nested_request(5))
    assert response.status_code == 502


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "m", "messages": [{"role": "user", "content": "\xff\xfe"}]}',
        b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}]}',
        b'{"model": "m", "messages": [{"role": "user", "\\udfff": "hi"}]}',
    ],
)
async def test_text_that_is_not_utf8_is_400(client: httpx.AsyncClient, raw: bytes) -> None:
    status, error = await post(client, raw)
    assert (status, error["code"]) == (400, "invalid_json")


async def test_a_client_gone_mid_body_is_a_client_error() -> None:
    async def receive() -> dict[str, object]:
        return {"type": "http.disconnect"}

    request = Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)
    with pytest.raises(ProxyError) as caught:
        await RequestLimits().read_body(request)
    assert (caught.value.status, caught.value.code) == (400, "client_disconnected")
