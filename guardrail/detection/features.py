"""Language-independent numbers describing a reply's cues and shape, for the trained head.

The same features come out of an English, Korean or Arabic reply, because they count cues and
where they sit (the opening or later, how much content follows the last refusal) rather than
words. That is what lets a head trained mostly on English replies judge other languages.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from guardrail.detection.lexicon import Cue
from guardrail.detection.rules import Analysis, SentenceCues

DECLINING = frozenset(
    {
        Cue.REFUSAL,
        Cue.APOLOGY,
        Cue.SOFTENER,
        Cue.LIMITATION,
        Cue.OBJECTION,
        Cue.EXPLANATION,
        Cue.REFERRAL,
        Cue.REDIRECTION,
        Cue.AI_IDENTITY,
        Cue.BOUNDARY,
    }
)
"""Cues that belong to declining rather than answering."""
REFUSING = frozenset({Cue.REFUSAL, Cue.APOLOGY, Cue.LIMITATION, Cue.OBJECTION, Cue.BOUNDARY})
"""Cues that by themselves say the request is not (fully) met."""

SHAPE_FEATURES = (
    "log_chars",
    "log_sentences",
    "log_list_items",
    "has_code",
    "has_headings",
    "ends_with_question",
    "declining_share",
    "refusing_share",
    "plain_share",
    "first_refusing_position",
    "content_after_refusing",
    "content_before_refusing",
    "refusing_opening_and_short",
    "refusing_opening_and_list",
    "refusing_later_only",
)
FEATURE_NAMES: tuple[str, ...] = (
    *(f"{cue.value}_{where}" for cue in Cue for where in ("opening", "later")),
    *SHAPE_FEATURES,
)

Vector = npt.NDArray[np.float64]


def effective_cues(sentence: SentenceCues) -> frozenset[Cue]:
    """A sentence's cues for scoring: "sorry to hear" is sympathy, not an apology for refusing."""
    if Cue.SYMPATHY in sentence.cues:
        return sentence.cues - {Cue.APOLOGY}
    return sentence.cues


def rule_features(analysis: Analysis) -> Vector:
    """The feature vector, in the order of :data:`FEATURE_NAMES`."""
    layout = analysis.layout
    total = max(len(layout.sentences), 1)
    chars = max(layout.chars, 1)
    opening_cues: set[Cue] = set()
    later_cues: set[Cue] = set()
    refusing: list[SentenceCues] = []
    declining = 0
    for sentence in analysis.sentences:
        cues = effective_cues(sentence)
        (opening_cues if sentence.index < analysis.opening else later_cues).update(cues)
        if cues & REFUSING:
            refusing.append(sentence)
        if cues & DECLINING:
            declining += 1
    values: list[float] = []
    for cue in Cue:
        values.append(float(cue in opening_cues))
        values.append(float(cue in later_cues))
    refusing_opening = bool(opening_cues & REFUSING)
    short = layout.chars < 300
    if refusing:
        first, last = refusing[0].sentence, refusing[-1].sentence
        after = max(chars - (last.start + len(last.text)), 0) / chars
        before = first.start / chars
        position = refusing[0].index / total
    else:
        after = before = 0.0
        position = 1.0
    last_text = layout.sentences[-1].text if layout.sentences else ""
    values.extend(
        [
            math.log1p(layout.chars),
            math.log1p(len(layout.sentences)),
            math.log1p(layout.list_items),
            float(layout.code_lines > 0),
            float(layout.headings > 0),
            float(last_text.endswith(("?", "？"))),
            declining / total,
            len(refusing) / total,
            (total - len(analysis.sentences)) / total,
            position,
            after,
            before,
            float(refusing_opening and short),
            float(refusing_opening and layout.list_items > 0),
            float(bool(refusing) and not refusing_opening),
        ]
    )
    return np.asarray(values, dtype=np.float64)
