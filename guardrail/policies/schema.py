"""The policy file format, validated with pydantic (unknown fields are errors, not ignored).

A policy file holds any of three sections: ``policies`` (what to do with a refusal),
``categories`` (exemplars and keywords for request categories) and ``templates`` (compose
wording per language and action). Every file in a directory contributes to one policy set.
"""

from __future__ import annotations

import re
import string
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from guardrail.categories.spec import NAME_PATTERN, CategorySpec
from guardrail.types import Strategy


class PolicyAction(StrEnum):
    """What a policy does with a matching reply."""

    PARTIAL_COMPLIANCE = "partial_compliance"
    EMPATHETIC_BOUNDARY = "empathetic_boundary"
    REDIRECT = "redirect"
    REGENERATE = "regenerate"
    KEEP = "keep"
    BLOCK = "block"


class Detail(StrEnum):
    """Kinds of operational detail a rewrite must not add (see ``rewriting.actionability``)."""

    STEP_SEQUENCES = "step_sequences"
    QUANTITIES = "quantities"
    CODE = "code"
    ACQUISITION_SOURCES = "acquisition_sources"


class OnFailure(StrEnum):
    """What happens when every model rewrite fails verification."""

    COMPOSE = "compose"
    ORIGINAL = "original"


class LateRefusal(StrEnum):
    """A streamed reply that refuses only after the pass-through window.

    ``leave``: the policy keeps the reply as it is (the decision names the policy).
    ``append``: a short follow-up is appended to the stream.
    ``count``: nothing is attributed to the policy; only the detection is recorded.
    """

    LEAVE = "leave"
    APPEND = "append"
    COUNT = "count"


FLAT_STRATEGIES = [Strategy.DIRECT_REFUSAL, Strategy.EXPLANATION_REFUSAL, Strategy.REDIRECTION]

SLOTS: dict[PolicyAction, frozenset[str]] = {
    PolicyAction.PARTIAL_COMPLIANCE: frozenset(
        {"acknowledge", "acknowledge_general", "boundary", "resources_intro", "offer"}
    ),
    PolicyAction.REDIRECT: frozenset(
        {"acknowledge", "acknowledge_general", "redirect", "resources_intro", "offer"}
    ),
    PolicyAction.EMPATHETIC_BOUNDARY: frozenset(
        {"validate", "ai_honesty", "offer", "connection", "resources_intro"}
    ),
    PolicyAction.KEEP: frozenset({"acknowledge_general", "boundary", "resources_intro", "offer"}),
    PolicyAction.REGENERATE: frozenset({"acknowledge", "acknowledge_general", "limit", "offer"}),
    PolicyAction.BLOCK: frozenset({"message"}),
}
"""The template slots compose fills for each action; ``slot.category`` variants are allowed."""

TOPIC_SLOTS = frozenset({"acknowledge"})
"""The only slots that may use the ``{topic}`` placeholder."""

SlotTemplates = dict[str, list[str]]


def check_slots(action: PolicyAction, slots: SlotTemplates) -> None:
    """Reject unknown slot names and placeholders other than ``{topic}`` where it is allowed."""
    allowed = SLOTS[action]
    for key, variants in slots.items():
        slot = key.split(".", 1)[0]
        if slot not in allowed:
            raise ValueError(
                f"unknown slot {key!r} for {action.value}; expected one of {sorted(allowed)}"
            )
        if not variants:
            raise ValueError(f"slot {key!r} has no variants")
        for variant in variants:
            fields = {name for _, name, _, _ in string.Formatter().parse(variant) if name}
            permitted = {"topic"} if slot in TOPIC_SLOTS else set()
            if fields - permitted:
                raise ValueError(
                    f"slot {key!r} uses placeholder(s) {sorted(fields - permitted)}; "
                    + ("only {topic} is allowed" if permitted else "no placeholders are allowed")
                )


class Match(BaseModel):
    """When a policy applies. Empty lists match anything."""

    model_config = ConfigDict(extra="forbid")

    categories: list[str] = Field(default_factory=list)
    strategies: list[Strategy] = Field(default_factory=lambda: list(FLAT_STRATEGIES))
    languages: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    """Glob patterns on the request's model name (``gpt-4*``)."""
    client_keys: list[str] = Field(default_factory=list)
    """Client key ids (as the proxy names them), not secrets."""
    min_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The least category score for ``categories`` to count as matched."""


class Resource(BaseModel):
    """A place to turn to, such as a crisis line, shown with the rewrite."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    contact: str = Field(min_length=1)
    region: str = ""


class Policy(BaseModel):
    """One rule: which refusals it matches and what the user gets instead."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    priority: int = 0
    match: Match = Field(default_factory=Match)
    action: PolicyAction
    rewrite_model: str | None = None
    """A litellm model name, ``upstream`` for the request's own model, or none (compose)."""
    instructions: str = ""
    never_include: list[Detail] = Field(default_factory=list)
    tone: str = ""
    max_chars: int = Field(default=1200, ge=80, le=20000)
    max_retries: int = Field(default=1, ge=0, le=5)
    on_failure: OnFailure = OnFailure.COMPOSE
    late_refusal: LateRefusal = LateRefusal.COUNT
    warm: bool = True
    """For ``keep``: replace the refusal with a warmer one (explanation and redirection)."""
    general_info: dict[str, list[str]] = Field(default_factory=dict)
    """General, non-actionable sentences per language that compose adds."""
    resources: dict[str, list[Resource]] = Field(default_factory=dict)
    """Resources per language (``en``, ``es``...), e.g. crisis lines."""
    templates: dict[str, SlotTemplates] = Field(default_factory=dict)
    """Per-language overrides of the shared compose templates for this policy's action."""

    @model_validator(mode="after")
    def _templates_fit_action(self) -> Policy:
        for slots in self.templates.values():
            check_slots(self.action, slots)
        return self


def _checker(action: PolicyAction) -> AfterValidator:
    def check(slots: SlotTemplates) -> SlotTemplates:
        check_slots(action, slots)
        return slots

    return AfterValidator(check)


class ActionTemplates(BaseModel):
    """Compose wording for one language, per action."""

    model_config = ConfigDict(extra="forbid")

    partial_compliance: Annotated[SlotTemplates, _checker(PolicyAction.PARTIAL_COMPLIANCE)] = Field(
        default_factory=dict
    )
    redirect: Annotated[SlotTemplates, _checker(PolicyAction.REDIRECT)] = Field(
        default_factory=dict
    )
    empathetic_boundary: Annotated[SlotTemplates, _checker(PolicyAction.EMPATHETIC_BOUNDARY)] = (
        Field(default_factory=dict)
    )
    keep: Annotated[SlotTemplates, _checker(PolicyAction.KEEP)] = Field(default_factory=dict)
    regenerate: Annotated[SlotTemplates, _checker(PolicyAction.REGENERATE)] = Field(
        default_factory=dict
    )
    block: Annotated[SlotTemplates, _checker(PolicyAction.BLOCK)] = Field(default_factory=dict)

    def for_action(self, action: PolicyAction) -> SlotTemplates:
        slots: SlotTemplates = getattr(self, action.value)
        return slots


class PolicyFile(BaseModel):
    """The top level of one YAML file."""

    model_config = ConfigDict(extra="forbid")

    policies: list[Policy] = Field(default_factory=list)
    categories: dict[str, CategorySpec] = Field(default_factory=dict)
    templates: dict[str, ActionTemplates] = Field(default_factory=dict)
    """Shared compose wording: language -> action -> slot -> variants."""

    @field_validator("categories")
    @classmethod
    def _category_names(cls, value: dict[str, CategorySpec]) -> dict[str, CategorySpec]:
        for name in value:
            if not re.match(NAME_PATTERN, name):
                raise ValueError(f"category name {name!r} must be lower_snake_case")
        return value
