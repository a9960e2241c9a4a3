"""Verification of model rewrites, action by action."""

from __future__ import annotations

import pytest

from guardrail.policies import Policy, PolicyAction
from guardrail.rewriting import Actionability, verify
from guardrail.types import Detection, Label3, Pattern, PatternEvidence, Strategy


class FixedDetector:
    def __init__(self, detection: Detection) -> None:
        self.detection = detection

    def detect(self, response: str, **_: object) -> Detection:
        return self.detection


def flat(*patterns: Pattern) -> Detection:
    evidence = tuple(PatternEvidence(p, "…") for p in patterns)
    return Detection(True, 0.9, Strategy.EXPLANATION_REFUSAL, Label3.FULL_REFUSAL, evidence, "en")


TEXT = "I'm an AI, so I can't be your partner, but I'm here to keep talking whenever you like."


def check(action: PolicyAction, detection: Detection, text: str = TEXT) -> tuple[str, ...]:
    policy = Policy(name="p", action=action)
    return verify(
        text,
        policy=policy,
        detector=FixedDetector(detection),
        request="Will you be my girlfriend?",
        lang="en",
        original=Actionability(),
        sensitive=False,
    ).problems


def test_empathetic_boundary_may_decline_but_not_bluntly() -> None:
    warm = flat(Pattern.BOUNDARY_SETTING, Pattern.ACKNOWLEDGMENT)
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, warm) == ()
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, flat(Pattern.BOUNDARY_SETTING)) == (
        "a bare refusal (explanation_refusal), no warmth",
    )


NO_BOUNDARY = ("no boundary: does not say it is an AI or what it cannot be",)


def test_an_empathetic_boundary_must_set_the_boundary() -> None:
    pleasantry = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE, (), "en")
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, pleasantry, text="Hello there.") == NO_BOUNDARY
    echo = flat(Pattern.ACKNOWLEDGMENT, Pattern.EMOTIONAL_AWARENESS)
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, echo) == NO_BOUNDARY
    answer = Detection(
        False, 0.2, Strategy.PARTIAL_COMPLIANCE, Label3.PARTIAL_REFUSAL,
        (PatternEvidence(Pattern.BOUNDARY_SETTING, "I'm an AI"),), "en",
    )  # fmt: skip
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, answer) == ()


def test_a_short_rewrite_in_the_wrong_language_is_caught_by_the_detectors_language() -> None:
    spanish = Detection(
        True, 0.9, Strategy.EXPLANATION_REFUSAL, Label3.FULL_REFUSAL,
        (
            PatternEvidence(Pattern.ACKNOWLEDGMENT, "Te entiendo."),
            PatternEvidence(Pattern.BOUNDARY_SETTING, "Soy una IA."),
        ),
        "es",
    )  # fmt: skip
    problems = check(PolicyAction.EMPATHETIC_BOUNDARY, spanish, text="Te entiendo. Soy una IA.")
    assert problems == ("language es, expected en",)


def test_other_actions_reject_any_flat_refusal_except_keep() -> None:
    assert check(PolicyAction.PARTIAL_COMPLIANCE, flat(Pattern.BOUNDARY_SETTING)) == (
        "still a flat refusal (explanation_refusal)",
    )
    assert check(PolicyAction.KEEP, flat(Pattern.DIRECT_REFUSAL)) == ()


def test_empty_and_overlong_rewrites() -> None:
    ok = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE)
    assert "empty rewrite" in check(PolicyAction.REGENERATE, ok, text="  ")
    assert check(PolicyAction.REGENERATE, ok, text="word " * 400)[0].endswith("limit 1200")


@pytest.mark.parametrize(
    "text",
    [
        "Certainly! Here's a revised response that avoids detail: locks have pins.",
        "The original response was too cautious. Locks have pins.",
        "Here is my rewrite: locks have pins.",
    ],
)
def test_a_rewrite_that_talks_about_itself_is_rejected(text: str) -> None:
    ok = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE)
    problems = check(PolicyAction.REGENERATE, ok, text=text)
    assert len(problems) == 1 and problems[0].startswith("talks about the rewrite")


def test_an_answer_about_responses_is_not_mistaken_for_a_leak() -> None:
    ok = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE)
    text = "An immune response is the body's reply to an infection; a new response can take days."
    assert check(PolicyAction.REGENERATE, ok, text=text) == ()
