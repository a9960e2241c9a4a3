"""Split a reply into sentences and note its layout (lists, code, headings).

A regular-expression splitter rather than spaCy's sentencizer: spaCy tokenizes the whole text
first (about 2 ms for a typical reply on one core), and most sentences never need tokens. The
matcher tokenizes only the sentences that might hold a cue.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from importlib import resources

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•·+]|\d{1,3}[.)、]|[a-zA-Z][.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_OTHER_VOICE = re.compile(r"^\s*[—―–>]")
"""Lines in a voice other than the assistant's: a line opening with a dash is dialogue (Russian,
Polish, Spanish, Lithuanian and many other languages mark speech this way; markdown lists use a
hyphen), and a markdown blockquote quotes a template, an example or a source. A character's or a
sample message's "No, I can't" is not the assistant refusing."""
_SPEAKER = re.compile(r"^\s*[*_]{0,2}([^\W\d_][^\W\d_ .'-]{0,24}?)[*_]{0,2}\s*:")
"""A script line's speaker label: "REYES: Open the door." or "**МАМА:** Ні"."""
SCRIPT_LINES = 3
"""A reply with this many lines under upper-case speaker labels, of at least two speakers, is a
script; its labelled lines are the characters' voices. One or two labels ("NOTE:") are not."""
_BOUNDARY = re.compile(
    r"[.!?…]([\"'”’)\]]*\s+)(?![a-z])"  # Latin-style: only before a non-lowercase start
    r"|[。！？؟।۔](\s*)"  # scripts without a space after the full stop
)
"""The group of the branch that matched spans the boundary between two sentences. Matching the
full stop itself rather than looking behind for it lets the search skip other characters."""
_LETTER = re.compile(r"[^\W\d_]")
_MARKUP = re.compile(r"[*_`#>|\s](?:(?<! )|(?=[*_`#>|\s]))[*_`#>|\s]*")
"""Runs of markdown and whitespace, except a lone space (which would be replaced by itself).
Starting with the run's first character, not a lookahead, lets the search skip other ones."""


def _folding() -> dict[int, str | None]:
    """Spelling variants that say the same word, mapped to one form.

    Phrases pass through :func:`normalize` too, so a lexicon lists each word once:
    - curly quotes as straight ones; Turkish İ as I (lower-casing İ gives i and a combining dot);
    - Arabic-script vowel marks and tatweel dropped, hamza-seated alefs as bare alef, and Arabic
      yeh, alef maksura and kaf as the Persian letters (Persian and Urdu text is often typed on
      Arabic keyboards, and vowel marks are optional);
    - Greek without accents or diaeresis (text in capitals carries none);
    - Romanian (and Turkish) s and t with cedilla as with comma below, which older keyboards
      type for the same letters;
    - Chinese characters in their simplified forms (OpenCC's character table), so the lexicon's
      simplified phrases read Traditional Chinese (Taiwan, Hong Kong) too.
    """
    table: dict[str, str | None] = {
        "’": "'", "‘": "'", "´": "'", "`": "'", "“": '"', "”": '"', "İ": "I",
        "أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ي": "ی", "ى": "ی", "ك": "ک",
        "ş": "ș", "Ş": "Ș", "ţ": "ț", "Ţ": "Ț",
    }  # fmt: skip
    table |= dict.fromkeys(map(chr, [*range(0x064B, 0x0660), 0x0670, 0x0640]), None)
    table |= _simplified_chinese()
    for code in [*range(0x0386, 0x03D0), *range(0x1F00, 0x2000)]:
        base = unicodedata.normalize("NFD", chr(code))[0]
        if base != chr(code) and unicodedata.name(base, "").startswith("GREEK"):
            table[chr(code)] = base
    return str.maketrans(table)


def _simplified_chinese() -> dict[str, str]:
    """Traditional character -> its first simplified form."""
    path = resources.files("opencc") / "dictionary" / "TSCharacters.txt"
    pairs = (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines())
    return {trad: simplified.split(" ")[0] for trad, simplified in pairs}


_FOLDED = _folding()
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""The main blocks of Chinese characters. Text to fold is found by them rather than by listing
the four thousand traditional characters: characters beyond U+FFFF in a character class make
every search about a hundred times slower, and the rare ones there come with common ones."""
_IN_HAN = re.compile(f"[{_HAN}]")
_OUTSIDE_HAN = "".join(c for c in map(chr, _FOLDED) if ord(c) <= 0xFFFF and not _IN_HAN.match(c))
_TO_FOLD = re.compile(f"[{re.escape(_OUTSIDE_HAN)}{_HAN}]")

MAX_CHARS = 20_000
"""Replies are analysed up to this length; a refusal never hides beyond it."""


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    """As written, stripped: what evidence shows."""
    normalized: str
    """See :func:`normalize`; empty for a line in another voice than the assistant's (dialogue,
    a blockquote, a script's line)."""
    start: int
    """Character offset in the reply."""


@dataclass(frozen=True, slots=True)
class Layout:
    sentences: tuple[Sentence, ...]
    chars: int
    list_items: int
    code_lines: int
    headings: int


_QUOTED = re.compile(
    r'"[^"]*(?:"|$)|«[^»]*(?:»|$)|»[^«»]*(?:[«»]|$)|„[^“"]*(?:[“"]|$)|「[^」]*(?:」|$)'
    r"|『[^』]*(?:』|$)"
)
"""Quoted speech ("say: 'I'm sorry'") is not the assistant's own voice; cues inside are ignored.
Guillemets open either way: «…» (French, Catalan), »…« (German, Slovenian, Czech), »…»
(Swedish, Finnish)."""
_HEBREW_ABBREVIATION = re.compile('(?<=[\u05d0-\u05ea])"(?=[\u05d0-\u05ea](?![\u05d0-\u05ea]))')
"""A straight double quote before the last letter of a Hebrew word is the abbreviation mark
typed on a keyboard (עו"ד, ער"ן), not a quotation: it is read as the proper mark ״ so the
sentence is not cut. A quote after a one-letter prefix (ה"להסתיר") does open a quotation."""


def normalize(text: str) -> str:
    """What the matcher reads: NFKC, straight quotes, no markdown, no quoted speech."""
    text = unicodedata.normalize("NFKC", text)
    if '"' in text:
        text = _HEBREW_ABBREVIATION.sub("\u05f4", text)
    if _TO_FOLD.search(text):
        text = text.translate(_FOLDED)
    return _MARKUP.sub(" ", _QUOTED.sub(" ", text)).strip()


def segment(text: str) -> Layout:
    """The reply's prose sentences (code blocks excluded) and counts of its structure."""
    text = text[:MAX_CHARS]
    speakers = _script_speakers(text)
    sentences: list[Sentence] = []
    list_items = code_lines = headings = 0
    in_code = False
    offset = 0
    for line in text.splitlines(keepends=True):
        line_start, offset = offset, offset + len(line)
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            code_lines += 1
            continue
        if _LIST_ITEM.match(line):
            list_items += 1
        if _HEADING.match(line):
            headings += 1
        quoted = bool(_OTHER_VOICE.match(line)) or (bool(speakers) and _speaker(line) in speakers)
        position = 0
        for match in _BOUNDARY.finditer(line):
            boundary, position_after = match.span(match.lastindex or 0)
            _add(sentences, line, position, boundary, line_start, quoted)
            position = position_after
        _add(sentences, line, position, len(line), line_start, quoted)
    return Layout(tuple(sentences), len(text), list_items, code_lines, headings)


def _speaker(line: str) -> str | None:
    match = _SPEAKER.match(line)
    if match is None or not match[1].isupper():
        return None
    return match[1]


def _script_speakers(text: str) -> frozenset[str]:
    """The speakers of a script (see :data:`SCRIPT_LINES`), or none."""
    labels = [name for line in text.splitlines() if (name := _speaker(line))]
    if len(labels) < SCRIPT_LINES or len(set(labels)) < 2:
        return frozenset()
    return frozenset(labels)


def _add(
    sentences: list[Sentence], line: str, start: int, end: int, line_start: int, quoted: bool
) -> None:
    raw = line[start:end]
    stripped = raw.strip()
    if not _LETTER.search(stripped):
        return
    lead = len(raw) - len(raw.lstrip())
    normalized = "" if quoted else normalize(stripped)
    sentences.append(Sentence(stripped, normalized, line_start + start + lead))
