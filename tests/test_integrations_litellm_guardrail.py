"""The LiteLLM adapter, driven through litellm itself with ``mock_response`` (no network)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import litellm
import pytest
import yaml
from litellm.proxy._types import UserAPIKeyAuth
from litellm.proxy.types_utils.utils import get_instance_fn
from litellm.types.guardrails import LitellmParams
from litellm.types.utils import EmbeddingResponse, ModelResponse, ModelResponseStream

import guardrail.integrations.litellm_guardrail as module
from guardrail import Action, Decision, Guardrail, Usage
from guardrail.integrations.litellm_guardrail import RefusalRewriteGuardrail
from guardrail.store import MemoryStore, ResilientStore
from guardrail.types import Message

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "How do I get rid of a wasp nest near my door?"}]
REFUSAL = "I'm sorry, but I can't help with that."
ANSWER = "Spray it at dusk with a wasp foam, from a distance, wearing long sleeves."
REWRITE = "Here is a safe way: call a pest-control service, or treat the nest at dusk."


class ScriptedGuardrail(Guardrail):
    """Rewrites replies that open with an apology; records every review."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = fail

    async def review(
        self,
        messages: Sequence[Message],
        reply: str | None,
        *,
        refusal: str | None = None,
        model: str | None = None,
        client_key: str | None = None,
        partial: bool = False,
    ) -> Decision:
        self.calls.append(
            {"messages": messages, "reply": reply, "refusal": refusal, "model": model}
            | {"client_key": client_key, "partial": partial}
        )
        if self.fail:
            raise RuntimeError("rewrite model unreachable")
        if (reply or refusal or "").startswith(("I'm sorry", "I cannot")):
            return Decision(
                action=Action.REWRITTEN,
                text=REWRITE,
                policy="harm-reduction",
                usage=Usage(prompt_tokens=5, completion_tokens=7),
            )
        return Decision(action=Action.PASS, text=None)


@pytest.fixture
def scripted() -> ScriptedGuardrail:
    return ScriptedGuardrail()


@pytest.fixture
def registered(scripted: ScriptedGuardrail) -> Iterator[RefusalRewriteGuardrail]:
    """The adapter registered with litellm as the proxy would, restored afterwards."""
    adapter = RefusalRewriteGuardrail(
        scripted, guardrail_name="refusal-rewrite", event_hook="post_call", default_on=True
    )
    saved = litellm.callbacks
    litellm.callbacks = [adapter]
    try:
        yield adapter
    finally:
        litellm.callbacks = saved


async def complete(reply: str, **kwargs: Any) -> Any:
    return await litellm.acompletion(
        model=MODEL,
        messages=MESSAGES,
        mock_response=reply,
        guardrails=["refusal-rewrite"],
        **kwargs,
    )


async def test_refusal_is_rewritten_through_litellm(
    registered: RefusalRewriteGuardrail, scripted: ScriptedGuardrail
) -> None:
    response = await complete(REFUSAL)
    assert response.choices[0].message.content == REWRITE
    assert response.usage.prompt_tokens == 10 + 5  # litellm's mock usage plus the rewrite's
    assert response.usage.completion_tokens == 20 + 7
    assert response.usage.total_tokens == 30 + 12
    [call] = scripted.calls
    assert call["reply"] == REFUSAL
    assert call["model"] == MODEL
    assert [dict(m) for m in call["messages"]] == MESSAGES
    assert call["partial"] is False


async def test_answer_passes_through_unchanged(
    registered: RefusalRewriteGuardrail, scripted: ScriptedGuardrail
) -> None:
    response = await complete(ANSWER)
    assert response.choices[0].message.content == ANSWER
    assert response.usage.total_tokens == 30
    assert len(scripted.calls) == 1


async def test_outcome_is_logged_for_litellm_without_text(scripted: ScriptedGuardrail) -> None:
    adapter = RefusalRewriteGuardrail(scripted, guardrail_name="refusal-rewrite")
    data: dict[str, Any] = {"model": MODEL, "messages": MESSAGES}
    response = await litellm.acompletion(model=MODEL, messages=MESSAGES, mock_response=REFUSAL)
    await adapter.async_post_call_success_hook(data, UserAPIKeyAuth(token="hashed"), response)
    [info] = data["metadata"]["standard_logging_guardrail_information"]
    assert info["guardrail_status"] == "guardrail_intervened"
    assert info["guardrail_response"] == [
        {"action": "rewritten", "policy": "harm-reduction", "reason": ""}
    ]
    assert REFUSAL not in str(info) and REWRITE not in str(info)
    assert scripted.calls[0]["client_key"] == "hashed"


async def test_refusal_field_is_reviewed_and_cleared(scripted: ScriptedGuardrail) -> None:
    adapter = RefusalRewriteGuardrail(scripted)
    response = ModelResponse(
        model=MODEL,
        choices=[
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": "I cannot do that."},
            }
        ],
    )
    out = await adapter.async_post_call_success_hook(
        {"messages": MESSAGES}, UserAPIKeyAuth(), response
    )
    assert out.choices[0].message.content == REWRITE
    assert out.choices[0].message.refusal is None
    assert (
        scripted.calls[0]["refusal"] == "I cannot do that." and scripted.calls[0]["reply"] is None
    )


async def test_every_text_choice_is_reviewed_and_tool_calls_are_left_alone(
    scripted: ScriptedGuardrail,
) -> None:
    adapter = RefusalRewriteGuardrail(scripted)
    tool_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    response = ModelResponse(
        model=MODEL,
        choices=[
            {"index": 0, "message": {"role": "assistant", "content": REFUSAL}},
            {"index": 1, "message": {"role": "assistant", "content": ANSWER}},
            {
                "index": 2,
                "message": {"role": "assistant", "content": None, "tool_calls": [tool_call]},
            },
        ],
    )
    out = await adapter.async_post_call_success_hook(
        {"messages": MESSAGES}, UserAPIKeyAuth(), response
    )
    assert [c.message.content for c in out.choices] == [REWRITE, ANSWER, None]
    assert out.choices[2].message.tool_calls[0].function.name == "f"
    assert sorted(call["reply"] for call in scripted.calls) == sorted([REFUSAL, ANSWER])


async def test_other_response_types_are_untouched(scripted: ScriptedGuardrail) -> None:
    adapter = RefusalRewriteGuardrail(scripted)
    embedding = EmbeddingResponse(model="text-embedding-3-small", data=[])
    assert await adapter.async_post_call_success_hook({}, UserAPIKeyAuth(), embedding) is embedding
    assert scripted.calls == []


async def test_review_errors_fail_open(caplog: pytest.LogCaptureFixture) -> None:
    adapter = RefusalRewriteGuardrail(ScriptedGuardrail(fail=True))
    data: dict[str, Any] = {"model": MODEL, "messages": MESSAGES}
    response = await litellm.acompletion(model=MODEL, messages=MESSAGES, mock_response=REFUSAL)
    with caplog.at_level(logging.ERROR, logger="guardrail.integrations.litellm"):
        out = await adapter.async_post_call_success_hook(data, UserAPIKeyAuth(), response)
    assert out.choices[0].message.content == REFUSAL
    assert "refusal review failed" in caplog.text
    [info] = data["metadata"]["standard_logging_guardrail_information"]
    assert info["guardrail_status"] == "guardrail_failed_to_respond"


async def stream_through(adapter: RefusalRewriteGuardrail, reply: str) -> list[ModelResponseStream]:
    upstream = await litellm.acompletion(
        model=MODEL,
        messages=MESSAGES,
        mock_response=reply,
        stream=True,
        stream_options={"include_usage": True},
    )
    hook = adapter.async_post_call_streaming_iterator_hook(
        UserAPIKeyAuth(), upstream, {"model": MODEL, "messages": MESSAGES}
    )
    return [chunk async for chunk in hook]


def streamed_text(chunks: list[ModelResponseStream]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


async def test_streamed_refusal_is_replaced_whole(scripted: ScriptedGuardrail) -> None:
    chunks = await stream_through(RefusalRewriteGuardrail(scripted), REFUSAL)
    assert streamed_text(chunks) == REWRITE
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) == 1
    assert content_chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-2:] == ["stop", None]
    assert chunks[-1].usage is not None  # the usage chunk survives
    assert len({c.id for c in chunks}) == 1
    assert scripted.calls[0]["reply"] == REFUSAL


async def test_streamed_answer_is_replayed_chunk_for_chunk(scripted: ScriptedGuardrail) -> None:
    chunks = await stream_through(RefusalRewriteGuardrail(scripted), ANSWER)
    assert streamed_text(chunks) == ANSWER
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1


async def test_stream_review_can_be_turned_off(scripted: ScriptedGuardrail) -> None:
    chunks = await stream_through(RefusalRewriteGuardrail(scripted, review_streams=False), REFUSAL)
    assert streamed_text(chunks) == REFUSAL
    assert scripted.calls == []


def config_snippet() -> dict[str, Any]:
    doc = module.__doc__ or ""
    block = doc.split("::\n", 1)[1].split("\n\n", 1)[0]
    config: dict[str, Any] = yaml.safe_load(block)
    return config


def test_documented_config_loads_the_way_the_litellm_proxy_loads_it(tmp_path: Path) -> None:
    [entry] = config_snippet()["guardrails"]
    params = entry["litellm_params"]
    assert params["mode"] == "post_call"
    cls = get_instance_fn(params["guardrail"], config_file_path=str(tmp_path / "config.yaml"))
    assert cls is RefusalRewriteGuardrail
    # What litellm's GuardrailRegistry.initialize_custom_guardrail passes to the class.
    litellm_params = LitellmParams(**params, review_streams=False)
    extra = {
        k: v
        for k, v in litellm_params.model_dump(exclude_none=True).items()
        if k not in {"guardrail", "mode", "default_on", "stream_scope"}
    }
    adapter = cls(
        guardrail_name=entry["guardrail_name"],
        event_hook=litellm_params.mode,
        default_on=litellm_params.default_on,
        **extra,
    )
    assert adapter.guardrail_name == "refusal-rewrite"
    assert adapter.default_on is True
    assert adapter.review_streams is False
    assert isinstance(adapter.guardrail, Guardrail)


def test_pre_call_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="not in the supported event hooks"):
        RefusalRewriteGuardrail(ScriptedGuardrail(), event_hook="pre_call")


async def test_real_guardrail_keeps_an_ordinary_answer() -> None:
    adapter = RefusalRewriteGuardrail(guardrail_name="refusal-rewrite", event_hook="post_call")
    saved = litellm.callbacks
    litellm.callbacks = [adapter]
    try:
        response = await complete(ANSWER)
        refused = await complete(REFUSAL)
    finally:
        litellm.callbacks = saved
    assert response.choices[0].message.content == ANSWER
    assert isinstance(refused.choices[0].message.content, str)
    assert refused.choices[0].message.content.strip()


@pytest.mark.parametrize(
    ("redis_url", "backend"), [(None, MemoryStore), ("redis://127.0.0.1:6379/15", ResilientStore)]
)
def test_the_built_pipeline_caches_in_memory_or_in_redis(
    monkeypatch: pytest.MonkeyPatch, redis_url: str | None, backend: type
) -> None:
    attached: list[object] = []
    monkeypatch.setattr(Guardrail, "attach_store", lambda self, store: attached.append(store))
    RefusalRewriteGuardrail(guardrail_name="refusal-rewrite", redis_url=redis_url)
    assert len(attached) == 1 and isinstance(attached[0], backend)
