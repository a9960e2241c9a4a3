"""schemathesis against the proxy's own OpenAPI schema: no generated request gets a 500.

The app runs in-process over ASGI with the upstream mocked by respx, answering every request with
a plain reply or a stream as asked, so any 500 found is the proxy's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx
import schemathesis
from hypothesis import HealthCheck, settings
from proxy_doubles import ScriptedGuardrail, completion, sse_body, text_chunks
from schemathesis.checks import not_a_server_error

from guardrail.store import MemoryStore
from proxy.app import create_app
from proxy.config import ProxySettings

UPSTREAM = "http://upstream.test/v1"

app = create_app(
    ProxySettings(upstream_base_url=UPSTREAM, max_body_bytes=65_536),
    ScriptedGuardrail(),
    store=MemoryStore(),
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


def _answer(request: httpx.Request) -> httpx.Response:
    if json.loads(request.content).get("stream"):
        body = sse_body(text_chunks(["Locks", " have", " pins", "."]))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    return httpx.Response(200, json=completion("Locks have pins."))


@pytest.fixture(autouse=True)
def upstream() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        router.get(f"{UPSTREAM}/models").respond(200, json={"object": "list", "data": []})
        router.route(host="testserver").pass_through()
        yield router


def test_the_schema_describes_the_chat_request_body() -> None:
    body = app.openapi()["paths"]["/v1/chat/completions"]["post"]["requestBody"]
    assert set(body["content"]["application/json"]["schema"]["required"]) == {"model", "messages"}


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_generated_request_gets_a_500(case: schemathesis.Case) -> None:
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
