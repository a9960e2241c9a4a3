"""Keep what was informative in a refusing reply: its sentences minus the refusal itself.

A reply like "I can't help with that. Lock picking is regulated in some places." still carries
a useful sentence. The detector's pattern evidence names the refusal, apology, deflection and
boundary sentences; everything else survives, except, for sensitive requests, any sentence with
operational detail.
"""

from __future__ import annotations

from guardrail.detection.sentences import normalize, segment
from guardrail.rewriting.actionability import assess
from guardrail.types import Detection

MIN_LETTERS = 12
"""Shorter fragments ("Sure.", "Hi!") are not worth carrying over."""


def salvage(reply: str, detection: Detection, *, sensitive: bool) -> list[str]:
    """The reply's sentences that are neither refusal evidence nor, if ``sensitive``, actionable."""
    evidence = [normalize(item.sentence).strip().casefold() for item in detection.patterns]
    kept: list[str] = []
    for sentence in segment(reply).sentences:
        text = sentence.normalized.strip().casefold()
        if any(text in found or found in text for found in evidence if found):
            continue
        if sum(ch.isalpha() for ch in sentence.text) < MIN_LETTERS:
            continue
        if sentence.text.rstrip().endswith(("?", "？")):
            continue
        if sensitive and assess(sentence.text).total:
            continue
        kept.append(sentence.text)
    return kept
