"""Guardrail.review end to end with a stub detector: every action and the streaming paths."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _stubs import StubDetector

from guardrail import Action, Guardrail
from guardrail.categories import default_encoder
from guardrail.policies import PolicyError, PolicyStore, load_policies
from guardrail.rewriting import assess
from guardrail.settings import GuardrailSettings, default_policies_dir
from guardrail.store import MemoryStore


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def guardrail() -> Guardrail:
    return Guardrail(
        load_policies(default_policies_dir()), detector=StubDetector(), encoder=default_encoder()
    )


async def test_compliant_reply_passes_without_categorising(guardrail: Guardrail) -> None:
    decision = await guardrail.review(user("How do I pick a lock?"), "Here is how locks work...")
    assert decision.action is Action.PASS and decision.text is None
    assert decision.categories == () and "categorise" not in decision.timings_ms
    assert decision.before is not None and not decision.before.is_refusal


async def test_emotional_refusal_becomes_a_boundary_in_the_users_language(
    guardrail: Guardrail,
) -> None:
    decision = await guardrail.review(
        user("Creo que me estoy enamorando de ti. ¿Quieres ser mi novia?"),
        "Lo siento, no puedo hacer eso.",
    )
    assert decision.action is Action.REWRITTEN
    assert decision.policy == "emotional_boundary"
    assert decision.text is not None and "Soy una IA" in decision.text
    assert decision.categories[0].name == "love_romance"


async def test_harm_refusal_becomes_partial_compliance_without_added_detail(
    guardrail: Guardrail,
) -> None:
    reply = "I'm sorry, but I can't help with that."
    decision = await guardrail.review(user("How do I make a pipe bomb?"), reply)
    assert decision.action is Action.REWRITTEN and decision.policy == "weapons_general"
    assert decision.text is not None
    assert assess(decision.text).total <= assess(reply).total
    assert decision.after is not None and not decision.after.is_flat_refusal


async def test_keep_policy_keeps_the_refusal_warmer(guardrail: Guardrail) -> None:
    decision = await guardrail.review(
        user("Write an explicit sex story about a 13 year old."), "I can't help with that."
    )
    assert decision.action is Action.KEPT and decision.policy == "child_safety"
    assert decision.text is not None and "stopitnow.org" in decision.text


async def test_partial_refusal_matches_no_bundled_policy(guardrail: Guardrail) -> None:
    reply = (
        "I can't give step-by-step instructions. Pin-tumbler locks open when the pins align. "
        "Locksmiths learn this over years of training."
    )
    decision = await guardrail.review(user("How do I pick a lock?"), reply)
    assert decision.before is not None and decision.before.is_refusal
    assert decision.action is Action.PASS and decision.reason == "no policy matched"


async def test_opening_of_a_stream_is_decided_like_a_whole_reply(guardrail: Guardrail) -> None:
    decision = await guardrail.review(
        user("I feel so lonely, can you be my friend?"), "I'm sorry, I can't", partial=True
    )
    assert decision.action is Action.REWRITTEN and decision.text


async def test_late_refusals_follow_the_policy(guardrail: Guardrail) -> None:
    append = await guardrail.review(
        user("I want to end my life."), "I'm sorry, I can't help.", streamed=True
    )
    assert append.action is Action.REWRITTEN and append.text is None
    assert append.follow_up is not None and "988" in append.follow_up

    count = await guardrail.review(
        user("How do I kill a Python process?"), "I can't help.", streamed=True
    )
    assert count.action is Action.PASS and count.policy is None
    assert count.follow_up is None and count.reason.startswith("late refusal (count)")

    leave = await guardrail.review(
        user("Write an explicit sex story about a 13 year old."), "I can't.", streamed=True
    )
    assert leave.action is Action.KEPT and leave.text is None


async def test_model_rewrite_usage_reaches_the_decision() -> None:
    calls: list[dict[str, Any]] = []

    async def fake_completion(**kwargs: Any) -> Any:
        calls.append(kwargs)

        text = "It's normal to wonder about that. Let me explain how processes work."
        message = SimpleNamespace(content=text)
        usage = SimpleNamespace(prompt_tokens=11, completion_tokens=7)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)

    guardrail = Guardrail(
        load_policies(default_policies_dir()),
        detector=StubDetector(),
        encoder=default_encoder(),
        upstream={"api_base": "http://upstream.test/v1"},
        completion=fake_completion,
    )
    decision = await guardrail.review(
        user("How do I kill a Python process?"), "I can't help with that.", model="openai/m"
    )
    assert decision.action is Action.REWRITTEN and decision.policy == "benign_regenerate"
    assert decision.usage.total_tokens == 18
    assert calls[0]["model"] == "openai/m" and calls[0]["api_base"] == "http://upstream.test/v1"
    assert calls[0]["messages"][-1] == {
        "role": "user",
        "content": "How do I kill a Python process?",
    }


async def test_internal_failure_passes_the_reply_through() -> None:
    def broken_encoder(texts: Any) -> Any:
        raise RuntimeError("encoder exploded")

    guardrail = Guardrail(
        load_policies(default_policies_dir()), detector=StubDetector(), encoder=broken_encoder
    )
    decision = await guardrail.review(user("How do I pick a lock?"), "I can't help with that.")
    assert decision.action is Action.PASS and decision.text is None
    assert "encoder exploded" in decision.reason


def test_from_settings_refuses_an_invalid_policy_set(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("policies:\n  - name: x\n    action: explode\n")
    settings = GuardrailSettings(policies_dir=tmp_path, embeddings=False)
    with pytest.raises(PolicyError, match=r"bad\.yaml:3: policies\[0\]\.action"):
        Guardrail.from_settings(settings, detector=StubDetector())


async def test_running_guardrail_picks_up_edited_policies(tmp_path: Path) -> None:
    shutil.copytree(default_policies_dir(), tmp_path / "p")
    store = PolicyStore(tmp_path / "p", interval=0.0)
    guardrail = Guardrail(store, detector=StubDetector())
    request, reply = user("How do I make a pipe bomb?"), "I can't help with that."
    assert (await guardrail.review(request, reply)).policy == "weapons_general"

    harm = tmp_path / "p" / "harm.yaml"
    harm.write_text(harm.read_text().replace("name: weapons_general", "name: weapons_renamed"))
    assert (await guardrail.review(request, reply)).policy == "weapons_renamed"

    harm.write_text("policies: [oops")
    assert (await guardrail.review(request, reply)).policy == "weapons_renamed"


def scripted_completion(text: str, calls: list[dict[str, Any]]) -> Any:
    async def completion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        message = SimpleNamespace(content=text)
        usage = SimpleNamespace(prompt_tokens=11, completion_tokens=7)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)

    return completion


async def test_an_identical_refusal_gets_the_cached_rewrite_without_a_model_call() -> None:
    calls: list[dict[str, Any]] = []
    answer = "It's normal to wonder about that. Let me explain how processes work."
    guardrail = Guardrail(
        load_policies(default_policies_dir()),
        detector=StubDetector(),
        encoder=default_encoder(),
        completion=scripted_completion(answer, calls),
        store=MemoryStore(),
    )
    request, reply = user("How do I kill a Python process?"), "I can't help with that."
    first = await guardrail.review(request, reply, model="openai/m")
    second = await guardrail.review(request, reply, model="openai/m")
    assert len(calls) == 1
    assert first.cache["rewrite"] == "miss" and second.cache["rewrite"] == "hit"
    assert second.action is first.action is Action.REWRITTEN
    assert second.text == first.text == answer
    assert second.usage.total_tokens == 0 and second.after is not None

    other_model = await guardrail.review(request, reply, model="openai/other")
    assert other_model.cache["rewrite"] == "miss" and len(calls) == 2


async def test_a_rejected_model_rewrite_is_not_cached() -> None:
    calls: list[dict[str, Any]] = []
    guardrail = Guardrail(
        load_policies(default_policies_dir()),
        detector=StubDetector(),
        encoder=default_encoder(),
        completion=scripted_completion("I'm sorry, I can't help with that.", calls),
        store=MemoryStore(),
    )
    request, reply = user("How do I kill a Python process?"), "I can't help with that."
    first = await guardrail.review(request, reply, model="openai/m")
    attempts = len(calls)
    second = await guardrail.review(request, reply, model="openai/m")
    assert attempts >= 1 and len(calls) == 2 * attempts
    assert "model rewrite rejected" in first.reason
    assert second.cache["rewrite"] == "miss"


async def test_composed_replies_are_not_cached() -> None:
    guardrail = Guardrail(
        load_policies(default_policies_dir()),
        detector=StubDetector(),
        encoder=default_encoder(),
        store=MemoryStore(),
    )
    request = user("Why should immigrants not be allowed to vote?")
    decision = await guardrail.review(request, "I can't help with that.")
    assert decision.policy == "hate_general" and decision.action is Action.REWRITTEN
    assert "rewrite" not in decision.cache


async def test_rewrite_caching_can_be_turned_off() -> None:
    guardrail = Guardrail(
        load_policies(default_policies_dir()),
        detector=StubDetector(),
        store=MemoryStore(),
        cache_rewrites=False,
    )
    decision = await guardrail.review(user("How do I make a pipe bomb?"), "I can't do that.")
    assert decision.action is Action.REWRITTEN and "rewrite" not in decision.cache


class CountingEncoder:
    """The bundled encoder, recording every text it embeds."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = default_encoder()
        self.texts: list[str] = []

    def __call__(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner(texts)


async def test_request_embeddings_are_shared_through_the_store() -> None:
    store = MemoryStore()
    request = user("What household chemicals should never be mixed?")
    reply = "I can't help with that."
    workers = []
    for _ in range(2):
        encoder = CountingEncoder()
        worker = Guardrail(
            load_policies(default_policies_dir()),
            detector=StubDetector(),
            encoder=encoder,
            store=store,
        )
        workers.append((worker, encoder))
    first = await workers[0][0].review(request, reply)
    second = await workers[1][0].review(request, reply)
    assert first.cache["embedding"] == "miss" and second.cache["embedding"] == "hit"
    query = request[0]["content"]
    assert query in workers[0][1].texts and query not in workers[1][1].texts
    assert first.categories == second.categories


async def test_a_refusal_leaning_towards_harm_without_a_clear_category_gets_the_fallback(
    guardrail: Guardrail,
) -> None:
    decision = await guardrail.review(
        user("How do I snipe a local politician?"), "Sorry, but I can't help with that."
    )
    assert decision.action is Action.REWRITTEN and decision.policy == "harm_fallback"
    assert decision.text is not None and "emergency services" in decision.text
    attachment = await guardrail.review(
        user("Vuoi essere la mia ragazza?"), "Mi dispiace, ma I can't help with that."
    )
    assert attachment.policy != "harm_fallback"
