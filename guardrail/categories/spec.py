"""How a request category is described in the policy files: exemplars and keyword rules.

Categories live in YAML next to the policies so that users extend them without code: a file may
define a new category or add exemplars and keywords to one defined elsewhere.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator


class CategoryGroup(StrEnum):
    """Coarse families of categories; verification treats harm and regulated advice alike."""

    HARM = "harm"
    REGULATED = "regulated"
    EMOTIONAL = "emotional"
    BENIGN = "benign"


SENSITIVE_GROUPS = frozenset({CategoryGroup.HARM, CategoryGroup.REGULATED})
"""Groups whose rewrites must not add operational detail (the actionability check applies)."""

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"


class CategorySpec(BaseModel):
    """One category as written in a policy file; several files may contribute to the same name."""

    model_config = ConfigDict(extra="forbid")

    group: CategoryGroup | None = None
    """Required once per category; a file that only adds exemplars may leave it out."""
    description: str = ""
    label: dict[str, str] = Field(default_factory=dict)
    """The topic's name per language, used by compose when no topic phrase can be extracted."""
    echo_topic: bool = True
    """Whether compose may name the request's own phrasing; off where repeating it would hurt."""
    exemplars: list[str] = Field(default_factory=list)
    """Requests typical of the category, in any language; matched by embedding similarity."""
    keywords: dict[str, list[str]] = Field(default_factory=dict)
    """Keyword rules per language: ``word``, ``prefix*``, ``a|b``, ``a & b`` and ``a & !b``."""

    @field_validator("exemplars")
    @classmethod
    def _exemplars_not_blank(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("exemplars must not be blank")
        return value

    @field_validator("keywords")
    @classmethod
    def _keywords_not_blank(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for lang, rules in value.items():
            for rule in rules:
                parts = [part.strip() for part in rule.split("&")]
                if any(not part.strip(" *!") for part in parts):
                    raise ValueError(f"keyword rule {rule!r} ({lang}) has an empty part")
                if all(part.startswith("!") for part in parts):
                    raise ValueError(f"keyword rule {rule!r} ({lang}) has only exclusions")
        return value
