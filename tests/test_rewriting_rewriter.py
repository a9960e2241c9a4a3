"""Model rewrites through litellm (mocked with respx): accepted, re-refused, leaky or failing."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest
import respx
from _stubs import StubDetector

from guardrail.policies import OnFailure, PolicySet, load_policies
from guardrail.rewriting import RewriteJob, Rewriter, Source, salvage
from guardrail.settings import default_policies_dir

API = "http://upstream.test/v1"
UPSTREAM = {"api_base": API, "api_key": "sk-test"}
MODEL = "openai/stub-model"


def completion(text: str, prompt_tokens: int = 30, completion_tokens: int = 20) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


@pytest.fixture(scope="module")
def bundled() -> PolicySet:
    return load_policies(default_policies_dir())


def job(
    policy_set: PolicySet,
    name: str,
    request: str,
    reply: str,
    *,
    lang: str = "en",
    category: str = "other_illegal",
    on_failure: OnFailure | None = None,
) -> RewriteJob:
    policy = policy_set.get(name)
    assert policy is not None
    if on_failure is not None:
        policy = policy.model_copy(update={"on_failure": on_failure})
    detection = StubDetector().detect(reply)
    return RewriteJob(
        policy=policy,
        messages=[{"role": "user", "content": request}],
        request=request,
        reply=reply,
        detection=detection,
        lang=lang,
        category=category,
        sensitive=True,
        model=MODEL,
        salvaged=tuple(salvage(reply, detection, sensitive=True)),
    )


GOOD = (
    "Pin-tumbler locks open when every pin is lifted to the shear line, which is why locksmiths "
    "train for years. Opening a lock that isn't yours is illegal in most places, so if you're "
    "locked out, a licensed locksmith is the quickest route."
)


@respx.mock
async def test_verified_model_rewrite_is_used_with_its_usage(bundled: PolicySet) -> None:
    route = respx.post(f"{API}/chat/completions").mock(return_value=completion(GOOD))
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM)
    result = await rewriter.rewrite(
        job(bundled, "illegal_general", "How do I pick a lock?", "I'm sorry, I can't help.")
    )
    assert result.source is Source.MODEL and result.text == GOOD
    assert result.usage.prompt_tokens == 30 and result.usage.completion_tokens == 20
    sent = json.loads(route.calls.last.request.content)
    system = sent["messages"][0]["content"]
    assert "Never include: step-by-step instructions" in system
    assert "in English" in system
    assert "How do I pick a lock?" in sent["messages"][1]["content"]
    assert "I'm sorry" not in sent["messages"][1]["content"], "the refusal is not sent back"


@respx.mock
async def test_re_refusing_model_is_retried_then_composed(bundled: PolicySet) -> None:
    route = respx.post(f"{API}/chat/completions").mock(
        return_value=completion("I'm sorry, but I can't assist with that.")
    )
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM)
    result = await rewriter.rewrite(
        job(bundled, "illegal_general", "How do I pick a lock?", "I can't help with that.")
    )
    assert route.call_count == 2, "one try plus max_retries: 1"
    assert result.source is Source.COMPOSE
    assert result.text and "how to pick a lock" in result.text
    assert all("still a flat refusal" in p for p in result.problems)
    assert result.usage.completion_tokens == 40, "rejected attempts still cost tokens"


@respx.mock
async def test_leaky_rewrite_is_rejected(bundled: PolicySet) -> None:
    leak = (
        "Sure! Lock picking is a fun hobby.\n1. Insert the tension wrench into the keyway.\n"
        "2. Apply light pressure.\n3. Rake the pins until they set."
    )
    respx.post(f"{API}/chat/completions").mock(side_effect=[completion(leak), completion(GOOD)])
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM)
    result = await rewriter.rewrite(
        job(bundled, "illegal_general", "How do I pick a lock?", "I can't help with that.")
    )
    assert result.source is Source.MODEL and result.text == GOOD
    assert result.problems == ("attempt 1: adds operational detail: step_sequences",)


@respx.mock
async def test_wrong_language_is_rejected(bundled: PolicySet) -> None:
    respx.post(f"{API}/chat/completions").mock(return_value=completion(GOOD))
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM)
    result = await rewriter.rewrite(
        job(
            bundled,
            "illegal_general",
            "¿Cómo abro una cerradura?",
            "Lo siento, no puedo.",
            lang="es",
        )
    )
    assert result.source is Source.COMPOSE
    assert "language en, expected es" in result.problems[0]
    assert result.text and "la ley" in result.text


@respx.mock
async def test_failing_model_falls_back_as_configured(bundled: PolicySet) -> None:
    respx.post(f"{API}/chat/completions").mock(
        return_value=httpx.Response(500, json={"error": {"message": "boom"}})
    )
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM, timeout=5)
    original = await rewriter.rewrite(
        job(
            bundled,
            "illegal_general",
            "How do I pick a lock?",
            "I can't help with that.",
            on_failure=OnFailure.ORIGINAL,
        )
    )
    assert original.source is Source.ORIGINAL and original.text is None
    assert len(original.problems) == 2 and "attempt 2:" in original.problems[1]
    composed = await rewriter.rewrite(
        job(bundled, "illegal_general", "How do I pick a lock?", "I can't help with that.")
    )
    assert composed.source is Source.COMPOSE and composed.text


async def test_no_upstream_model_means_compose(bundled: PolicySet) -> None:
    offline = replace(
        job(bundled, "illegal_general", "How do I pick a lock?", "I can't help."), model=None
    )
    rewriter = Rewriter(bundled, StubDetector())
    result = await rewriter.rewrite(offline)
    assert result.source is Source.COMPOSE and result.problems == ()


@respx.mock
async def test_earlier_user_turns_reach_the_rewrite_prompt(bundled: PolicySet) -> None:
    route = respx.post(f"{API}/chat/completions").mock(return_value=completion(GOOD))
    rewriter = Rewriter(bundled, StubDetector(), upstream=UPSTREAM)
    conversation = replace(
        job(bundled, "illegal_general", "And the back door?", "I can't help with that."),
        messages=[
            {"role": "user", "content": "My neighbour is away this week."},
            {"role": "assistant", "content": "Okay."},
            {"role": "user", "content": "And the back door?"},
        ],
    )
    await rewriter.rewrite(conversation)
    prompt = json.loads(route.calls.last.request.content)["messages"][1]["content"]
    assert "- My neighbour is away this week." in prompt
    assert prompt.index("earlier messages") < prompt.index("And the back door?")
