"""Applying the guardrail's decisions to non-streaming replies."""

from __future__ import annotations

from proxy_doubles import REFUSAL_OPENING, REWRITE, ScriptedGuardrail, completion

from guardrail.types import Action, Decision
from proxy.review import bind_review, guardrail_headers, review_completion

USER = [{"role": "user", "content": "hi"}]


async def test_a_rewrite_replaces_the_content_and_adds_its_usage():
    guardrail = ScriptedGuardrail()
    reply = completion(f"{REFUSAL_OPENING} do that.")
    decisions = await review_completion(
        reply, bind_review(guardrail, USER, model="m", client_key="k")
    )
    assert [d.action for d in decisions] == [Action.REWRITTEN]
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": REWRITE}
    assert reply["usage"] == {"prompt_tokens": 16, "completion_tokens": 11, "total_tokens": 27}
    call = guardrail.calls[0]
    assert (call.model, call.client_key, call.partial) == ("m", "k", False)


async def test_list_content_is_reviewed_as_its_text():
    guardrail = ScriptedGuardrail()
    reply = completion([{"type": "text", "text": "Part one."}, {"type": "text", "text": "Two."}])
    await review_completion(reply, bind_review(guardrail, USER, model="m", client_key=None))
    assert guardrail.calls[0].reply == "Part one.\nTwo."


async def test_a_reply_without_choices_is_unreviewed():
    guardrail = ScriptedGuardrail()
    decisions = await review_completion(
        {"choices": []}, bind_review(guardrail, USER, model="m", client_key=None)
    )
    assert [d.action for d in decisions] == [Action.PASS]
    assert guardrail.calls == []


async def test_the_review_fails_open(caplog):
    guardrail = ScriptedGuardrail(fail=True)
    review = bind_review(guardrail, USER, model="m", client_key=None)
    decision = await review("text", refusal=None, partial=False)
    assert (decision.action, decision.text) == (Action.PASS, None)
    assert "review failed" in caplog.text


def test_headers_list_one_value_per_choice():
    decisions = [
        Decision(action=Action.PASS, text=None),
        Decision(action=Action.KEPT, text=None, policy="weapons"),
    ]
    assert guardrail_headers(decisions) == {
        "x-guardrail-action": "pass,kept",
        "x-guardrail-policy": "none,weapons",
    }
