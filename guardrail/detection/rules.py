"""Multilingual cue matching with spaCy: which sentences of a reply refuse, apologise, redirect.

Every bundled lexicon is compiled into one spaCy ``Matcher`` per script: a word-level one (the
language-neutral ``xx`` tokenizer) for languages written with spaces, and a character-level one
(the ``zh`` character segmenter) for Chinese, Japanese and Korean. Running all languages of a
script at once keeps matching independent of language identification, which is unreliable on
short replies; a sentence is tokenized only if it contains a word some phrase requires.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import spacy
from spacy.attrs import IDX, IS_PUNCT, IS_SPACE, LOWER
from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.strings import get_string_id
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc

from guardrail.detection.lexicon import (
    CHAR_SCRIPT_LETTERS,
    Cue,
    Lexicon,
    Script,
    Segment,
    compile_phrase,
    iter_phrases,
    load_lexicons,
)
from guardrail.detection.sentences import Layout, Sentence, normalize, segment

_CHAR_SCRIPT = re.compile(f"[{CHAR_SCRIPT_LETTERS}]")
_WORD_SCRIPT = re.compile(f"[^\\W\\d_{CHAR_SCRIPT_LETTERS}]")
_WORDS = re.compile(r"\w+(?:'(?!s\b)\w+)*")
"""Words as the tokenizer splits them: an apostrophe joins ("can't", "c'est") except before the
"'s" suffix, which is a token of its own ("here's" is "here" and "'s")."""

MAX_NEW_WORDS = 50_000
"""Vocabulary entries a script's matcher may take on past its built size before it is rebuilt
(about 25 MB); see :class:`_Engine`."""
_MULTI_WORD = "alternative"
"""The one ``PhraseMatcher`` key of every alternative of several words (see :class:`_Engine`)."""
_HOST = "x"
"""A stand-in word for a clitic alternative to lean on (see :func:`_tokens`)."""
TOKENIZER_CACHE = 100_000
"""Space-separated chunks whose tokens spaCy's tokenizer remembers (a few MB). Its default,
10,000, fills within a few hundred replies; every chunk after that pays for prefix, suffix and
infix searches again, which made tokenizing half of the rules' time."""


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

    @property
    def phrase_languages(self) -> frozenset[str]:
        """The lexicons whose phrases were found: the tie-breaker for language identification
        on replies too short to tell."""
        return frozenset(lang for sentence in self.sentences for lang in sentence.langs)


@dataclass(frozen=True, slots=True)
class _Phrase:
    key: tuple[Cue, str]
    opening: bool
    segments: tuple[tuple[int, bool, int], ...]
    """(segment id, optional, tokens allowed before it) in order."""
    required: frozenset[int]
    needs: tuple[frozenset[int], ...]
    """The alternative ids of each required segment: one of each must be found."""


def _blank(script: Script) -> Language:
    """A tokenizer whose vocabulary computes only the word attributes matching reads.

    spaCy computes some twenty attributes for every word it has not seen before (its shape,
    whether it looks like a number or a URL, ...); a third of tokenizing time went there."""
    nlp = spacy.blank("zh" if script is Script.CHAR else "xx")
    vocab: Any = nlp.vocab  # lex_attr_getters is missing from spaCy's type stubs
    vocab.lex_attr_getters = {
        attr: vocab.lex_attr_getters[attr] for attr in (LOWER, IS_PUNCT, IS_SPACE)
    }
    if isinstance(nlp.tokenizer, Tokenizer):  # not the Chinese character segmenter
        nlp.tokenizer.max_cache_size = TOKENIZER_CACHE
    return nlp


def _tokens(nlp: Language, text: str) -> list[str]:
    """Lower-case tokens of a phrase, normalised the way sentences are.

    An alternative that is a clitic ("'s" in "{is|'s} not") is split as it would be after the
    word it leans on in a sentence ("that's" is "that" and "'s"); alone, its apostrophe would be
    split off as punctuation and the alternative could never match."""
    normalized = normalize(text)
    if normalized.startswith("'"):
        leaning = _lower_words(nlp, _HOST + normalized)
        if leaning[0] == _HOST:
            return leaning[1:]
    return _lower_words(nlp, normalized)


def _lower_words(nlp: Language, text: str) -> list[str]:
    return [token.lower_ for token in nlp.make_doc(text) if not token.is_space]


class _Engine:
    """A tokenizer and phrase matcher sharing one spaCy vocabulary.

    spaCy adds every word it tokenizes to the vocabulary (and its tokenizer cache) for good,
    about half a kilobyte each; a proxy that reads replies for weeks would grow without bound.
    An engine counts as worn once it has taken on ``max_new_words`` entries since it was built,
    and is then replaced by a fresh one built from the same alternatives. Replacing beats
    spaCy's ``memory_zone``, which may not be entered by two threads at once.

    One-word alternatives (more than half) are looked up in a dictionary by their lower-case
    hash rather than added to the ``PhraseMatcher``, whose trie and bookkeeping take about a
    kilobyte per pattern. The others are added as sequences of hashes, so the lexicons' words
    take no lexemes, under one match key, and are told apart by their tokens' hashes: a key and
    a pattern document each cost the matcher's bookkeeping and a vocabulary entry, about 40 MB
    for 40,000 alternatives.
    """

    def __init__(
        self, nlp: Language, alternatives: Sequence[tuple[str, ...]], max_new_words: int
    ) -> None:
        self.nlp = nlp
        self.matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.single_word: dict[int, int] = {}
        """Alternative id by the lower-case hash of its only word."""
        self.multi_word: dict[tuple[int, ...], int] = {}
        """Alternative id by the lower-case hashes of its words."""
        for ident, tokens in enumerate(alternatives):
            if len(tokens) == 1:
                self.single_word[get_string_id(tokens[0])] = ident
            else:
                self.multi_word[tuple(get_string_id(token) for token in tokens)] = ident
        # Patterns given as sequences of LOWER hashes rather than documents (``add`` takes
        # either; spaCy's stubs name only documents): no lexeme is made for the lexicons' words,
        # and the matcher keeps the very tuples of ``multi_word``.
        matcher: Any = self.matcher
        matcher.add(_MULTI_WORD, list(self.multi_word))
        self.built = len(nlp.vocab)
        self.max_new_words = max_new_words

    @property
    def new_words(self) -> int:
        """Vocabulary entries taken on since the engine was built."""
        return len(self.nlp.vocab) - self.built

    def worn(self) -> bool:
        return self.new_words > self.max_new_words

    def find(self, doc: Doc, lower: Sequence[int]) -> Iterator[tuple[int, int, int]]:
        """(alternative id, start, end) of every alternative in ``doc``, whose tokens' LOWER
        hashes are ``lower``."""
        single_word = self.single_word
        for start, key in enumerate(lower):
            ident = single_word.get(key)
            if ident is not None:
                yield ident, start, start + 1
        multi_word = self.multi_word
        for _, start, end in self.matcher(doc):
            yield multi_word[tuple(lower[start:end])], start, end


class _ScriptMatcher:
    """The phrases of every lexicon written in one script.

    A phrase matches when its segments occur in order within their allowed gaps; a segment
    occurs where one of its alternatives does. This keeps alternatives from multiplying out into
    tens of thousands of patterns (the token ``Matcher`` took 100 ms a sentence with them).
    Each distinct alternative is one ``PhraseMatcher`` key, however many segments share it: a
    common word ("the", "to") in twenty segments is then one match rather than twenty, which
    cut the matches per reply from about 440 to 75.
    """

    def __init__(
        self, script: Script, lexicons: Sequence[Lexicon], max_new_words: int = MAX_NEW_WORDS
    ) -> None:
        self.script = script
        self.max_new_words = max_new_words
        nlp = _blank(script)
        self.anchors: set[str] = set()
        self.unanchored = script is Script.CHAR
        segment_ids: dict[tuple[tuple[str, ...], ...], int] = {}
        alternative_ids: dict[tuple[str, ...], int] = {}
        alternatives_of: list[frozenset[int]] = []
        entries: list[_Phrase] = []
        tokenize = functools.partial(_tokens, nlp)
        with nlp.memory_zone():  # the phrases' words need not stay in the vocabulary
            compiled_phrases = [
                (lexicon.lang, cue, opening, compile_phrase(phrase, script, tokenize))
                for lexicon in lexicons
                for cue, phrase, opening in iter_phrases(lexicon)
            ]
        for lang, cue, opening, compiled in compiled_phrases:
            slots = []
            for part in compiled:
                ident = segment_ids.setdefault(part.alternatives, len(segment_ids))
                if ident == len(alternatives_of):
                    alternatives_of.append(
                        frozenset(
                            alternative_ids.setdefault(alt, len(alternative_ids))
                            for alt in part.alternatives
                        )
                    )
                slots.append((ident, part.optional, part.gap_before))
            required = frozenset(i for i, optional, _ in slots if not optional)
            needs = tuple(alternatives_of[i] for i in required)
            entries.append(_Phrase((cue, lang), opening, tuple(slots), required, needs))
            if not self.unanchored:
                self._add_anchor(compiled)
        self.alternatives_of = tuple(alternatives_of)
        """Alternative ids of each segment, indexed by segment id."""
        segments_of: list[set[int]] = [set() for _ in alternative_ids]  # by alternative id
        for ident, alternatives in enumerate(self.alternatives_of):
            for alternative in alternatives:
                segments_of[alternative].add(ident)
        self.alternatives = tuple(alternative_ids)
        """Token sequence of each alternative, indexed by alternative id."""
        # Each phrase is looked up under its most selective required segment, so that a hit on
        # a common one ("the", ",", "es") does not make the phrase a candidate: the segment
        # whose shortest alternative is longest, then whose alternatives the fewest segments
        # share (a quarter of the candidates, on English replies, of the segment fewest phrases
        # share).
        shortest = [
            min(len("".join(self.alternatives[a])) for a in alts) for alts in self.alternatives_of
        ]
        spread = [max(len(segments_of[a]) for a in alts) for alts in self.alternatives_of]
        self.phrases: dict[int, list[_Phrase]] = {}
        for entry in entries:
            key = min(entry.required, key=lambda ident: (-shortest[ident], spread[ident], ident))
            self.phrases.setdefault(key, []).append(entry)
        none: frozenset[int] = frozenset()  # shared: most alternatives are never looked up under
        self.keys_of = tuple(frozenset(s & self.phrases.keys()) or none for s in segments_of)
        """The segments phrases are looked up under that contain each alternative, by its id."""
        self._engine = _Engine(nlp, self.alternatives, max_new_words)
        self._renewing = threading.Lock()

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

    def wants(self, text: str) -> bool:
        """Whether a normalised sentence could hold a phrase: it has this script's letters and
        at least one anchor word."""
        pattern = _CHAR_SCRIPT if self.script is Script.CHAR else _WORD_SCRIPT
        if not pattern.search(text):
            return False
        return self.unanchored or not self.anchors.isdisjoint(_WORDS.findall(text.lower()))

    def match(self, texts: Sequence[str]) -> list[list[tuple[Cue, str]]]:
        """(cue, lang) pairs found in each normalised sentence.

        The sentences are tokenized and matched as one document (one call into spaCy rather
        than one per sentence). They are joined by a line break, a whitespace token no phrase
        contains, so no match spans two sentences.
        """
        engine = self._engine  # one engine for the whole call, even if another replaces it
        doc = engine.nlp.make_doc("\n\n".join(texts))
        starts = list(itertools.accumulate((len(t) + 2 for t in texts[:-1]), initial=0))
        columns = doc.to_array([IDX, IS_PUNCT, IS_SPACE, LOWER])
        bounds = [*np.searchsorted(columns[:, 0], starts).tolist(), len(columns)]
        not_word = np.logical_or(columns[:, 1], columns[:, 2]).tolist()
        sentence_of: list[int] = []  # by token
        first: dict[int, int] = {}  # each sentence's first word token
        for where, (start, end) in enumerate(itertools.pairwise(bounds)):
            sentence_of += [where] * (end - start)
            while start < end and not_word[start]:
                start += 1
            if start < end:
                first[where] = start
        spans: list[defaultdict[int, list[tuple[int, int]]]] = [defaultdict(list) for _ in texts]
        for ident, start, end in engine.find(doc, columns[:, 3].tolist()):
            spans[sentence_of[start]][ident].append((start, end))
        hits: list[list[tuple[Cue, str]]] = []
        for where, found in enumerate(spans):
            present = found.keys()
            opening = first.get(where, -1)
            hits.append(
                [
                    phrase.key
                    for ident in frozenset().union(*map(self.keys_of.__getitem__, found))
                    for phrase in self.phrases[ident]
                    if not any(map(present.isdisjoint, phrase.needs))
                    and _chained(phrase, found, self.alternatives_of, opening)
                ]
            )
        if engine.worn():
            self._renew(engine)
        return hits

    @property
    def new_words(self) -> int:
        return self._engine.new_words

    def _renew(self, worn: _Engine) -> None:
        """Start building a fresh engine in the background (about 0.3 s), unless one is being
        built; callers carry on with the engine they have until it is swapped in."""
        if self._engine is worn and self._renewing.acquire(blocking=False):
            threading.Thread(target=self._rebuild, args=(worn,), daemon=True).start()

    def _rebuild(self, worn: _Engine) -> None:
        try:
            if self._engine is worn:
                self._engine = _Engine(_blank(self.script), self.alternatives, self.max_new_words)
        finally:
            self._renewing.release()


def _chained(
    phrase: _Phrase,
    found: Mapping[int, list[tuple[int, int]]],
    alternatives_of: Sequence[frozenset[int]],
    first: int,
) -> bool:
    """Whether the phrase's segments occur in order, each within its gap of the previous one.

    ``found`` holds the (start, end) tokens of each alternative found in the sentence, a
    segment occurring wherever one of its ``alternatives_of`` does; ``first`` is the sentence's
    first word token (where an opening phrase must start)."""
    ends: dict[int, int] = {-1: 0}  # -1: nothing matched yet
    """Where the segments so far may end, each with the gap owed to optional segments skipped
    since: in "a * [b] c" without "b", "c" may stand as far from "a" as "b" could have."""
    for ident, optional, gap in phrase.segments:
        reached: dict[int, int] = {}
        for alternative in found.keys() & alternatives_of[ident]:  # iterates the smaller
            for start, end in found[alternative]:
                for previous, owed in ends.items():
                    if previous < 0:  # the phrase's first matched segment: must it open?
                        if not phrase.opening or start == first:
                            reached[end] = 0
                            break
                    elif previous <= start <= previous + gap + owed:
                        reached[end] = 0
                        break
        if optional:  # skipping it keeps the earlier ends, now owed its gap too
            reached |= {end: owed + gap for end, owed in ends.items()}
        ends = reached
        if not ends:
            return False
    return any(end >= 0 for end in ends)


class RuleMatcher:
    """Finds cues in replies in any bundled language."""

    def __init__(
        self, lexicons: Iterable[Lexicon] | None = None, *, max_new_words: int = MAX_NEW_WORDS
    ) -> None:
        loaded = list(lexicons) if lexicons is not None else load_lexicons()
        self.languages = frozenset(lexicon.lang for lexicon in loaded)
        self._matchers = [
            _ScriptMatcher(script, [lex for lex in loaded if lex.script is script], max_new_words)
            for script in Script
            if any(lex.script is script for lex in loaded)
        ]

    @property
    def new_words(self) -> int:
        """Vocabulary entries the matchers took on since built: at most ``max_new_words`` each
        for long, as a matcher that passes that is replaced by a fresh one."""
        return sum(matcher.new_words for matcher in self._matchers)

    def analyse(self, text: str) -> Analysis:
        layout = segment(text)
        hits: dict[int, list[tuple[Cue, str]]] = {}
        for matcher in self._matchers:
            chosen = [i for i, s in enumerate(layout.sentences) if matcher.wants(s.normalized)]
            if chosen:
                texts = [layout.sentences[i].normalized for i in chosen]
                for index, found in zip(chosen, matcher.match(texts), strict=True):
                    hits.setdefault(index, []).extend(found)
        sentences = tuple(
            SentenceCues(
                index,
                layout.sentences[index],
                frozenset(cue for cue, _ in found),
                frozenset(lang for _, lang in found),
            )
            for index, found in sorted(hits.items())
            if found
        )
        return Analysis(layout, sentences)
