"""Exception mapping to OpenAI error bodies."""

from __future__ import annotations

import httpx
import litellm
import openai

from proxy.errors import ProxyError, from_exception

REQUEST = httpx.Request("POST", "http://up.test/v1/chat/completions")


def test_the_body_has_openais_four_fields():
    error = ProxyError(400, "bad", param="temperature")
    assert error.body() == {
        "error": {
            "message": "bad",
            "type": "invalid_request_error",
            "code": None,
            "param": "temperature",
        }
    }


def test_a_rate_limit_keeps_its_retry_after():
    response = httpx.Response(429, headers={"retry-after": "12"}, request=REQUEST)
    exc = openai.RateLimitError("slow down", response=response, body={"message": "slow down"})
    error = from_exception(exc)
    assert (error.status, error.headers) == (429, {"retry-after": "12"})
    assert error.message == "slow down"


def test_litellms_prefixes_are_stripped_from_messages():
    exc = litellm.APIConnectionError(
        message="Connection error.", llm_provider="openai", model="m", request=REQUEST
    )
    error = from_exception(exc)
    assert error.status == 502
    assert error.message == "upstream error: Connection error."


def test_timeouts_are_gateway_timeouts():
    assert from_exception(httpx.ReadTimeout("slow", request=REQUEST)).status == 504
    assert from_exception(openai.APITimeoutError(request=REQUEST)).status == 504
    timeout = litellm.Timeout(message="late", model="m", llm_provider="openai")
    assert from_exception(timeout).status == 504


def test_an_error_event_inside_a_stream_is_a_bad_gateway():
    exc = openai.APIError("overloaded", request=REQUEST, body={"message": "overloaded"})
    error = from_exception(exc)
    assert (error.status, error.message) == (502, "upstream error: overloaded")


def test_unreachable_upstreams_are_bad_gateways():
    error = from_exception(httpx.ConnectError("refused", request=REQUEST))
    assert (error.status, error.code) == (502, "upstream_unreachable")


def test_anything_else_is_an_internal_error_without_details(caplog):
    error = from_exception(KeyError("secret-internal-state"))
    assert error.status == 500
    assert "secret-internal-state" not in str(error.body())
    assert "unexpected error" in caplog.text
