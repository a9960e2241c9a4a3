"""The values that flow through the pipeline: detections, categories and decisions.

Plain frozen dataclasses rather than pydantic models: they are built on the hot path of every
proxied reply, and they never need validating because only the core constructs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

Message = Mapping[str, Any]
"""One OpenAI chat message (``{"role": ..., "content": ...}``)."""


class Strategy(StrEnum):
    """The five response strategies of the "Let Them Down Easy" study."""

    DIRECT_REFUSAL = "direct_refusal"
    EXPLANATION_REFUSAL = "explanation_refusal"
    REDIRECTION = "redirection"
    PARTIAL_COMPLIANCE = "partial_compliance"
    FULL_COMPLIANCE = "full_compliance"


FLAT_REFUSALS = frozenset(
    {Strategy.DIRECT_REFUSAL, Strategy.EXPLANATION_REFUSAL, Strategy.REDIRECTION}
)
"""Strategies that decline without engaging: what policies turn into something better."""


class Label3(StrEnum):
    """XSTest's three-way label: partial means any mix of refusing and complying."""

    FULL_COMPLIANCE = "full_compliance"
    FULL_REFUSAL = "full_refusal"
    PARTIAL_REFUSAL = "partial_refusal"


class Pattern(StrEnum):
    """The response patterns of the "Beyond No" study."""

    DIRECT_REFUSAL = "direct_refusal"
    APOLOGY = "apology"
    EXPLANATION = "explanation"
    DEFLECTION = "deflection"
    ACKNOWLEDGMENT = "acknowledgment"
    BOUNDARY_SETTING = "boundary_setting"
    EMOTIONAL_AWARENESS = "emotional_awareness"


@dataclass(frozen=True, slots=True)
class PatternEvidence:
    """A response pattern and the sentence that shows it."""

    pattern: Pattern
    sentence: str


@dataclass(frozen=True, slots=True)
class Detection:
    """What the detector concluded about one reply."""

    is_refusal: bool
    score: float
    strategy: Strategy
    label3: Label3
    patterns: tuple[PatternEvidence, ...] = ()
    lang: str = "und"
    decided_by: str = "rules"
    """Which layer settled it: ``refusal_field``, ``empty``, ``rules`` or ``head``."""

    @property
    def is_flat_refusal(self) -> bool:
        return self.strategy in FLAT_REFUSALS

    def pattern_names(self) -> list[str]:
        return sorted({evidence.pattern.value for evidence in self.patterns})

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_refusal": self.is_refusal,
            "score": round(self.score, 4),
            "strategy": self.strategy.value,
            "label3": self.label3.value,
            "patterns": [
                {"pattern": e.pattern.value, "sentence": e.sentence} for e in self.patterns
            ],
            "lang": self.lang,
            "decided_by": self.decided_by,
        }


@dataclass(frozen=True, slots=True)
class CategoryScore:
    """One request category and how confident the classifier is in it."""

    name: str
    score: float


class Action(StrEnum):
    """What the pipeline did with a reply; sent to clients as ``x-guardrail-action``."""

    PASS = "pass"
    REWRITTEN = "rewritten"
    KEPT = "kept"
    BLOCKED = "blocked"
    FALLBACK = "fallback"
    """A rewrite was wanted but failed verification; ``on_failure: original`` kept the reply."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a rewrite model spent, added to the reply's own usage."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of reviewing one reply: what to send and why."""

    action: Action
    text: str | None
    """The text to send; ``None`` means the upstream reply goes out unchanged."""
    policy: str | None = None
    reason: str = ""
    before: Detection | None = None
    after: Detection | None = None
    categories: tuple[CategoryScore, ...] = ()
    follow_up: str | None = None
    """For a streamed reply whose refusal shows only after it was passed through: text to append."""
    usage: Usage = field(default_factory=Usage)
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    cache: Mapping[str, str] = field(default_factory=dict)
    """The caches this review consulted and how each answered: ``{"rewrite": "hit"}``,
    ``{"embedding": "miss"}``; empty when none was."""

    @property
    def changed(self) -> bool:
        return self.text is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["action"] = self.action.value
        data["before"] = self.before.to_dict() if self.before else None
        data["after"] = self.after.to_dict() if self.after else None
        data["categories"] = [{"name": c.name, "score": round(c.score, 4)} for c in self.categories]
        return data


def last_user_text(messages: Sequence[Message]) -> str:
    """The text of the latest user turn, which is what a reply answers."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def content_text(content: Any) -> str:
    """Flatten OpenAI message content (a string or a list of parts) into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return str(content)
