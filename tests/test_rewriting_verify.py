"""Verification of model rewrites, action by action."""

from __future__ import annotations

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
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, flat(Pattern.BOUNDARY_SETTING)) == ()
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, flat(Pattern.DIRECT_REFUSAL)) == (
        "no boundary or warmth (explanation_refusal)",
    )


def test_an_empathetic_boundary_needs_warmth_even_when_it_is_no_refusal() -> None:
    pleasantry = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE, (), "en")
    assert check(PolicyAction.EMPATHETIC_BOUNDARY, pleasantry, text="Hello there.") == (
        "no boundary or warmth (full_compliance)",
    )


def test_a_short_rewrite_in_the_wrong_language_is_caught_by_the_detectors_language() -> None:
    spanish = Detection(
        True, 0.9, Strategy.EXPLANATION_REFUSAL, Label3.FULL_REFUSAL,
        (PatternEvidence(Pattern.ACKNOWLEDGMENT, "Te entiendo."),), "es",
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
