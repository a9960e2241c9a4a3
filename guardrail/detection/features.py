"""Language-independent numbers describing a reply's cues and shape, for the trained head.

The same features come out of an English, Korean or Arabic reply, because they count cues and
where they sit (the opening or later, how much content follows the last refusal) rather than
words. That is what lets a head trained mostly on English replies judge other languages. Sizes
are bucketed rather than scaled so that a linear head cannot extrapolate from the long replies
of one model to the terse ones of another.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from guardrail.detection.lexicon import CHAR_SCRIPT_LETTERS, Cue
from guardrail.detection.rules import Analysis, SentenceCues

DECLINING = frozenset(
    {
        Cue.REFUSAL,
        Cue.INABILITY,
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
CANCELS: dict[Cue, frozenset[Cue]] = {
    Cue.SYMPATHY: frozenset({Cue.APOLOGY}),
    Cue.IDIOM: frozenset({Cue.REFUSAL, Cue.INABILITY, Cue.OBJECTION}),
    Cue.CORRECTION: frozenset({Cue.APOLOGY}),
}
"""Cues that say another cue of the same sentence is not what it seems: "sorry to hear" is
sympathy, not an apology for refusing; "I can't recommend it enough" refuses nothing; "sorry for
the confusion" repairs a slip."""
COURTESY = frozenset({Cue.SYMPATHY, Cue.CORRECTION})
"""Cues of a sentence that is polite before anything else: condolence, or owning a slip."""
MARKERS = frozenset({Cue.IDIOM, Cue.CORRECTION})
"""Cues that only cancel others and count for nothing themselves: replies carrying an idiom or a
correction are too rare in the training data for the head to learn a weight of its own for them."""
SCORED_CUES = tuple(cue for cue in Cue if cue not in MARKERS)

SHAPE_FEATURES = (
    "chars_under_150",
    "chars_under_400",
    "chars_under_1000",
    "one_sentence",
    "two_or_three_sentences",
    "has_list",
    "long_list",
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
PROMPT_FEATURES = ("prompt_overlap_opening", "prompt_overlap_reply")
"""How much of the request the reply takes up: answers repeat its terms, refusals rarely do."""
FEATURE_NAMES: tuple[str, ...] = (
    *(f"{cue.value}_{where}" for cue in SCORED_CUES for where in ("opening", "later")),
    *SHAPE_FEATURES,
    *PROMPT_FEATURES,
)

Vector = npt.NDArray[np.float64]

_WORD = re.compile(f"[^\\W\\d_{CHAR_SCRIPT_LETTERS}]{{4,}}")
_CHAR_RUN = re.compile(f"[{CHAR_SCRIPT_LETTERS}]{{2,}}")
_SPACES = re.compile(r"\s{2,}")


def effective_cues(sentence: SentenceCues) -> frozenset[Cue]:
    """A sentence's cues once the cancelling ones (:data:`CANCELS`) have removed theirs and the
    markers have been dropped."""
    cues = sentence.cues
    for cue, cancelled in CANCELS.items():
        if cue in cues:
            cues = cues - cancelled
    return cues - MARKERS


def embedding_text(analysis: Analysis, prompt: str = "") -> str:
    """What the embedding model reads: the reply's prose, code left out, the request's words too.

    The encoder keeps only the first tokens, so this is the opening and what follows it: whether
    a refusal is followed by an answer or by more refusing. Two cases change that:
    - opening courtesies ("I'm so sorry for your loss.", "Sorry for the confusion.") are left
      out: their cues are features already, and read by the model they look like the opening of
      a refusal, whether an answer or a refusal follows;
    - when the first refusing sentence comes later (an answer, then "I can't give you his
      address"), the text goes on from the opening straight to that sentence: what the reply
      withholds is seldom within the first tokens of a long answer.

    The request's own terms (:func:`content_terms`) are dropped so that the embedding says how the
    reply is phrased rather than what it is about. With them, the head learnt the topics of the
    training requests: it judged other models' replies to XSTest's prompts well and replies to new
    requests worse (figures in the README, Detection)."""
    sentences = analysis.layout.sentences
    cued = {s.index: s for s in analysis.sentences}
    start = 0
    while start < len(sentences) - 1 and _courtesy(cued.get(start)):
        start += 1
    end = max(analysis.opening, start + 1)
    first = next((s.index for s in analysis.sentences if effective_cues(s) & REFUSING), None)
    if first is not None and first > end:
        sentences = (*sentences[start:end], *sentences[first:])
    else:
        sentences = sentences[start:]
    text = " ".join(s.text for s in sentences)
    return _without_terms(text, content_terms(prompt)) or "."


def _without_terms(text: str, terms: set[str]) -> str:
    """``text`` less its words (and character pairs, in the ``char`` scripts) found in ``terms``."""
    if not terms:
        return text

    def word(match: re.Match[str]) -> str:
        return "" if match.group(0).lower() in terms else match.group(0)

    def run(match: re.Match[str]) -> str:
        chars, kept, i = match.group(0), [], 0
        while i < len(chars):
            if chars[i : i + 2] in terms:
                i += 2
            else:
                kept.append(chars[i])
                i += 1
        return "".join(kept)

    text = _CHAR_RUN.sub(run, _WORD.sub(word, text))
    return _SPACES.sub(" ", text).strip()


def _courtesy(sentence: SentenceCues | None) -> bool:
    """Sympathy or a correction, and nothing declining."""
    return (
        sentence is not None
        and bool(sentence.cues & COURTESY)
        and not effective_cues(sentence) & DECLINING
    )


def reply_features(analysis: Analysis, prompt: str) -> Vector:
    """The feature vector, in the order of :data:`FEATURE_NAMES`."""
    layout = analysis.layout
    total = max(len(layout.sentences), 1)
    chars = max(layout.chars, 1)
    opening_cues: set[Cue] = set()
    later_cues: set[Cue] = set()
    refusing: list[SentenceCues] = []
    declining = cued = 0
    for sentence in analysis.sentences:
        cues = effective_cues(sentence)
        cued += bool(cues)
        (opening_cues if sentence.index < analysis.opening else later_cues).update(cues)
        if cues & REFUSING:
            refusing.append(sentence)
        if cues & DECLINING:
            declining += 1
    values: list[float] = []
    for cue in SCORED_CUES:
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
            float(layout.chars < 150),
            float(layout.chars < 400),
            float(layout.chars < 1000),
            float(len(layout.sentences) <= 1),
            float(2 <= len(layout.sentences) <= 3),
            float(layout.list_items > 0),
            float(layout.list_items >= 4),
            float(layout.code_lines > 0),
            float(layout.headings > 0),
            float(last_text.endswith(("?", "？"))),
            declining / total,
            len(refusing) / total,
            (total - cued) / total,
            position,
            after,
            before,
            float(refusing_opening and short),
            float(refusing_opening and layout.list_items > 0),
            float(bool(refusing) and not refusing_opening),
        ]
    )
    terms = content_terms(prompt)
    if terms:
        opening = " ".join(s.text for s in layout.sentences[: analysis.opening])
        reply = " ".join(s.text for s in layout.sentences)
        values.append(len(terms & content_terms(opening)) / len(terms))
        values.append(len(terms & content_terms(reply)) / len(terms))
    else:
        values.extend([0.0, 0.0])
    return np.asarray(values, dtype=np.float64)


def content_terms(text: str) -> set[str]:
    """Words of four letters or more, and character pairs in the ``char`` scripts (Thai, CJK)."""
    terms = {word.lower() for word in _WORD.findall(text)}
    for run in _CHAR_RUN.findall(text):
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms
