"""Request parsing: raw body kept, minimal checks, OpenAI-shaped errors."""

from __future__ import annotations

import json

import pytest

from proxy.errors import ProxyError
from proxy.schema import parse_chat_request


def test_the_raw_body_is_kept_exactly():
    raw = {"model": "m", "messages": [{"role": "user", "content": "x", "odd": 1}], "z": [None]}
    body, request = parse_chat_request(json.dumps(raw).encode())
    assert body == raw
    assert request.model == "m"
    assert request.stream is False
    assert request.include_usage is False


def test_stream_options_are_read():
    raw = b'{"model": "m", "messages": [{"role": "user"}], "stream": true,'
    raw += b' "stream_options": {"include_usage": true}}'
    _, request = parse_chat_request(raw)
    assert request.stream and request.include_usage


@pytest.mark.parametrize(
    ("raw", "status", "param"),
    [
        (b"\xff\xfe", 400, None),
        (b"", 400, None),
        (b'"text"', 400, None),
        (b'{"model": "", "messages": [{"role": "user"}]}', 422, "model"),
        (b'{"model": "m", "messages": "hi"}', 422, "messages"),
        (b'{"model": "m", "messages": [{"role": 3}]}', 422, "messages"),
        (b'{"model": "m", "messages": [{"role": "user"}], "n": 0}', 422, "n"),
        (b'{"model": "m", "messages": [{"role": "user"}], "stream": "yes"}', 422, "stream"),
    ],
)
def test_bad_bodies_are_rejected_with_the_field_named(raw, status, param):
    with pytest.raises(ProxyError) as caught:
        parse_chat_request(raw)
    assert caught.value.status == status
    assert caught.value.param == param
