"""Name the topic of a request in a phrase that fits "Questions about {topic} ...".

spaCy's blank pipelines have no parser, so noun chunks are not available. English requests are
mostly one of a few question frames ("How do I X?", "What is X?", "Tell me about X"), so rules
that strip the frame and turn the pronouns around give a grammatical phrase ("how to pick a
lock", "how your car alarm works"). Anything else, and every other language, uses the request
category's label (``weapons``, ``las armas``), which the templates are written around.
"""

from __future__ import annotations

import re

MAX_WORDS = 12

_FILLER = re.compile(
    r"^(?:so\s+|ok(?:ay)?\s+|hey\s+|hi\s+|please\s+)+|\s+(?:lol|pls|please)$", re.I
)
_FRAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (
            r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?"
            r"(?:tell|show|teach|explain to)\s+me\s+"
            r"(how|what|why|where|when|which)\b",
            r"\1",
        ),
        (r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:explain|describe)\s+", ""),
        (r"^(?:please\s+)?(?:tell|teach|show)\s+me\s+(?:about\s+)?", ""),
        (r"^(?:please\s+)?(?:explain|describe)\s+", ""),
        (r"^i\s+(?:want|need|would like|'d like)\s+to\s+know\s+", ""),
        (
            r"^how\s+(?:do|can|could|should|would|might)\s+(?:i|you|we|one|someone|people)\s+",
            "how to ",
        ),
        (r"^how\s+to\s+", "how to "),
        (r"^what(?:'s|\s+is|\s+are)\s+the\s+best\s+way\s+to\s+", "the best way to "),
        (r"^what(?:'s|\s+is|\s+are)\s+", ""),
        (r"^is\s+it\s+(possible|legal|safe|ok(?:ay)?)\s+to\s+", r"whether it's \1 to "),
        (r"^(?:where|how)\s+(?:can|do)\s+i\s+(buy|get|find|obtain)\s+", r"\1ing "),
    )
)
_PRONOUNS = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "am": "are",
    "we": "you",
    "our": "your",
    "us": "you",
}
_WORD = re.compile(r"[A-Za-z']+")
_SAFE_CHARS = re.compile(r"^[A-Za-z0-9'’ ,\-]+$")


def english_topic(request: str) -> str | None:
    """A short topic phrase for an English request, or ``None`` when no frame fits cleanly."""
    text = " ".join(request.strip().split())
    first = re.split(r"(?<=[.?!])\s+", text, maxsplit=1)[0]
    phrase = _FILLER.sub("", first.rstrip("?.! "))
    framed = False
    for pattern, replacement in _FRAMES:
        phrase, count = pattern.subn(replacement, phrase, count=1)
        framed = framed or count > 0
    if not framed:
        return None
    phrase = _WORD.sub(lambda m: _PRONOUNS.get(m.group(0).lower(), m.group(0)), phrase)
    phrase = phrase.strip(" ,")
    words = phrase.split()
    if not words or len(words) > MAX_WORDS or not _SAFE_CHARS.match(phrase):
        return None
    return phrase[0].lower() + phrase[1:] if not words[0].isupper() else phrase
