"""The scripted stub upstream, over the ASGI transport (the e2e tests use it over sockets)."""

from __future__ import annotations

import httpx
from openai.types.chat import ChatCompletion

from eval.loopback import Script, StubUpstream


def client(stub: StubUpstream) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=stub.app), base_url="http://s")


def ask(prompt: str, **extra) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}], **extra}


async def test_replies_follow_the_script_chosen_by_prompt():
    stub = StubUpstream(Script(pieces=("Default.",)), by_prompt={"hi": Script(pieces=("Hi", "!"))})
    async with client(stub) as c:
        chosen = (await c.post("/v1/chat/completions", json=ask("hi"))).json()
        default = (await c.post("/v1/chat/completions", json=ask("other"))).json()
    assert chosen["choices"][0]["message"]["content"] == "Hi!"
    assert default["choices"][0]["message"]["content"] == "Default."
    ChatCompletion.model_validate(chosen)
    assert [r.body["messages"][0]["content"] for r in stub.records] == ["hi", "other"]


async def test_requests_with_a_system_message_get_the_instructed_script():
    stub = StubUpstream(Script(pieces=("Plain.",)), instructed=Script(pieces=("Instructed.",)))
    system = {"role": "system", "content": "Rewrite this."}
    async with client(stub) as c:
        plain = (await c.post("/v1/chat/completions", json=ask("hi"))).json()
        body = ask("hi")
        body["messages"].insert(0, system)
        instructed = (await c.post("/v1/chat/completions", json=body)).json()
    assert plain["choices"][0]["message"]["content"] == "Plain."
    assert instructed["choices"][0]["message"]["content"] == "Instructed."


async def test_tool_calls_finish_with_tool_calls():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    stub = StubUpstream(Script(pieces=(), tool_calls=[call]))
    async with client(stub) as c:
        reply = (await c.post("/v1/chat/completions", json=ask("x"))).json()
    assert reply["choices"][0]["message"]["tool_calls"] == [call]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"


async def test_failures_come_in_openais_shape():
    stub = StubUpstream(Script(status=429, retry_after="2"))
    async with client(stub) as c:
        response = await c.post("/v1/chat/completions", json=ask("x"))
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.json()["error"]["message"] == "stub failure 429"


async def test_a_stream_read_to_its_end_is_marked_finished():
    stub = StubUpstream(Script(pieces=("a", "b")))
    async with client(stub) as c:
        response = await c.post("/v1/chat/completions", json=ask("x", stream=True))
    assert response.text.endswith("data: [DONE]\n\n")
    assert stub.records[0].finished.is_set()
    assert not stub.records[0].abandoned.is_set()
