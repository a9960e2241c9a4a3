"""Multilingual cue matching with spaCy: which sentences of a reply refuse, apologise, redirect.

Every bundled lexicon is compiled into one spaCy ``Matcher`` per script: a word-level one (the
language-neutral ``xx`` tokenizer) for languages written with spaces, and a character-level one
(the ``zh`` character segmenter) for Chinese, Japanese and Korean. Running all languages of a
script at once keeps matching independent of language identification, which is unreliable on
short replies; a sentence is tokenized only if it contains a word some phrase requires.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import spacy
from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc

from guardrail.detection.lexicon import (
    Cue,
    Lexicon,
    Script,
    Segment,
    compile_phrase,
    iter_phrases,
    load_lexicons,
)
from guardrail.detection.sentences import Layout, Sentence, normalize, segment

_CJK = "\u1100-\u11ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CHAR_SCRIPT = re.compile(f"[{_CJK}]")
_WORD_SCRIPT = re.compile(f"[^\\W\\d_{_CJK}]")
_WORDS = re.compile(r"[\w']+")


@dataclass(frozen=True, slots=True)
class SentenceCues:
    """One sentence and the cues found in it."""

    index: int
    sentence: Sentence
    cues: frozenset[Cue]
    langs: frozenset[str]


@dataclass(frozen=True, slots=True)
class Analysis:
    """A reply's sentences, layout and the cues of each sentence."""

    layout: Layout
    sentences: tuple[SentenceCues, ...]

    @property
    def opening(self) -> int:
        """How many sentences make the opening: the first, and the second if the first is short."""
        items = self.layout.sentences
        if len(items) > 1 and len(items[0].text) < 40:
            return 2
        return min(1, len(items))

    def opening_text(self) -> str:
        """The opening sentences as written: what the embedding model reads."""
        return " ".join(s.text for s in self.layout.sentences[: self.opening])


@dataclass(frozen=True, slots=True)
class _Phrase:
    key: tuple[Cue, str]
    opening: bool
    segments: tuple[tuple[int, bool, int], ...]
    """(segment id, optional, tokens allowed before it) in order."""
    required: frozenset[int]


class _ScriptMatcher:
    """The phrases of every lexicon written in one script.

    Each distinct phrase segment is one ``PhraseMatcher`` key; a phrase matches when its segments
    occur in order within their allowed gaps. This keeps alternatives from multiplying out into
    tens of thousands of patterns (the token ``Matcher`` took 100 ms a sentence with them).
    """

    def __init__(self, script: Script, lexicons: Sequence[Lexicon]) -> None:
        self.script = script
        self.nlp: Language = spacy.blank("zh" if script is Script.CHAR else "xx")
        self.matcher = PhraseMatcher(self.nlp.vocab, attr="LOWER")
        self.anchors: set[str] = set()
        self.unanchored = script is Script.CHAR
        segment_ids: dict[tuple[tuple[str, ...], ...], int] = {}
        self.phrases: dict[int, list[_Phrase]] = {}
        for lexicon in lexicons:
            for cue, phrase, opening in iter_phrases(lexicon):
                compiled = compile_phrase(phrase, script, self.tokens)
                slots = []
                for part in compiled:
                    ident = segment_ids.setdefault(part.alternatives, len(segment_ids))
                    slots.append((ident, part.optional, part.gap_before))
                required = frozenset(i for i, optional, _ in slots if not optional)
                entry = _Phrase((cue, lexicon.lang), opening, tuple(slots), required)
                self.phrases.setdefault(min(required), []).append(entry)
                if not self.unanchored:
                    self._add_anchor(compiled)
        for alternatives, ident in segment_ids.items():
            docs = [Doc(self.nlp.vocab, words=list(tokens)) for tokens in alternatives]
            self.matcher.add(str(ident), docs)

    def tokens(self, text: str) -> list[str]:
        """Lower-case tokens of a phrase, normalised the way sentences are."""
        return [token.lower_ for token in self.nlp.make_doc(normalize(text)) if not token.is_space]

    def _add_anchor(self, segments: Sequence[Segment]) -> None:
        """Record words a sentence must contain for the phrase to match.

        Any alternative of a required segment needs all its tokens, so the longest word of each
        alternative of one required segment is a necessary condition; the segment with the
        longest such words is the most selective.
        """
        best: set[str] = set()
        best_length = 0
        for part in segments:
            if part.optional:
                continue
            words = [
                max((w for t in alt for w in _WORDS.findall(t)), key=len, default="")
                for alt in part.alternatives
            ]
            if all(words) and min(map(len, words)) > best_length:
                best, best_length = set(words), min(map(len, words))
        if best:
            self.anchors.update(best)
        else:
            self.unanchored = True

    def match(self, text: str) -> list[tuple[Cue, str]]:
        """(cue, lang) pairs found in one normalised sentence."""
        if not self.unanchored and not self.anchors.intersection(_WORDS.findall(text.lower())):
            return []
        doc = self.nlp.make_doc(text)
        first = next((t.i for t in doc if not (t.is_punct or t.is_space)), 0)
        spans: dict[int, list[tuple[int, int]]] = {}
        for match_id, start, end in self.matcher(doc):
            spans.setdefault(int(self.nlp.vocab.strings[match_id]), []).append((start, end))
        found: list[tuple[Cue, str]] = []
        for ident in spans:
            for phrase in self.phrases.get(ident, ()):
                if phrase.required.issubset(spans) and _chained(phrase, spans, first):
                    found.append(phrase.key)
        return found


def _chained(phrase: _Phrase, spans: dict[int, list[tuple[int, int]]], first: int) -> bool:
    """Whether the phrase's segments occur in order, each within its gap of the previous one."""
    ends: set[int] = {-1}  # -1: nothing matched yet
    for ident, optional, gap in phrase.segments:
        reached = {
            end
            for start, end in spans.get(ident, ())
            for previous in ends
            if _follows(start, previous, gap, first if phrase.opening else None)
        }
        ends = reached | ends if optional else reached
        if not ends:
            return False
    return any(end >= 0 for end in ends)


def _follows(start: int, previous: int, gap: int, first: int | None) -> bool:
    if previous < 0:  # the phrase's first matched segment: must it open the sentence?
        return first is None or start == first
    return previous <= start <= previous + gap


class RuleMatcher:
    """Finds cues in replies in any bundled language."""

    def __init__(self, lexicons: Iterable[Lexicon] | None = None) -> None:
        loaded = list(lexicons) if lexicons is not None else load_lexicons()
        self.languages = frozenset(lexicon.lang for lexicon in loaded)
        self._matchers = [
            _ScriptMatcher(script, [lex for lex in loaded if lex.script is script])
            for script in Script
            if any(lex.script is script for lex in loaded)
        ]

    def analyse(self, text: str) -> Analysis:
        layout = segment(text)
        found = []
        for index, sentence in enumerate(layout.sentences):
            hits = self.sentence_cues(sentence.normalized)
            if hits:
                cues = frozenset(cue for cue, _ in hits)
                langs = frozenset(lang for _, lang in hits)
                found.append(SentenceCues(index, sentence, cues, langs))
        return Analysis(layout, tuple(found))

    def sentence_cues(self, text: str) -> list[tuple[Cue, str]]:
        hits: list[tuple[Cue, str]] = []
        for matcher in self._matchers:
            pattern = _CHAR_SCRIPT if matcher.script is Script.CHAR else _WORD_SCRIPT
            if pattern.search(text):
                hits.extend(matcher.match(text))
        return hits
