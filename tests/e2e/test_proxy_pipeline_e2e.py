"""The proxy with its real default pipeline (bundled policies, the detector), on loopback.

The other end-to-end tests drive the proxy with a scripted guardrail; this one checks that
``guardrail serve``'s own pipeline is wired in: its decisions reach the client in the body and
the ``x-guardrail-*`` headers, streaming and not.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from eval.loopback import Script, serve
from guardrail import Action
from proxy.app import create_app
from proxy.config import ProxySettings

pytestmark = pytest.mark.e2e

BENIGN = [{"role": "user", "content": "How do I kill a Python process that hangs?"}]
REFUSAL = ("I'm", " sorry,", " but", " I", " can't", " help", " with", " that.")
ANSWER = ("Use", " `kill", " <pid>`", " or", " `pkill", " -f", " script.py`.")
ACTIONS = {action.value for action in Action}


@pytest.fixture(scope="module")
def client(stub) -> Iterator[openai.OpenAI]:
    settings = ProxySettings(upstream_base_url=f"{stub[1]}/v1", upstream_timeout_s=30)
    with serve(create_app(settings)) as url:
        yield openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=60)


def test_an_answer_passes_unchanged(client, stub):
    stub[0].script = Script(pieces=ANSWER)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=BENIGN)
    assert raw.headers["x-guardrail-action"] == "pass"
    assert raw.parse().choices[0].message.content == "".join(ANSWER)


def test_a_flat_refusal_is_not_passed_silently(client, stub):
    stub[0].script = Script(pieces=REFUSAL)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=BENIGN)
    action = raw.headers["x-guardrail-action"]
    assert action in ACTIONS - {"pass"}
    content = raw.parse().choices[0].message.content
    assert (content != "".join(REFUSAL)) == (action in ("rewritten", "blocked"))


def test_a_refused_stream_is_decided_in_its_window(client, stub):
    stub[0].script = Script(pieces=REFUSAL + (" Really.",) * 20, interval_s=0.01)
    with client.chat.completions.with_streaming_response.create(
        model="m", messages=BENIGN, stream=True
    ) as response:
        action = response.headers["x-guardrail-action"]
        chunks = list(response.parse())
    assert action in ACTIONS - {"pass"}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_repeated_refusal_is_rewritten_once_then_served_from_the_cache(client, stub):
    upstream = stub[0]
    prompt = "My Python script hangs forever. How do I stop its process?"
    upstream.script, upstream.instructed = Script(pieces=REFUSAL), Script(pieces=ANSWER)
    upstream.records.clear()
    try:
        raws = [
            client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": prompt}]
            )
            for _ in range(2)
        ]
    finally:
        upstream.instructed = None
    assert [raw.headers["x-guardrail-action"] for raw in raws] == ["rewritten", "rewritten"]
    first, second = (raw.parse().choices[0].message.content for raw in raws)
    assert first == second == "".join(ANSWER)
    assert len(upstream.records) == 3  # reply, rewrite, reply: the second rewrite was cached
    metrics = httpx.get(str(client.base_url).removesuffix("/v1/") + "/metrics", timeout=10).text
    assert 'guardrail_cache_lookups_total{cache="rewrite",result="hit"} 1.0' in metrics
