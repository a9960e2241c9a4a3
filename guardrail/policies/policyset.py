"""A validated, merged set of policies, categories and templates: what the pipeline runs on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from guardrail.categories.spec import CategoryGroup, CategorySpec
from guardrail.policies.schema import Policy, PolicyAction, SlotTemplates
from guardrail.types import Strategy


@dataclass(frozen=True)
class PolicySet:
    """Policies in matching order (priority, then file order) and everything compose needs."""

    policies: tuple[Policy, ...]
    categories: Mapping[str, CategorySpec]
    """Merged across files: each has a group, and every file's exemplars and keywords."""
    templates: Mapping[str, Mapping[PolicyAction, SlotTemplates]]
    version: str
    """A digest of the files' contents; changes whenever any file does (for caches)."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Where each policy is defined, as ``file:line``."""

    def group_of(self, category: str) -> CategoryGroup | None:
        spec = self.categories.get(category)
        return spec.group if spec else None

    @property
    def reviews_every_reply(self) -> bool:
        """Whether some policy can match a reply that is not a refusal at all.

        Only then does the pipeline categorise compliant replies; otherwise they pass at once.
        """
        return any(
            not policy.match.strategies or Strategy.FULL_COMPLIANCE in policy.match.strategies
            for policy in self.policies
        )

    def get(self, name: str) -> Policy | None:
        return next((policy for policy in self.policies if policy.name == name), None)
