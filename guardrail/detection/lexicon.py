"""Refusal idioms per language, kept as data files and compiled into spaCy token patterns.

Each ``lexicons/<lang>.yaml`` lists, per cue, the phrases assistants use in that language. A small
phrase syntax keeps the files readable while covering the variants real replies use:

- ``{a|b|c}`` one of several alternatives (an alternative may be several words or empty);
- ``[a|b]`` optional, the same as ``{a|b|}``;
- ``*`` a short gap (up to three words, or six characters in a character script), ``**`` a long
  one (eight words or sixteen characters) for languages that put the verb last.

In a ``word`` script (spaces between words) braces must stand between spaces; in a ``char``
script (Chinese, Japanese, Korean) every character is a token, so they may stand anywhere.
Phrases under ``opening`` only count when they open a sentence ("Sure, ..." or "No, ...").
Phrases and replies are folded alike before matching (``sentences.normalize``: case, curly
quotes, Arabic vowel marks and letter variants, Greek accents, cedilla s/t), so a phrase is
written once, the usual way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from guardrail.types import Pattern

LEXICON_DIR = Path(__file__).parent / "lexicons"


class LexiconError(ValueError):
    """A lexicon file is missing, malformed or uses an unknown cue."""


class Script(StrEnum):
    """How text in a language is split into tokens for matching."""

    WORD = "word"
    CHAR = "char"


CHAR_SCRIPT_LETTERS = (
    "\u0e00-\u0e7f\u1100-\u11ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
)
"""Letters of the ``char`` script languages (Thai, Japanese, Chinese, Korean): regular-expression
ranges. Thai, Japanese and Chinese put no spaces between words; Korean spacing varies."""


class Cue(StrEnum):
    """What a phrase signals; several cues may evidence the same response pattern."""

    REFUSAL = "refusal"
    """States that the assistant will not or cannot do what was asked."""
    APOLOGY = "apology"
    SYMPATHY = "sympathy"
    """"Sorry to hear that": an apology for the user's situation, not for refusing."""
    SOFTENER = "softener"
    """"Unfortunately", "I'm afraid": frames what follows as a disappointment."""
    AI_IDENTITY = "ai_identity"
    BOUNDARY = "boundary"
    """What an AI cannot be or feel: a partner, a friend, in love."""
    INABILITY = "inability"
    """The speaker says it cannot or will not, whatever the verb: "я этим не занимаюсь", "no
    puedo", "그건 못 해요". A weaker sign than a refusal phrase, since hedges say it too ("no puedo
    garantizar"). English has none: its refusal phrases list verbs widely, and the generic form
    cost precision on English replies."""
    LIMITATION = "limitation"
    """No access, no real-time data, no personal opinions."""
    EXPLANATION = "explanation"
    """A reason for declining: harm, law, ethics, policy, privacy."""
    OBJECTION = "objection"
    """Pushes back on the request or its premise: "it is not appropriate to"."""
    PREMISE = "premise"
    """There is nothing to give because the request's premise is false: what it asks about is
    fictional, inanimate or does not exist. Annotators count this as answering the question."""
    MORALIZING = "moralizing"
    REDIRECTION = "redirection"
    """Offers something else or changes the subject."""
    REFERRAL = "referral"
    """Points to a professional, a hotline or another resource."""
    ACKNOWLEDGMENT = "acknowledgment"
    EMOTION = "emotion"
    """Names or validates the user's feelings."""
    HEDGE = "hedge"
    """Keeps to generalities: "in general terms", "without specifics"."""
    AFFIRMATION = "affirmation"
    """Opens by agreeing to help: "Sure", "Here are"."""
    NEGATION = "negation"
    """Opens with a bare "No"."""
    IDIOM = "idiom"
    """Says "can't" without declining anything: "I can't recommend it enough", "I can't help
    but smile". Cancels the refusal, inability and objection cues of its sentence."""
    CORRECTION = "correction"
    """Apologises for the assistant's own slip: "sorry for the confusion", "my mistake, the answer
    is 42". Conversation repair, not declining: cancels the apology cue of its sentence."""


CUE_PATTERNS: Mapping[Cue, tuple[Pattern, ...]] = {
    Cue.REFUSAL: (Pattern.DIRECT_REFUSAL,),
    Cue.APOLOGY: (Pattern.APOLOGY,),
    Cue.SYMPATHY: (Pattern.APOLOGY, Pattern.EMOTIONAL_AWARENESS),
    Cue.AI_IDENTITY: (Pattern.BOUNDARY_SETTING,),
    Cue.BOUNDARY: (Pattern.BOUNDARY_SETTING,),
    Cue.EXPLANATION: (Pattern.EXPLANATION,),
    Cue.OBJECTION: (Pattern.EXPLANATION,),
    Cue.PREMISE: (Pattern.EXPLANATION,),
    Cue.REDIRECTION: (Pattern.DEFLECTION,),
    Cue.REFERRAL: (Pattern.DEFLECTION,),
    Cue.ACKNOWLEDGMENT: (Pattern.ACKNOWLEDGMENT,),
    Cue.EMOTION: (Pattern.EMOTIONAL_AWARENESS,),
}
"""The "Beyond No" response patterns each cue is evidence of."""

GAP = "*"
LONG_GAP = "**"
GAP_TOKENS: Mapping[tuple[Script, str], int] = {
    (Script.WORD, GAP): 3,
    (Script.WORD, LONG_GAP): 8,
    (Script.CHAR, GAP): 6,
    (Script.CHAR, LONG_GAP): 16,
}


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The phrases of one language, by cue; ``opening`` phrases must open a sentence."""

    lang: str
    script: Script
    cues: Mapping[Cue, tuple[str, ...]]
    opening: Mapping[Cue, tuple[str, ...]]


def load_lexicons(directory: Path = LEXICON_DIR) -> list[Lexicon]:
    """Every ``*.yaml`` lexicon in ``directory``, validated.

    Read once per directory and process: the detector's matchers and the proxy's streaming
    gate both need the bundled lexicons, and parsing them takes about 0.4 s."""
    return list(_read_lexicons(directory))


@functools.cache
def _read_lexicons(directory: Path) -> tuple[Lexicon, ...]:
    paths = sorted(directory.glob("*.yaml"))
    if not paths:
        raise LexiconError(f"no lexicon files in {directory}")
    return tuple(load_lexicon(path) for path in paths)


def load_lexicon(path: Path) -> Lexicon:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LexiconError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise LexiconError(f"{path}: expected a mapping with lang, script, cues")
    try:
        script = Script(data.get("script", Script.WORD))
    except ValueError as exc:
        raise LexiconError(f"{path}: script must be 'word' or 'char'") from exc
    lang = data.get("lang")
    if not isinstance(lang, str) or not lang:
        raise LexiconError(f"{path}: 'lang' must be a language code")
    lexicon = Lexicon(
        lang=lang,
        script=script,
        cues=_cue_table(path, data.get("cues"), "cues"),
        opening=_cue_table(path, data.get("opening") or {}, "opening"),
    )
    for cue, phrase, _ in iter_phrases(lexicon):
        try:
            compile_phrase(phrase, script, str.split)
        except LexiconError as exc:
            raise LexiconError(f"{path}: {cue}: {phrase!r}: {exc}") from exc
    return lexicon


def _cue_table(path: Path, table: Any, key: str) -> dict[Cue, tuple[str, ...]]:
    if not isinstance(table, dict):
        raise LexiconError(f"{path}: '{key}' must map cue names to lists of phrases")
    result: dict[Cue, tuple[str, ...]] = {}
    for name, phrases in table.items():
        try:
            cue = Cue(name)
        except ValueError as exc:
            known = ", ".join(c.value for c in Cue)
            raise LexiconError(f"{path}: unknown cue {name!r} (known: {known})") from exc
        if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
            raise LexiconError(f"{path}: {key}.{name} must be a list of strings")
        result[cue] = tuple(p.strip() for p in phrases if p.strip())
    return result


def iter_phrases(lexicon: Lexicon) -> Iterator[tuple[Cue, str, bool]]:
    """(cue, phrase, whether it must open the sentence) for every phrase of the lexicon."""
    for table, opening in ((lexicon.cues, False), (lexicon.opening, True)):
        for cue, phrases in table.items():
            for phrase in phrases:
                yield cue, phrase, opening


@dataclass(frozen=True, slots=True)
class Segment:
    """One slot of a compiled phrase: any of its token sequences, a few tokens after the last."""

    alternatives: tuple[tuple[str, ...], ...]
    optional: bool
    gap_before: int
    """How many tokens may separate it from the previous segment (0: adjacent)."""


def compile_phrase(
    phrase: str, script: Script, tokenize: Callable[[str], list[str]]
) -> tuple[Segment, ...]:
    """Turn one phrase into segments of lower-case token sequences.

    ``tokenize`` must split text exactly as the matched sentences will be split.
    """
    segments: list[Segment] = []
    gap = 0
    for item in _parse(phrase, script):
        if item in (GAP, LONG_GAP):
            gap = GAP_TOKENS[script, item]
            continue
        alternatives = [item] if isinstance(item, str) else item
        tokenized = [tuple(tokenize(alt)) for alt in alternatives]
        nonempty = tuple(dict.fromkeys(tokens for tokens in tokenized if tokens))
        if not nonempty:
            raise LexiconError(f"{phrase!r}: a slot holds no tokens")
        segments.append(Segment(nonempty, not all(tokenized), gap))
        gap = 0
    if all(segment.optional for segment in segments):
        raise LexiconError(f"{phrase!r} can match without any required word")
    return tuple(segments)


def _parse(phrase: str, script: Script) -> list[str | list[str]]:
    """Literal chunks, gap markers and lists of alternatives, in order."""
    items: list[str | list[str]] = []
    text = ""
    index = 0
    while index < len(phrase):
        char = phrase[index]
        if char in "{[":
            close = "}" if char == "{" else "]"
            end = phrase.find(close, index)
            if end < 0:
                raise LexiconError(f"unclosed {char!r}")
            body = phrase[index + 1 : end]
            if any(c in body for c in "{}[]*"):
                raise LexiconError("alternatives cannot nest or hold a gap")
            if script is Script.WORD and not _spaced(phrase, index, end):
                raise LexiconError("in a word script, alternatives must stand between spaces")
            alternatives = [alt.strip() for alt in body.split("|")]
            if char == "[":
                alternatives.append("")
            if text.strip():
                items.append(text.strip())
            text = ""
            items.append(alternatives)
            index = end + 1
        elif char in "}]":
            raise LexiconError(f"unopened {char!r}")
        elif char == GAP:
            if text.strip():
                items.append(text.strip())
            text = ""
            long = phrase.startswith(LONG_GAP, index)
            items.append(LONG_GAP if long else GAP)
            index += len(LONG_GAP) if long else 1
        else:
            text += char
            index += 1
    if text.strip():
        items.append(text.strip())
    if not items:
        raise LexiconError("empty phrase")
    return items


def _spaced(phrase: str, start: int, end: int) -> bool:
    before = start == 0 or phrase[start - 1] == " "
    after = end == len(phrase) - 1 or phrase[end + 1] == " "
    return before and after
