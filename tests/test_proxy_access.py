"""The access log: one JSON line per request, with the request id and no secrets or text."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest
import respx
from proxy_doubles import REFUSAL_OPENING, ScriptedGuardrail, completion

from proxy.app import create_app
from proxy.config import ProxySettings
from proxy.serve import _log_config

UPSTREAM = "http://upstream.test/v1"
SECRET_TEXT = "my diary entry about locks"


@pytest.fixture
def upstream() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "guardrail.access"]


async def test_one_json_line_per_request_without_keys_or_text(
    upstream: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.post(f"{UPSTREAM}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(f"{REFUSAL_OPENING} do that."))
    )
    settings = ProxySettings(
        upstream_base_url=UPSTREAM, upstream_api_key="sk-provider", api_keys="client-key"
    )
    app = create_app(settings, ScriptedGuardrail())
    caplog.set_level(logging.INFO, logger="guardrail.access")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
    ) as client:
        ok = await client.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": SECRET_TEXT}]},
            headers={"authorization": "Bearer client-key"},
        )
        denied = await client.post("/v1/chat/completions", json={})
    first, second = access_lines(caplog)
    assert first["request_id"] == ok.headers["x-request-id"]
    assert first["status"] == 200
    assert (first["method"], first["path"], first["model"]) == ("POST", ok.url.path, "m")
    assert (first["action"], first["policy"], first["stream"]) == (
        "rewritten",
        "test-policy",
        False,
    )
    assert isinstance(first["duration_ms"], float) and isinstance(first["guardrail_ms"], float)
    assert isinstance(first["client"], str) and first["client"] != "client-key"
    assert second["status"] == denied.status_code == 401
    assert second["request_id"] == denied.headers["x-request-id"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for secret in ("client-key", "sk-provider", SECRET_TEXT):
        assert secret not in logged


def test_served_access_lines_are_bare_json(capsys: pytest.CaptureFixture[str]) -> None:
    config = _log_config("info")
    logger = config["loggers"]["guardrail.access"]
    [handler] = logger["handlers"]
    formatter = config["formatters"][config["handlers"][handler]["formatter"]]
    record = logging.LogRecord("guardrail.access", logging.INFO, "", 0, '{"status":200}', (), None)
    assert logging.Formatter(formatter["format"]).format(record) == '{"status":200}'
    assert logger["propagate"] is False
