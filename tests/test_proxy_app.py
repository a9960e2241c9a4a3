"""The proxy app against a respx-mocked upstream, through litellm, over the ASGI transport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import respx
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from proxy_doubles import (
    REFUSAL_OPENING,
    REWRITE,
    ScriptedGuardrail,
    completion,
    parse_sse,
    sse_body,
    streamed_text,
    text_chunks,
)

from guardrail.store import MemoryStore, key_id
from proxy.app import create_app
from proxy.config import ProxySettings

UPSTREAM = "http://upstream.test/v1"
COMPLETIONS = f"{UPSTREAM}/chat/completions"
USER = [{"role": "user", "content": "How do locks work?"}]


@pytest.fixture
def guardrail() -> ScriptedGuardrail:
    return ScriptedGuardrail()


@pytest.fixture
def settings() -> ProxySettings:
    return ProxySettings(upstream_base_url=UPSTREAM, upstream_api_key="sk-upstream")


@pytest.fixture
async def client(
    settings: ProxySettings, guardrail: ScriptedGuardrail
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, guardrail)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
        yield client


@pytest.fixture
def upstream() -> respx.MockRouter:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def _reply(router: respx.MockRouter, body: dict[str, Any], status: int = 200) -> respx.Route:
    return router.post(COMPLETIONS).mock(return_value=httpx.Response(status, json=body))


def _stream(router: respx.MockRouter, chunks: list[dict[str, Any]]) -> respx.Route:
    response = httpx.Response(
        200, content=sse_body(chunks), headers={"content-type": "text/event-stream"}
    )
    return router.post(COMPLETIONS).mock(return_value=response)


def _sent(route: respx.Route) -> dict[str, Any]:
    return json.loads(route.calls.last.request.content)


FULL_REQUEST: dict[str, Any] = {
    "model": "my-model",
    "messages": [
        {"role": "system", "content": "Be brief.", "name": "setup"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object"}, "strict": True},
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "f"}},
    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}},
    "temperature": 0.2,
    "top_p": 0.9,
    "n": 1,
    "seed": 7,
    "stop": ["\n\n"],
    "user": "user-1",
    "logprobs": True,
    "top_logprobs": 2,
    "max_completion_tokens": 64,
    "metadata": {"team": "a"},
    "parallel_tool_calls": False,
    "logit_bias": {"50256": -100},
    "a_future_field": {"nested": [1, None, "x"]},
    "api_base": "http://not-the-upstream.test",
    "mock_response": "not from the upstream",
}


async def test_every_request_field_reaches_the_upstream_unchanged(client, upstream):
    route = _reply(upstream, completion())
    response = await client.post("/v1/chat/completions", json=FULL_REQUEST)
    assert response.status_code == 200
    assert _sent(route) == FULL_REQUEST  # litellm keyword names stay data, never config
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-upstream"


async def test_streaming_request_fields_reach_the_upstream_unchanged(client, upstream):
    route = _stream(upstream, text_chunks(["Hello."]))
    body = {**FULL_REQUEST, "stream": True, "stream_options": {"include_usage": True}}
    response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert _sent(route) == body


async def test_reply_comes_back_unchanged_without_nulls(client, upstream):
    upstream_reply = completion(service_tier="default", vendor_extension={"k": 1})
    upstream_reply["choices"][0]["stop_reason"] = 32000
    upstream_reply["choices"][0]["logprobs"] = {
        "content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}],
        "refusal": None,
    }
    _reply(upstream, upstream_reply)
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    data = response.json()
    assert "null" not in response.text
    assert "provider_specific_fields" not in response.text
    assert data["service_tier"] == "default"
    assert data["vendor_extension"] == {"k": 1}
    assert data["choices"][0]["stop_reason"] == 32000
    assert data["choices"][0]["logprobs"]["content"][0]["bytes"] == [72, 105]
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "Hello there."}
    assert data["usage"] == upstream_reply["usage"]
    ChatCompletion.model_validate(data)


async def test_headers_on_a_passed_reply(client, upstream):
    _reply(upstream, completion())
    response = await client.post(
        "/v1/chat/completions",
        json={"model": "m", "messages": USER},
        headers={"x-request-id": "req-123"},
    )
    assert response.headers["x-guardrail-action"] == "pass"
    assert response.headers["x-guardrail-policy"] == "none"
    assert response.headers["x-request-id"] == "req-123"


async def test_a_refusal_is_rewritten_with_usage_added(client, upstream, guardrail):
    _reply(upstream, completion(f"{REFUSAL_OPENING} help with that."))
    response = await client.post(
        "/v1/chat/completions", json={"model": "m", "messages": USER, "user": "u"}
    )
    data = response.json()
    assert data["choices"][0]["message"]["content"] == REWRITE
    assert data["usage"] == {"prompt_tokens": 16, "completion_tokens": 11, "total_tokens": 27}
    assert response.headers["x-guardrail-action"] == "rewritten"
    assert response.headers["x-guardrail-policy"] == "test-policy"
    (call,) = guardrail.calls
    assert call.reply == f"{REFUSAL_OPENING} help with that."
    assert call.partial is False
    assert call.model == "m"
    assert call.messages == USER


async def test_the_refusal_field_counts_as_a_refusal_and_is_cleared(client, upstream, guardrail):
    _reply(upstream, completion(None, message={"refusal": "I can't help with that."}))
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    message = response.json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": REWRITE}
    assert guardrail.calls[0].refusal == "I can't help with that."
    assert guardrail.calls[0].reply is None


async def test_tool_calls_pass_untouched_without_review(client, upstream, guardrail):
    tool_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    upstream_reply = completion(REFUSAL_OPENING, message={"tool_calls": [tool_call]})
    _reply(upstream, upstream_reply)
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    message = response.json()["choices"][0]["message"]
    assert message["tool_calls"] == [tool_call]
    assert message["content"] == REFUSAL_OPENING
    assert guardrail.calls == []
    assert response.headers["x-guardrail-action"] == "pass"


async def test_a_reply_without_text_passes_without_review(client, upstream, guardrail):
    _reply(upstream, completion(""))
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert response.json()["choices"][0]["message"]["content"] == ""
    assert guardrail.calls == []


async def test_each_of_several_choices_is_reviewed(client, upstream, guardrail):
    upstream_reply = completion("Fine answer.", n=2)
    upstream_reply["choices"][1]["message"]["content"] = f"{REFUSAL_OPENING} do that."
    _reply(upstream, upstream_reply)
    response = await client.post(
        "/v1/chat/completions", json={"model": "m", "messages": USER, "n": 2}
    )
    choices = response.json()["choices"]
    assert [c["message"]["content"] for c in choices] == ["Fine answer.", REWRITE]
    assert response.headers["x-guardrail-action"] == "pass,rewritten"
    assert response.headers["x-guardrail-policy"] == "none,test-policy"
    assert len(guardrail.calls) == 2


async def test_a_failing_review_lets_the_reply_through(client, upstream, guardrail):
    guardrail.fail = True
    _reply(upstream, completion(f"{REFUSAL_OPENING} help."))
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == f"{REFUSAL_OPENING} help."
    assert response.headers["x-guardrail-action"] == "pass"


async def test_a_passed_stream_is_forwarded_chunk_for_chunk(client, upstream):
    chunks = text_chunks(["To", " pick", " a", " lock,", " insert", " a", " pick."], usage=True)
    _stream(upstream, chunks)
    body = {"model": "m", "messages": USER, "stream": True}
    response = await client.post("/v1/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-guardrail-action"] == "pass"
    events = parse_sse(response.text)
    assert events[-1] == "[DONE]"
    assert events[:-1] == chunks


async def test_a_refused_stream_is_replaced_by_the_rewrite(client, upstream, guardrail):
    _stream(upstream, text_chunks(["I'm", " sorry,", " but", " I", " can't", " help.", " No."]))
    body = {
        "model": "m",
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    response = await client.post("/v1/chat/completions", json=body)
    assert response.headers["x-guardrail-action"] == "rewritten"
    assert response.headers["x-guardrail-policy"] == "test-policy"
    events = parse_sse(response.text)
    assert events[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(e) for e in events[:-1]]
    assert streamed_text(events) == REWRITE
    assert chunks[0].choices[0].delta.role == "assistant"
    assert {c.id for c in chunks} == {"chatcmpl-up"}
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 18
    assert guardrail.calls[0].partial is True


async def test_upstream_errors_keep_the_openai_shape(client, upstream):
    _reply(upstream, {"error": {"message": "bad temperature", "param": "temperature"}}, 400)
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "bad temperature",
            "type": "invalid_request_error",
            "code": None,
            "param": "temperature",
        }
    }


@pytest.mark.parametrize(
    ("upstream_status", "headers", "status", "error_type"),
    [
        (401, {}, 401, "authentication_error"),
        (403, {}, 403, "permission_error"),
        (404, {}, 404, "not_found_error"),
        (408, {}, 504, "timeout"),
        (422, {}, 422, "invalid_request_error"),
        (429, {"retry-after": "7"}, 429, "rate_limit_error"),
        (500, {}, 502, "upstream_error"),
        (502, {}, 502, "upstream_error"),
        (503, {"retry-after": "3"}, 503, "service_unavailable"),
    ],
)
async def test_upstream_statuses_map_to_client_statuses(
    client, upstream, upstream_status, headers, status, error_type
):
    upstream.post(COMPLETIONS).mock(
        return_value=httpx.Response(
            upstream_status, json={"error": {"message": "upstream says no"}}, headers=headers
        )
    )
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == error_type
    assert "upstream says no" in error["message"]
    assert response.headers.get("retry-after") == headers.get("retry-after")


@pytest.mark.parametrize(
    ("side_effect", "status"),
    [
        (httpx.ConnectError("connection refused"), 502),
        (httpx.ReadTimeout("read timed out"), 504),
        (httpx.Response(200, text="<html>not json</html>"), 502),
    ],
)
async def test_a_broken_upstream_is_a_gateway_error(client, upstream, side_effect, status):
    route = upstream.post(COMPLETIONS)
    if isinstance(side_effect, httpx.Response):
        route.mock(return_value=side_effect)
    else:
        route.mock(side_effect=side_effect)
    response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == status
    assert set(response.json()["error"]) == {"message", "type", "code", "param"}
    assert "Traceback" not in response.text


async def test_upstream_error_before_a_stream_starts_is_an_http_error(client, upstream):
    upstream.post(COMPLETIONS).mock(return_value=httpx.Response(429, json={"error": {}}))
    body = {"model": "m", "messages": USER, "stream": True}
    response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 429


@pytest.mark.parametrize(
    ("content", "status", "param"),
    [
        (b"{not json", 400, None),
        (b"[1, 2]", 400, None),
        (b'{"model": "m"}', 422, "messages"),
        (b'{"model": "m", "messages": []}', 422, "messages"),
        (b'{"model": "m", "messages": [{"content": "hi"}]}', 422, "messages"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', 422, "model"),
    ],
)
async def test_bad_requests_get_openai_errors(client, upstream, content, status, param):
    response = await client.post("/v1/chat/completions", content=content)
    assert response.status_code == status
    assert response.json()["error"]["param"] == param
    assert not upstream.calls


async def test_unknown_routes_answer_in_the_openai_shape(client):
    response = await client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
    assert response.headers["x-request-id"]


async def test_health_and_readiness(client):
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    readiness = await client.get("/readyz")
    assert readiness.status_code in (200, 503)  # the warm-up may still be running here


async def test_readiness_follows_the_guardrail_warm_up(settings, guardrail):
    app = create_app(settings, guardrail)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://p") as client:
            for _ in range(100):
                response = await client.get("/readyz")
                if response.status_code == 200:
                    break
                await _yield_to_the_warm_up()
    assert response.json() == {
        "status": "ready",
        "store": {"backend": "memory", "degraded": False, "outages": 0},
    }
    assert guardrail.warmed
    assert guardrail.calls == []  # warming up reviews nothing, so no rewrite model is called


async def test_readiness_reports_a_failed_warm_up(settings, guardrail):
    guardrail.fail = True
    app = create_app(settings, guardrail)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://p") as client:
            await _yield_to_the_warm_up()
            response = await client.get("/readyz")
    assert response.status_code == 503
    assert "policy engine exploded" in response.json()["reason"]


async def _yield_to_the_warm_up() -> None:
    import asyncio

    await asyncio.sleep(0.01)


class TestAuthentication:
    @pytest.fixture
    def settings(self) -> ProxySettings:
        return ProxySettings(upstream_base_url=UPSTREAM, api_keys="key-one, key-two")

    async def test_a_missing_key_is_refused(self, client, upstream):
        response = await client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_api_key"
        assert not upstream.calls

    async def test_a_wrong_key_is_refused(self, client, upstream):
        response = await client.get("/v1/models", headers={"authorization": "Bearer key-three"})
        assert response.status_code == 401

    async def test_a_listed_key_is_accepted_and_its_id_reaches_the_review(
        self, client, upstream, guardrail
    ):
        _reply(upstream, completion())
        response = await client.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": USER},
            headers={"authorization": "Bearer key-two"},
        )
        assert response.status_code == 200
        assert guardrail.calls[0].client_key == key_id("key-two")  # an id, never the secret

    async def test_health_needs_no_key(self, client):
        assert (await client.get("/healthz")).status_code == 200


class TestModelList:
    @pytest.fixture
    def settings(self, monkeypatch) -> ProxySettings:
        monkeypatch.setenv("TEAM_KEY", "sk-team")
        return ProxySettings.model_validate(
            {
                "model_list": [
                    {
                        "model_name": "assistant",
                        "litellm_params": {
                            "model": "openai/served-name",
                            "api_base": "http://team.test/v1",
                            "api_key": "os.environ/TEAM_KEY",
                        },
                    }
                ]
            }
        )

    async def test_public_names_resolve_to_their_upstream(self, client, upstream):
        route = upstream.post("http://team.test/v1/chat/completions").mock(
            return_value=httpx.Response(200, json=completion())
        )
        response = await client.post(
            "/v1/chat/completions", json={"model": "assistant", "messages": USER, "seed": 1}
        )
        assert response.status_code == 200
        assert _sent(route) == {"model": "served-name", "messages": USER, "seed": 1}
        assert route.calls.last.request.headers["authorization"] == "Bearer sk-team"

    async def test_unknown_names_are_not_found(self, client, upstream):
        response = await client.post("/v1/chat/completions", json={"model": "x", "messages": USER})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "model_not_found"

    async def test_models_lists_the_public_names(self, client):
        response = await client.get("/v1/models")
        assert [m["id"] for m in response.json()["data"]] == ["assistant"]


async def test_models_include_the_upstream_list_in_minimal_mode(client, upstream):
    upstream.get(f"{UPSTREAM}/models").mock(
        return_value=httpx.Response(
            200, json={"object": "list", "data": [{"id": "m1", "object": "model"}]}
        )
    )
    response = await client.get("/v1/models")
    assert response.json() == {"object": "list", "data": [{"id": "m1", "object": "model"}]}
    openai.types.Model.model_validate({"created": 0, "owned_by": "x", **response.json()["data"][0]})


async def test_models_report_an_unreachable_upstream(client, upstream):
    upstream.get(f"{UPSTREAM}/models").mock(side_effect=httpx.ConnectError("refused"))
    response = await client.get("/v1/models")
    assert response.status_code == 502


def test_the_pipeline_caches_in_the_apps_store(
    settings: ProxySettings, guardrail: ScriptedGuardrail
) -> None:
    store = MemoryStore()
    create_app(settings, guardrail, store=store)
    assert guardrail.store is store
