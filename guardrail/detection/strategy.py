"""Response patterns with their evidence, and the response strategy they add up to.

The label (full compliance, partial or full refusal) comes from the head; the cues say how a
refusal declines: with a pointer elsewhere (redirection), with a reason (explanation), or bare.
"""

from __future__ import annotations

from guardrail.detection.features import effective_cues
from guardrail.detection.lexicon import CUE_PATTERNS, Cue
from guardrail.detection.rules import Analysis
from guardrail.types import Label3, Pattern, PatternEvidence, Strategy

REDIRECTING = frozenset({Cue.REDIRECTION, Cue.REFERRAL})
EXPLAINING = frozenset({Cue.EXPLANATION, Cue.OBJECTION, Cue.PREMISE, Cue.LIMITATION, Cue.BOUNDARY})


def evidence(analysis: Analysis) -> tuple[PatternEvidence, ...]:
    """Each pattern the reply shows, with the first sentence that shows it, in pattern order."""
    found: dict[Pattern, str] = {}
    for sentence in analysis.sentences:
        for cue in effective_cues(sentence):
            for pattern in CUE_PATTERNS.get(cue, ()):
                found.setdefault(pattern, sentence.sentence.text)
    return tuple(PatternEvidence(p, found[p]) for p in Pattern if p in found)


def choose_strategy(label: Label3, analysis: Analysis) -> Strategy:
    cues: set[Cue] = set()
    for sentence in analysis.sentences:
        cues.update(effective_cues(sentence))
    if label is Label3.PARTIAL_REFUSAL:
        return Strategy.PARTIAL_COMPLIANCE
    if label is Label3.FULL_COMPLIANCE:
        return Strategy.PARTIAL_COMPLIANCE if Cue.HEDGE in cues else Strategy.FULL_COMPLIANCE
    if cues & REDIRECTING:
        return Strategy.REDIRECTION
    if cues & EXPLAINING:
        return Strategy.EXPLANATION_REFUSAL
    return Strategy.DIRECT_REFUSAL
