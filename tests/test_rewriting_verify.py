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
        "a bare refusal (explanation_refusal), no boundary or warmth",
    )


def test_other_actions_reject_any_flat_refusal_except_keep() -> None:
    assert check(PolicyAction.PARTIAL_COMPLIANCE, flat(Pattern.BOUNDARY_SETTING)) == (
        "still a flat refusal (explanation_refusal)",
    )
    assert check(PolicyAction.KEEP, flat(Pattern.DIRECT_REFUSAL)) == ()


def test_empty_and_overlong_rewrites() -> None:
    ok = Detection(False, 0.1, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE)
    assert "empty rewrite" in check(PolicyAction.REGENERATE, ok, text="  ")
    assert check(PolicyAction.REGENERATE, ok, text="word " * 400)[0].endswith("limit 1200")
