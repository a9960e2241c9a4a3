"""Can this opening start a refusal? The streaming fast path's one question.

Refusals announce themselves in their first word ("I'm sorry", "Sorry", "As an AI", "Lo siento",
"抱歉"); answers mostly open with anything else ("To", "The", "Here", "1."). A stream whose first
word cannot open a refusal is passed through at once, so it reaches the client without waiting for
a decision window; the full reply is still reviewed when it ends. The lists are deliberately
broad: a word listed here only costs a short wait, a refusal opening missing here is caught late.
"""

from __future__ import annotations

import re

WORDS = frozenset(
    {
        # English
        "i", "i'm", "im", "i'd", "i'll", "i've", "sorry", "apologies", "unfortunately",
        "regrettably", "as", "my", "while", "although", "though", "it", "it's", "its", "that",
        "that's", "this", "no", "nope", "however", "please", "we", "hmm", "ah", "oh", "well",
        # Spanish, Portuguese, Italian
        "lo", "lamento", "lamentablemente", "desafortunadamente", "disculpa", "disculpe",
        "perdón", "perdona", "siento", "entiendo", "como", "yo", "desculpe", "desculpa",
        "infelizmente", "eu", "não", "sinto", "mi", "purtroppo", "non", "come", "io", "scusa",
        "scusami", "spiacente", "capisco",
        # French
        "je", "j'ai", "désolé", "désolée", "malheureusement", "en", "pardon", "excusez",
        "navré", "navrée", "comme",
        # German, Dutch
        "ich", "es", "leider", "entschuldigung", "tut", "als", "nein", "het", "helaas", "ik",
        "spijt",
        # Russian, Ukrainian
        "извините", "простите", "к", "я", "как", "нет", "мне", "увы", "вибачте", "на",
        # Turkish, Indonesian, Malay, Vietnamese, Swahili, Javanese
        "üzgünüm", "maalesef", "ben", "maaf", "saya", "sebagai", "sayangnya", "mohon", "xin",
        "tôi", "rất", "là", "samahani", "mimi", "kwa", "nyuwun", "ngapunten", "kula", "aku",
        # Arabic, Persian, Hindi, Bengali
        "عذرا", "عذراً", "آسف", "أنا", "للأسف", "بصفتي", "كنموذج", "لا", "متاسفم", "من",
        "متأسفم", "क्षमा", "माफ़", "माफ", "मुझे", "मैं", "खेद", "দুঃখিত", "আমি", "ক্ষমা",
    }
)  # fmt: skip
"""First words (casefolded) that can open a refusal in languages written with spaces."""

PREFIXES = (
    # Chinese
    "抱歉", "对不起", "對不起", "很抱歉", "非常抱歉", "我", "作为", "作為", "不好意思", "很遗憾",
    "遗憾",
    # Japanese
    "申し訳", "すみません", "ごめん", "残念", "私", "わたし", "aiとして", "恐れ入り", "大変申し訳",
    # Korean (particles attach to words, so stems are matched)
    "죄송", "미안", "저는", "제가", "안타깝", "유감", "ai로서", "인공지능",
    # Thai
    "ขอโทษ", "ขออภัย", "ฉัน", "ผม", "เสียใจ", "น่าเสียดาย", "ในฐานะ",
)  # fmt: skip
"""Openings (casefolded) for scripts that do not separate words with spaces."""

_QUOTES_AND_MARKUP = "*_\"'“”‘’«»„¿¡( \t\r\n"
_WORD = re.compile(r"[\w']+")


def may_open_refusal(text: str) -> bool | None:
    """``True`` if ``text`` may be the opening of a refusal, ``False`` if it cannot be,
    ``None`` if it is too short to tell (its first word may still grow)."""
    opening = text.lstrip(_QUOTES_AND_MARKUP).casefold().replace("’", "'").replace("ʼ", "'")
    if not opening:
        return None
    if any(opening.startswith(prefix) for prefix in PREFIXES):
        return True
    undecided = any(prefix.startswith(opening) for prefix in PREFIXES)
    match = _WORD.match(opening)
    if match is not None and match.end() < len(opening):  # the first word is complete
        if match.group() in WORDS:
            return True
    elif match is not None:  # the first word may still grow
        word = match.group()
        undecided = undecided or any(candidate.startswith(word) for candidate in WORDS)
    return None if undecided else False
