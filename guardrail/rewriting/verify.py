"""Checks a model rewrite must pass before it replaces a reply.

A rewrite model can repeat the refusal, leak the recipe the original withheld, or answer in the
wrong language; each is caught here and named, so the caller can retry or fall back.
"""

from __future__ import annotations

import re
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
WARMTH = frozenset({Pattern.EMOTIONAL_AWARENESS, Pattern.ACKNOWLEDGMENT})
"""An empathetic boundary declines by design (it will not be a partner). It must set the boundary
(say it is an AI, or what it cannot be), and a rewrite the detector reads as a flat refusal must
also engage with the feeling. An echo of the user's dependence ("I understand; shall I answer
him?"), a pleasantry ("Hello there.") or a cold "I'm an AI, I can't." is none."""
SELF_REFERENCE = re.compile(
    r"\b(?:revised|rewritten)\s+(?:response|reply|version|answer)\b"
    r"|\b(?:improved|original)\s+(?:response|reply)\b"
    r"|\bhere(?:'s|’s| is)\s+(?:a|the|my)\s+(?:rewrite|revision)\b",
    re.IGNORECASE,
)
"""A rewrite model talking about its task ("Certainly! Here's a revised response:") instead of
speaking to the user; English, the language such leaks come in whatever the reply's."""
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
    leak = SELF_REFERENCE.search(text)
    if leak:
        problems.append(f"talks about the rewrite instead of to the user ({leak.group()!r})")
    if policy.action is PolicyAction.EMPATHETIC_BOUNDARY:
        shown = {p.pattern for p in detection.patterns}
        if Pattern.BOUNDARY_SETTING not in shown:
            problems.append("no boundary: does not say it is an AI or what it cannot be")
        elif detection.is_flat_refusal and not shown & WARMTH:
            problems.append(f"a bare refusal ({detection.strategy.value}), no warmth")
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
