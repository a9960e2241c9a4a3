"""Routing and litellm arguments, checked on the wire with respx."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from proxy_doubles import completion, sse_body, text_chunks

from proxy.config import ProxySettings
from proxy.errors import ProxyError
from proxy.upstream import Upstream, to_openai

USER = [{"role": "user", "content": "hi"}]


def model_list(**params) -> ProxySettings:
    return ProxySettings.model_validate(
        {"model_list": [{"model_name": "public", "litellm_params": params}]}
    )


def test_minimal_mode_forwards_any_name_as_openai():
    upstream = Upstream(ProxySettings(upstream_base_url="http://up.test/v1"))
    route = upstream.route("vendor/some-model:latest")
    assert route.model == "openai/vendor/some-model:latest"
    assert route.verbatim
    assert route.params == {"api_base": "http://up.test/v1", "api_key": "no-key"}


def test_model_list_routes_carry_their_own_parameters():
    upstream = Upstream(
        model_list(model="anthropic/claude-x", api_key="sk-a", max_retries_custom=1)
    )
    route = upstream.route("public")
    assert route.model == "anthropic/claude-x"
    assert not route.verbatim
    assert route.params == {"api_key": "sk-a", "max_retries_custom": 1}


def test_unknown_names_without_a_base_url_are_not_found():
    with pytest.raises(ProxyError) as caught:
        Upstream(model_list(model="openai/x")).route("other")
    assert caught.value.status == 404


@respx.mock
async def test_a_translated_provider_gets_its_fields_but_never_litellms_own():
    route = respx.post("https://api.anthropic.com/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "Hello from Claude."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 4},
            },
        )
    )
    upstream = Upstream(model_list(model="anthropic/claude-x", api_key="sk-a"))
    reply = await upstream.complete(
        {
            "model": "public",
            "messages": USER,
            "max_tokens": 50,
            "temperature": 0.1,
            "vendor_option": {"x": 1},
            "api_base": "http://elsewhere.test",
            "mock_response": "not from the upstream",
        }
    )
    sent = json.loads(route.calls.last.request.content)
    assert sent["model"] == "claude-x"
    assert sent["max_tokens"] == 50
    assert sent["temperature"] == 0.1
    assert sent["vendor_option"] == {"x": 1}
    assert "api_base" not in sent and "mock_response" not in sent  # never litellm's config
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert reply["choices"][0]["message"]["content"] == "Hello from Claude."
    assert reply["usage"]["total_tokens"] == 7


@respx.mock
async def test_a_verbatim_body_reaches_the_wire_as_sent_without_a_litellm_copy_of_its_messages():
    route = respx.post("http://up.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("Hello."))
    )
    messages = [
        {"role": "system", "content": "Be brief.", "name": "setup"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "vendor_tag": 7},
    ]
    body = {"model": "m", "messages": messages, "temperature": 0.2, "vendor_option": [1]}
    upstream = Upstream(ProxySettings(upstream_base_url="http://up.test/v1"))
    reply = await upstream.complete(body)
    assert json.loads(route.calls.last.request.content) == body
    assert reply["choices"][0]["message"]["content"] == "Hello."
    # litellm would only convert and log a copy the body replaces; it gets none to work on.
    assert upstream._arguments(body, stream=False)["messages"] == []
    translated = Upstream(model_list(model="anthropic/claude-x", api_key="sk-a"))
    assert translated._arguments({**body, "model": "public"}, stream=False)["messages"] == messages


@respx.mock
async def test_a_verbatim_stream_yields_the_upstreams_own_chunks():
    chunks = text_chunks(["Hel", "lo"], usage=True)
    chunks[1]["vendor_field"] = {"kept": True}
    respx.post("http://up.test/v1/chat/completions").mock(
        return_value=httpx.Response(
            200, content=sse_body(chunks), headers={"content-type": "text/event-stream"}
        )
    )
    upstream = Upstream(ProxySettings(upstream_base_url="http://up.test/v1"))
    stream = await upstream.stream({"model": "m", "messages": USER, "stream": True})
    received = [item async for item in stream]
    await stream.aclose()
    assert received == chunks


@respx.mock
async def test_a_translated_stream_is_normalised_to_openai_chunks():
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "usage": {"input_tokens": 3, "output_tokens": 0},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    respx.post("https://api.anthropic.com/v1/messages").mock(
        return_value=httpx.Response(
            200, content=body.encode(), headers={"content-type": "text/event-stream"}
        )
    )
    upstream = Upstream(model_list(model="anthropic/claude-x", api_key="sk-a"))
    stream = await upstream.stream({"model": "public", "messages": USER, "stream": True})
    received = [item async for item in stream]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in received if c["choices"])
    assert text == "Hi"
    assert all(c["object"] == "chat.completion.chunk" for c in received)
    assert "provider_specific_fields" not in json.dumps(received)


def test_to_openai_puts_moved_fields_back_and_drops_the_container():
    data = completion(None)
    message = data["choices"][0]["message"]
    message.pop("refusal")
    message["provider_specific_fields"] = {"refusal": "No.", "empty": None}
    data["choices"][0]["provider_specific_fields"] = {"stop_reason": 7}
    data["provider_specific_fields"] = {}
    result = to_openai(data)
    assert result["choices"][0]["message"]["refusal"] == "No."
    assert "empty" not in result["choices"][0]["message"]
    assert result["choices"][0]["stop_reason"] == 7
    assert "provider_specific_fields" not in json.dumps(result)


def test_rewrite_options_reach_the_minimal_mode_upstream():
    settings = ProxySettings(upstream_base_url="http://up.test/v1", upstream_api_key="sk-up")
    assert Upstream(settings).rewrite_options() == {
        "custom_llm_provider": "openai",
        "api_base": "http://up.test/v1",
        "api_key": "sk-up",
    }
    assert Upstream(model_list(model="openai/x")).rewrite_options() == {}


@respx.mock
async def test_rewrite_models_named_in_the_model_list_go_to_their_route():
    route = respx.post("http://team.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("A warmer answer."))
    )
    upstream = Upstream(
        model_list(model="openai/served", api_base="http://team.test/v1", api_key="sk-t")
    )
    response = await upstream.rewrite_completion(
        model="public", messages=USER, max_tokens=20, api_base="http://ignored.test"
    )
    assert response.choices[0].message.content == "A warmer answer."
    assert json.loads(route.calls.last.request.content)["model"] == "served"
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-t"


@respx.mock
async def test_other_rewrite_models_go_to_litellm_unchanged():
    route = respx.post("http://elsewhere.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("Other."))
    )
    upstream = Upstream(model_list(model="openai/served", api_base="http://team.test/v1"))
    await upstream.rewrite_completion(
        model="openai/rewriter", messages=USER, api_base="http://elsewhere.test/v1", api_key="k"
    )
    assert json.loads(route.calls.last.request.content)["model"] == "rewriter"


@respx.mock
@pytest.mark.parametrize("name", ["m", "vendor/some-model", "anthropic/claude-x"])
async def test_the_requests_own_model_rewrites_through_the_minimal_mode_upstream(name):
    route = respx.post("http://up.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("Rewritten."))
    )
    upstream = Upstream(ProxySettings(upstream_base_url="http://up.test/v1"))
    await upstream.rewrite_completion(
        model=name, messages=USER, max_tokens=20, **upstream.rewrite_options()
    )
    assert json.loads(route.calls.last.request.content)["model"] == name
