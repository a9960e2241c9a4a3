"""Checks a model rewrite must pass before it replaces a reply.

A rewrite model can repeat the refusal, leak the recipe the original withheld, or answer in the
wrong language; each is caught here and named, so the caller can retry or fall back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from guardrail.policies.schema import Detail, Policy, PolicyAction
from guardrail.rewriting.actionability import Actionability, assess
from guardrail.rewriting.language import UNDETERMINED, detect_language
from guardrail.types import Detection, Message, Pattern

LANGUAGE_CHECK_MIN_CHARS = 40
"""Shorter texts are too short for the character-statistics identifier; the detector's language,
which also counts the lexicon cues it matched, stands in for it."""
WARMTH = frozenset({Pattern.BOUNDARY_SETTING, Pattern.EMOTIONAL_AWARENESS, Pattern.ACKNOWLEDGMENT})
"""An empathetic boundary declines by design (it will not be a partner); it passes only when the
detector sees it set a boundary or engage with the feeling. Neither a bare refusal nor an
unrelated pleasantry ("Hello there.") is one."""
LENGTH_TOLERANCE = 1.25
"""Models overshoot a character budget a little; a rewrite well past it is rejected."""


class RefusalDetector(Protocol):
    """What the pipeline needs from the detector."""

    def detect(
        self,
        response: str,
        *,
        prompt: str = "",
        messages: Sequence[Message] = (),
        refusal: str | None = None,
    ) -> Detection: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    problems: tuple[str, ...]
    detection: Detection

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(
    text: str,
    *,
    policy: Policy,
    detector: RefusalDetector,
    request: str,
    lang: str,
    original: Actionability,
    sensitive: bool,
) -> Verdict:
    """Every reason ``text`` may not replace the original reply (none means it may)."""
    detection = detector.detect(text, prompt=request)
    problems: list[str] = []
    if not text.strip():
        problems.append("empty rewrite")
    if len(text) > policy.max_chars * LENGTH_TOLERANCE:
        problems.append(f"{len(text)} characters, limit {policy.max_chars}")
    if policy.action is PolicyAction.EMPATHETIC_BOUNDARY:
        if not {p.pattern for p in detection.patterns} & WARMTH:
            problems.append(f"no boundary or warmth ({detection.strategy.value})")
    elif policy.action is not PolicyAction.KEEP and detection.is_flat_refusal:
        problems.append(f"still a flat refusal ({detection.strategy.value})")
    if sensitive:
        kinds = policy.never_include or list(Detail)
        added = assess(text).exceeds(original, kinds)
        if added:
            problems.append("adds operational detail: " + ", ".join(kind.value for kind in added))
    if lang != UNDETERMINED and text.strip():
        long_enough = len(text) >= LANGUAGE_CHECK_MIN_CHARS
        found = detect_language(text) if long_enough else detection.lang
        if found not in (lang, UNDETERMINED):
            problems.append(f"language {found}, expected {lang}")
    return Verdict(tuple(problems), detection)
