"""x-request-id on every response."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from proxy.request_id import RequestIdMiddleware


async def hello(request):
    return PlainTextResponse("hi")


def client() -> httpx.AsyncClient:
    app = RequestIdMiddleware(Starlette(routes=[Route("/", hello)]))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_a_sane_client_id_is_echoed():
    async with client() as c:
        response = await c.get("/", headers={"x-request-id": "trace-1.2:3"})
    assert response.headers["x-request-id"] == "trace-1.2:3"


async def test_a_missing_or_odd_id_is_replaced_by_a_fresh_one():
    async with client() as c:
        first = (await c.get("/")).headers["x-request-id"]
        second = (await c.get("/", headers={"x-request-id": "bad id\twith spaces"})).headers
    assert len(first) == 32
    assert second["x-request-id"] not in (first, "bad id\twith spaces")
