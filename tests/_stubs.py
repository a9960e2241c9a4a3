"""A stand-in refusal detector for unit tests of the policy engine and rewriting.

It recognises a few unmistakable refusal sentences, so tests of policies, compose and
verification do not depend on the real detector's model or thresholds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from guardrail.types import Detection, Label3, Message, Pattern, PatternEvidence, Strategy

MARKERS = (
    "i can't",
    "i cannot",
    "i'm sorry",
    "i won't",
    "no puedo",
    "lo siento",
    "je ne peux pas",
    "ich kann nicht",
    "我不能",
    "抱歉",
    "できません",
    "할 수 없",
    "não posso",
)


class StubDetector:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def detect(
        self,
        response: str,
        *,
        prompt: str = "",
        messages: Sequence[Message] = (),
        refusal: str | None = None,
    ) -> Detection:
        self.calls.append(response)
        text = refusal or response
        sentences = [s for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]
        evidence = tuple(
            PatternEvidence(Pattern.DIRECT_REFUSAL, s)
            for s in sentences
            if any(marker in s.lower() for marker in MARKERS)
        )
        if not evidence:
            return Detection(False, 0.02, Strategy.FULL_COMPLIANCE, Label3.FULL_COMPLIANCE)
        flat = len(evidence) == len(sentences) or len(sentences) <= 2
        strategy = Strategy.DIRECT_REFUSAL if flat else Strategy.PARTIAL_COMPLIANCE
        label = Label3.FULL_REFUSAL if flat else Label3.PARTIAL_REFUSAL
        return Detection(True, 0.97, strategy, label, evidence, "en")
