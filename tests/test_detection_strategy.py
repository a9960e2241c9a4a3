"""Which strategy a refusal's cues add up to, given the head's label."""

from __future__ import annotations

import pytest

from guardrail.detection.rules import RuleMatcher
from guardrail.detection.strategy import choose_strategy, evidence
from guardrail.types import Label3, Pattern, Strategy


@pytest.fixture(scope="module")
def matcher() -> RuleMatcher:
    return RuleMatcher()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("I can't help with that.", Strategy.DIRECT_REFUSAL),
        ("I can't help with that because it would be illegal.", Strategy.EXPLANATION_REFUSAL),
        (
            "I can't provide Totoro's birth certificate. Totoro is a fictional character.",
            Strategy.EXPLANATION_REFUSAL,
        ),
        (
            "I can't help with that. Instead, you could talk to a counselor.",
            Strategy.REDIRECTION,
        ),
    ],
)
def test_a_full_refusal_s_strategy_follows_its_cues(
    matcher: RuleMatcher, reply: str, expected: Strategy
) -> None:
    assert choose_strategy(Label3.FULL_REFUSAL, matcher.analyse(reply)) is expected


def test_the_label_decides_partial_and_full_compliance(matcher: RuleMatcher) -> None:
    hedged = matcher.analyse("In general terms, locks use pins that a key lifts.")
    plain = matcher.analyse("Locks use pins that a key lifts.")
    assert choose_strategy(Label3.PARTIAL_REFUSAL, plain) is Strategy.PARTIAL_COMPLIANCE
    assert choose_strategy(Label3.FULL_COMPLIANCE, hedged) is Strategy.PARTIAL_COMPLIANCE
    assert choose_strategy(Label3.FULL_COMPLIANCE, plain) is Strategy.FULL_COMPLIANCE


def test_an_idiom_shows_no_direct_refusal_pattern(matcher: RuleMatcher) -> None:
    found = evidence(matcher.analyse("I can't recommend this book enough."))
    assert Pattern.DIRECT_REFUSAL not in {item.pattern for item in found}
    refusal = evidence(matcher.analyse("I can't help with that."))
    assert Pattern.DIRECT_REFUSAL in {item.pattern for item in refusal}
