"""Can this opening start a refusal? The streaming fast path's one question.

In English and the other languages written in Latin, Cyrillic or Greek letters, refusals
announce themselves in their first word ("I'm sorry", "Sorry", "As an AI", "Lo siento", "Leider",
"Это"), while answers mostly open with anything else ("To", "The", "Here", "1."). A stream whose
first word cannot open a refusal is passed on at once; the full reply is still reviewed when it
ends. The lists are deliberately broad: a word listed here only costs a short wait, and a refusal
whose opening is missing here is caught by that final review instead. Besides the hand-kept list,
the first word of every declining phrase in the detector's lexicons for other languages counts,
so a language gains the fast path's protection when its lexicon is added.

Other scripts never take the fast path: verb-final Japanese, Korean or Hindi sentences put the
refusal at their end ("そのご依頼にはお応えできません。"), and Chinese or Thai have no spaces to
find a first word by, so their openings wait for the decision window.
"""

from __future__ import annotations

import re
import unicodedata

from spacy.lang.en.stop_words import STOP_WORDS as ENGLISH_STOP_WORDS

from guardrail.detection.lexicon import Cue, Script, compile_phrase, iter_phrases, load_lexicons

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
        # Romanian, Czech, Hungarian
        "îmi", "din", "nu", "ca", "ne", "înțeleg", "scuze", "regret", "aceasta", "acest", "asta",
        "sunt", "omlouvám", "bohužel", "nemohu", "nemůžu", "s",
        "chápu", "rozumím", "promiňte", "takové", "tento", "tuto", "sajnálom", "sajnos",
        "elnézést", "bocs", "bocsánat", "nem", "ezt", "ebben", "erre", "ez", "mint", "értem",
        "megértem", "ilyen", "ilyesmiben", "én",
        # Swedish, Danish, Norwegian, Finnish
        "tyvärr", "jag", "ursäkta", "förlåt", "nej", "nei", "som", "det", "detta", "sådant",
        "beklagar", "desværre", "dessverre", "beklager", "undskyld", "jeg", "dette", "sådan",
        "sånn", "forstår", "valitettavasti", "pahoittelen", "anteeksi", "ei", "minä", "mä",
        "tekoälynä", "ymmärrän", "tätä", "tällaista", "tähän", "sori", "ikävä",
        # Tagalog
        "paumanhin", "pasensya", "pasensiya", "hindi", "bilang", "naiintindihan", "ako", "ito",
        "iyan", "ganyang", "ganitong", "po",
        # Russian, Ukrainian, Bulgarian, Greek
        "извините", "простите", "к", "я", "как", "нет", "мне", "увы", "это", "этот", "эта",
        "вибачте", "вибач", "пробачте", "перепрошую", "на", "жаль", "нажаль", "ні", "не", "це",
        "як", "розумію", "такий", "така", "таке", "συγγνώμη", "δυστυχώς", "λυπάμαι",
        "λυπούμαι", "ως", "σαν", "δεν", "αυτό", "όχι", "καταλαβαίνω", "ζητώ", "τέτοιο",
        "τέτοια", "είμαι", "съжалявам", "за", "извинете", "като", "аз", "разбирам",
        "това", "такава", "такъв", "с",
    }
)  # fmt: skip
"""First words (casefolded) that can open a refusal, besides the lexicons' (:data:`FIRST_WORDS`)."""

_WORD = re.compile(r"[\w']+")
_OPENING_CUES = frozenset(
    {Cue.REFUSAL, Cue.APOLOGY, Cue.SOFTENER, Cue.AI_IDENTITY, Cue.LIMITATION, Cue.NEGATION}
)


def lexicon_first_words() -> frozenset[str]:
    """First words of the detector's declining phrases in every language written with spaces
    (except English, whose list above is kept short so that answers pass at once), without the
    common English words that open answers ("to", "a", "on")."""
    words: set[str] = set()
    for lexicon in load_lexicons():
        if lexicon.script is not Script.WORD or lexicon.lang == "en":
            continue
        for cue, phrase, _ in iter_phrases(lexicon):
            if cue not in _OPENING_CUES:
                continue
            for segment in compile_phrase(phrase, Script.WORD, str.split):
                words.update(tokens[0].casefold() for tokens in segment.alternatives)
                if not segment.optional:
                    break
    return frozenset(w for w in words if _WORD.fullmatch(w) and w not in ENGLISH_STOP_WORDS)


def _prefixes(words: frozenset[str]) -> frozenset[str]:
    return frozenset(word[:end] for word in words for end in range(1, len(word) + 1))


_LEXICON_WORDS = lexicon_first_words()
FIRST_WORDS = WORDS | _LEXICON_WORDS
_PREFIXES = _prefixes(WORDS) | (_prefixes(_LEXICON_WORDS) - ENGLISH_STOP_WORDS)
"""Beginnings of first words: a shorter opening may still grow into one. An English function
word is not taken for the beginning of a lexicon's word ("to" of Czech "tohle"): a seventh of
English answers open with "To", and they would wait for the next chunk."""

_FAST_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
_QUOTES_AND_MARKUP = "*_\"'“”‘’«»„¿¡( \t\r\n"


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
        return word in FIRST_WORDS
    return None if word in _PREFIXES else False
