"""Real servers on loopback: the scripted stub upstream and the proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from proxy_doubles import ScriptedGuardrail

from eval.loopback import Script, StubUpstream, serve
from proxy.app import create_app
from proxy.config import ProxySettings

TIMEOUT_S = 15.0


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[StubUpstream, str]]:
    upstream = StubUpstream()
    with serve(upstream.app) as url:
        yield upstream, url


@pytest.fixture(scope="module")
def guardrail() -> ScriptedGuardrail:
    return ScriptedGuardrail()


@pytest.fixture(scope="module")
def proxy_url(stub, guardrail) -> Iterator[str]:
    _, stub_url = stub
    settings = ProxySettings(upstream_base_url=f"{stub_url}/v1", upstream_timeout_s=TIMEOUT_S)
    with serve(create_app(settings, guardrail)) as url:
        yield url


@pytest.fixture(autouse=True)
def fresh_state(stub, guardrail) -> None:
    upstream, _ = stub
    upstream.script = Script()
    upstream.records.clear()
    guardrail.calls.clear()


@pytest.fixture
def upstream(stub) -> StubUpstream:
    return stub[0]


@pytest.fixture
def client(proxy_url) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{proxy_url}/v1", api_key="client-key", max_retries=0, timeout=TIMEOUT_S
    )


@pytest.fixture
def direct(stub) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{stub[1]}/v1", api_key="client-key", max_retries=0, timeout=TIMEOUT_S
    )
