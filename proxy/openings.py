"""Can this opening start a refusal? The streaming fast path's one question.

In English and the other languages written in Latin, Cyrillic or Greek letters, refusals
announce themselves in their first word ("I'm sorry", "Sorry", "As an AI", "Lo siento", "Leider",
"Это"), while answers mostly open with anything else ("To", "The", "Here", "1."). A stream whose
first word cannot open a refusal is passed on at once; the full reply is still reviewed when it
ends. The lists are deliberately broad: a word listed here only costs a short wait, and a refusal
whose opening is missing here is caught by that final review instead.

Other scripts never take the fast path: verb-final Japanese, Korean or Hindi sentences put the
refusal at their end ("そのご依頼にはお応えできません。"), and Chinese or Thai have no spaces to
find a first word by, so their openings wait for the decision window.
"""

from __future__ import annotations

import re
import unicodedata

WORDS = frozenset(
    {
        # English
        "i", "i'm", "im", "i'd", "i'll", "i've", "sorry", "apologies", "unfortunately",
        "regrettably", "as", "my", "while", "although", "though", "it", "it's", "its", "that",
        "that's", "this", "no", "nope", "however", "please", "we", "hmm", "ah",
        "oh", "well", "thank", "thanks", "requests", "providing", "creating", "ai",
        # Spanish
        "lo", "lamento", "lamentablemente", "desafortunadamente", "disculpa", "disculpe",
        "perdón", "perdona", "siento", "entiendo", "como", "yo", "eso", "esa", "ese", "esto",
        "esta", "este", "prefiero", "soy", "suena", "comprendo",
        # Portuguese
        "desculpe", "desculpa", "infelizmente", "eu", "não", "sinto", "isso", "isto", "essa",
        "esse", "sou", "imagino", "prefiro", "compreendo",
        # Italian
        "mi", "purtroppo", "non", "come", "io", "scusa", "scusami", "spiacente", "capisco",
        "questo", "questa", "quello", "quella", "preferisco", "sono",
        # French
        "je", "j'ai", "désolé", "désolée", "malheureusement", "en", "pardon", "excusez",
        "navré", "navrée", "comme", "ce", "cette", "c'est", "ceci", "cela", "ça", "il",
        "comprends",
        # German, Dutch
        "ich", "es", "leider", "entschuldigung", "entschuldige", "tut", "als", "nein", "das",
        "dabei", "dazu", "darauf", "dafür", "damit", "diese", "dieser", "dies", "so", "auf", "het",
        "helaas", "ik", "spijt", "dat", "dit",
        "nee", "excuses", "jammer", "begrijp", "zoiets", "daar", "daarmee", "hiermee",
        # Polish
        "przepraszam", "wybacz", "niestety", "nie", "jako", "rozumiem", "przykro",
        "obawiam", "ja", "tego", "tym", "takie", "takiej",
        # Turkish, Indonesian, Malay, Vietnamese, Swahili, Javanese
        "üzgünüm", "maalesef", "ben", "bu", "bunu", "buna", "bunda", "böyle", "özür", "kusura",
        "hayır", "yapay", "anlıyorum", "bununla", "maaf", "saya", "sebagai", "sayangnya",
        "mohon", "aku", "tidak", "permintaan", "itu", "ini", "xin", "tôi", "rất", "là",
        "samahani", "mimi", "kwa", "siwezi", "sitaweza", "kama", "pole", "hapana", "naelewa",
        "ninaelewa", "ombi", "hilo", "hili", "hii", "nyuwun", "nuwun", "ngapunten", "sepurane",
        "ngapura", "kula", "mboten", "ora", "niki", "menika", "iki", "kuwi",
        # Russian, Ukrainian, Greek
        "извините", "простите", "к", "я", "как", "нет", "мне", "увы", "это", "этот", "эта",
        "вибачте", "вибач", "пробачте", "перепрошую", "на", "жаль", "нажаль", "ні", "не", "це",
        "як", "розумію", "такий", "така", "таке", "συγγνώμη", "δυστυχώς", "λυπάμαι",
        "λυπούμαι", "ως", "σαν", "δεν", "αυτό", "όχι", "καταλαβαίνω", "ζητώ", "τέτοιο",
        "τέτοια", "είμαι",
    }
)  # fmt: skip
"""First words (casefolded) that can open a refusal."""

_FAST_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
_QUOTES_AND_MARKUP = "*_\"'“”‘’«»„¿¡( \t\r\n"
_WORD = re.compile(r"[\w']+")


def may_open_refusal(text: str) -> bool | None:
    """``True`` if ``text`` may be the opening of a refusal, ``False`` if it cannot be,
    ``None`` if it is too short to tell (its first word may still grow)."""
    opening = text.lstrip(_QUOTES_AND_MARKUP).casefold().replace("’", "'").replace("ʼ", "'")
    if not opening:
        return None
    match = _WORD.match(opening)
    if match is None:  # markup, code or punctuation first: not how refusals open
        return False
    word = match.group()
    if any(c.isalpha() and not unicodedata.name(c, "").startswith(_FAST_SCRIPTS) for c in word):
        return True
    if match.end() < len(opening):  # the first word is complete
        return word in WORDS
    return None if any(candidate.startswith(word) for candidate in WORDS) else False
