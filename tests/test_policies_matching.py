"""Policy matching: highest priority wins among the policies whose every condition holds."""

from __future__ import annotations

from guardrail.categories import CategorySpec
from guardrail.categories.spec import CategoryGroup
from guardrail.policies import Match, MatchContext, Policy, PolicyAction, PolicySet, select_policy
from guardrail.types import CategoryScore, Strategy


def policy_set(*policies: Policy) -> PolicySet:
    ordered = sorted(policies, key=lambda p: -p.priority)
    specs = {name: CategorySpec(group=CategoryGroup.HARM) for name in ("weapons", "violence")}
    return PolicySet(tuple(ordered), specs, {}, version="test")


def context(**overrides: object) -> MatchContext:
    values: dict[str, object] = {
        "categories": (CategoryScore("weapons", 0.8), CategoryScore("violence", 0.3)),
        "strategy": Strategy.DIRECT_REFUSAL,
        "lang": "en",
        "model": "gpt-4o-mini",
        "client_key": "team-a",
    }
    values.update(overrides)
    return MatchContext(**values)  # type: ignore[arg-type]


def make(name: str, priority: int, **match: object) -> Policy:
    return Policy(
        name=name,
        priority=priority,
        action=PolicyAction.PARTIAL_COMPLIANCE,
        match=Match(**match),  # type: ignore[arg-type]
    )


def test_highest_priority_matching_policy_wins() -> None:
    chosen = select_policy(
        policy_set(make("general", 1), make("weapons", 5, categories=["weapons"])), context()
    )
    assert chosen.policy is not None and chosen.policy.name == "weapons"
    assert [c.matched for c in chosen.checks] == [True, True]
    assert "category weapons 0.80 >= 0.00" in chosen.reason


def test_min_confidence_applies_to_the_named_categories() -> None:
    strict = make("violence", 9, categories=["violence"], min_confidence=0.5)
    chosen = select_policy(policy_set(strict, make("fallback", 0)), context())
    assert chosen.policy is not None and chosen.policy.name == "fallback"
    check = chosen.checks[0]
    assert not check.matched
    assert check.reasons == ("no category in violence reaches 0.50 (top: weapons 0.80)",)


def test_strategies_default_to_flat_refusals() -> None:
    only = policy_set(make("flat", 1))
    assert select_policy(only, context()).policy is not None
    assert select_policy(only, context(strategy=Strategy.PARTIAL_COMPLIANCE)).policy is None
    anything = policy_set(make("any", 1, strategies=[]))
    assert select_policy(anything, context(strategy=Strategy.FULL_COMPLIANCE)).policy is not None


def test_language_model_glob_and_client_key_conditions() -> None:
    scoped = make("scoped", 5, languages=["es", "en"], models=["gpt-4o*"], client_keys=["team-a"])
    rules = policy_set(scoped)
    assert select_policy(rules, context()).policy is scoped
    assert select_policy(rules, context(lang="en-GB")).policy is scoped
    assert select_policy(rules, context(lang="de")).policy is None
    assert select_policy(rules, context(model="claude-3")).policy is None
    assert select_policy(rules, context(model=None)).policy is None
    assert select_policy(rules, context(client_key="team-b")).policy is None
    assert select_policy(rules, context(client_key=None)).checks[0].reasons[-1] == (
        "client key (none) not listed"
    )


def test_no_match_says_so() -> None:
    chosen = select_policy(
        policy_set(make("violence", 1, categories=["violence"], min_confidence=0.9)), context()
    )
    assert chosen.policy is None
    assert chosen.reason == "no policy matched"


def test_scores_of_listed_categories_add_up() -> None:
    split = context(
        categories=(
            CategoryScore("love_romance", 0.3),
            CategoryScore("attachment_friendship", 0.25),
            CategoryScore("weapons", 0.05),
        )
    )
    emotional = make(
        "emotional", 5, categories=["love_romance", "attachment_friendship"], min_confidence=0.5
    )
    chosen = select_policy(policy_set(emotional), split)
    assert chosen.policy is emotional
    assert chosen.checks[0].reasons[0] == (
        "category love_romance+attachment_friendship 0.55 >= 0.50"
    )
