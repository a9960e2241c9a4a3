"""Choose the policy for a reply: the highest-priority policy whose every condition holds.

Every policy is checked, not just up to the winner, so ``guardrail explain`` can say why each
one did or did not apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from guardrail.policies.policyset import PolicySet
from guardrail.policies.schema import Policy
from guardrail.types import CategoryScore, Strategy


@dataclass(frozen=True, slots=True)
class MatchContext:
    """The facts about one request and reply that policies match on."""

    categories: Sequence[CategoryScore]
    strategy: Strategy
    lang: str = "und"
    model: str | None = None
    client_key: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyCheck:
    """Whether one policy matched, and the condition-by-condition reasons."""

    policy: str
    priority: int
    matched: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Selection:
    policy: Policy | None
    checks: tuple[PolicyCheck, ...]

    @property
    def reason(self) -> str:
        """One line for logs and ``Decision.reason``."""
        for check in self.checks:
            if check.matched:
                return f"policy {check.policy} (priority {check.priority}): " + "; ".join(
                    check.reasons
                )
        return "no policy matched"


def select_policy(policy_set: PolicySet, context: MatchContext) -> Selection:
    checks = tuple(_check(policy, context) for policy in policy_set.policies)
    winner = next(
        (
            policy
            for policy, check in zip(policy_set.policies, checks, strict=True)
            if check.matched
        ),
        None,
    )
    return Selection(winner, checks)


def _check(policy: Policy, context: MatchContext) -> PolicyCheck:
    reasons: list[str] = []
    matched = True
    for condition in (_categories, _strategy, _language, _model, _client_key):
        ok, reason = condition(policy, context)
        if reason:
            reasons.append(reason)
        if not ok:
            matched = False
            break
    return PolicyCheck(policy.name, policy.priority, matched, tuple(reasons))


Outcome = tuple[bool, str]


def _categories(policy: Policy, context: MatchContext) -> Outcome:
    """The request is in one of the listed categories with the least confidence asked for.

    Scores of the listed categories add up (capped at 1): a request split between two of a
    policy's close categories (love and friendship) is still clearly one of them.
    """
    wanted = policy.match.categories
    floor = policy.match.min_confidence
    if not wanted:
        return True, ""
    hits = [c for c in context.categories if c.name in wanted]
    total = min(1.0, sum(c.score for c in hits))
    if hits and total >= floor:
        names = "+".join(c.name for c in sorted(hits, key=lambda c: -c.score)[:3])
        return True, f"category {names} {total:.2f} >= {floor:.2f}"
    top = max(context.categories, key=lambda c: c.score, default=None)
    seen = f" (top: {top.name} {top.score:.2f})" if top else ""
    return False, f"no category in {', '.join(wanted)} reaches {floor:.2f}{seen}"


def _strategy(policy: Policy, context: MatchContext) -> Outcome:
    wanted = policy.match.strategies
    if not wanted or context.strategy in wanted:
        return True, f"strategy {context.strategy.value}"
    return False, f"strategy {context.strategy.value} not in {', '.join(s.value for s in wanted)}"


def _language(policy: Policy, context: MatchContext) -> Outcome:
    wanted = policy.match.languages
    base = context.lang.split("-")[0].lower()
    if not wanted:
        return True, ""
    if base in {lang.split("-")[0].lower() for lang in wanted}:
        return True, f"language {base}"
    return False, f"language {base} not in {', '.join(wanted)}"


def _model(policy: Policy, context: MatchContext) -> Outcome:
    patterns = policy.match.models
    if not patterns:
        return True, ""
    model = (context.model or "").lower()
    for pattern in patterns:
        if fnmatchcase(model, pattern.lower()):
            return True, f"model {context.model} matches {pattern!r}"
    return False, f"model {context.model or '(none)'} matches none of {patterns}"


def _client_key(policy: Policy, context: MatchContext) -> Outcome:
    keys = policy.match.client_keys
    if not keys:
        return True, ""
    if context.client_key in keys:
        return True, f"client key {context.client_key}"
    return False, f"client key {context.client_key or '(none)'} not listed"
