"""Language identification for replies: the writing system first, then py3langid within it.

py3langid alone confuses close languages on short texts and sometimes labels Chinese as
Japanese; the script settles Korean, Japanese and Chinese outright and narrows the candidates for
the rest. Replies too short for a statistical guess fall back to the language whose refusal
phrases matched, when exactly one did.
"""

from __future__ import annotations

import hashlib
import logging
import math
import operator
import os
import re
import shutil
import tempfile
import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from py3langid.langid import MODEL_DIR, MODEL_FILE
from py3langid.modelio import load_model

from guardrail.detection.memory import release_freed_memory
from guardrail.settings import default_cache_dir

UNDETERMINED = "und"

SCRIPT_LANGUAGES: Mapping[str, tuple[str, ...]] = {
    "latin": (
        "en", "es", "fr", "de", "pt", "it", "vi", "nl", "pl", "tr", "id", "ro", "sv", "da",
        "no", "cs", "sk", "hr", "sl", "hu", "fi", "et", "lt", "lv", "ca", "ms", "az", "tl", "sw",
        "jv",
    ),
    "cyrillic": ("ru", "uk", "bg", "sr", "be", "kk", "mk"),
    "arabic": ("ar", "fa", "ur"),
    "devanagari": ("hi", "mr", "ne"),
    "bengali": ("bn",),
    "tamil": ("ta",),
    "telugu": ("te",),
    "thai": ("th",),
    "greek": ("el",),
    "hebrew": ("he",),
}  # fmt: skip
"""Candidate languages per script, most common first; py3langid only chooses among these, and
a script with one candidate needs no statistical guess."""

SAMPLE_CHARS = 300
"""Enough text to tell languages apart; py3langid walks every byte in Python."""
MIN_LETTERS = 20
"""Below this many letters a statistical guess is no better than the phrase match."""
MIN_CONFIDENCE = 0.5

ENGLISH_MARKERS = frozenset({
    "the", "and", "you", "that", "with", "this", "your", "have", "would", "what", "which",
    "there", "they", "these", "those", "been", "from", "should", "could", "about", "it's",
    "don't", "can't", "i'm", "i've", "you're", "can", "not", "but", "here", "here's", "how",
    "some", "several", "such", "also", "other", "their", "them", "there's", "that's", "what's",
    "into", "when", "where", "who", "why", "it", "its",
})  # fmt: skip
"""English words that are not also common words of the other Latin-script candidates ("is",
"of", "to", "for", "was", "a" are: Dutch, Polish, Danish, German, Spanish...)."""
ENGLISH_MARKER_SHARE = 0.15
"""A sample written in ASCII letters whose words are at least this share of markers is English
(no disagreement with py3langid on 5,000 labelled replies in 37 languages) without walking
py3langid's automaton, the largest cost of the rules on an English reply."""
MIXING_MARKERS = frozenset({
    "ang", "ng", "mga", "sa", "na", "ko", "po", "ako", "ito", "yan", "kasi", "pero", "hindi",
    "yang", "dan", "di", "ini", "itu", "tidak", "saya", "aku", "untuk", "dengan", "bisa",
    "tapi", "nggak", "karena", "kwa", "ni", "wa", "ya", "siwezi", "hiyo", "ora", "lan", "ing",
    "iku", "sing",
})  # fmt: skip
"""Function words of the languages often written in ASCII and mixed with English (Tagalog,
Indonesian and Malay, Swahili, Javanese): a sample with any of them is left to py3langid, which
tells "Pasensya na, pero it's not allowed" from English."""
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NON_ASCII_LETTER = re.compile(r"[^\W\d_a-zA-Z]")

_CACHE_FORMAT = "3"
_TABLES = {"byte_class", "moves", "column_base", "row_start", "output", "ptc", "pc", "classes"}
_lock = threading.Lock()
_identifier: Identifier | None = None
_log = logging.getLogger(__name__)


class Identifier:
    """py3langid's naive Bayes over byte n-grams, with its byte automaton stored compactly.

    py3langid walks a 104,583-state automaton over 256 byte values as a 39 MB table of 32-bit
    state numbers. Here bytes that move every state alike share one column (197 columns), and
    a move stores its target's index among the states entered by that column, which fits 16
    bits: every state but the start is entered by one column only (the last byte of its
    n-gram). Scores are computed as py3langid computes them, so rankings are the same.
    """

    def __init__(self, tables: Mapping[str, Any]) -> None:
        self.byte_class = bytes(tables["byte_class"])
        """``bytes.translate`` table from a byte to its column."""
        # Memory views index to Python ints about as fast as lists do, and in the detector,
        # where matching evicts these tables from the CPU caches between replies, faster than
        # lists of 100,000 int objects (and 6 MB smaller).
        self.moves = np.ascontiguousarray(tables["moves"]).data
        self.column_base = tables["column_base"].tolist()
        """Where the states entered by each column start in the state numbering."""
        self.row_start = np.ascontiguousarray(tables["row_start"], dtype=np.int32).data
        self.output = np.ascontiguousarray(tables["output"], dtype=np.int32).data
        """The n-gram feature each state counts, or -1."""
        self.ptc = np.asarray(tables["ptc"])
        self.pc = np.asarray(tables["pc"])
        self.classes: list[str] = tables["classes"].tolist()
        self.aliases: list[tuple[int, int]] = []
        """(first, duplicate) columns of a language listed twice (``sr`` in two scripts)."""
        first: dict[str, int] = {}
        for i, lang in enumerate(self.classes):
            if lang in first:
                self.aliases.append((first[lang], i))
            else:
                first[lang] = i

    def rank(self, text: str) -> list[tuple[str, float]]:
        """Languages by probability, best first (py3langid's ``rank`` with ``norm_probs``)."""
        if text.isupper():
            text = text.lower()
        data = unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")
        visits = self._visits(data)
        if visits:
            index = np.fromiter(visits.keys(), dtype=np.intp, count=len(visits))
            counts = np.fromiter(visits.values(), dtype=np.float32, count=len(visits))
            scores = np.log1p(counts) @ self.ptc[index] + self.pc
        else:
            scores = np.zeros(len(self.classes), dtype=np.float32)
        scores *= 1.0 / math.sqrt(len(data) or 1)
        np.exp(scores - scores.max(), out=scores)
        scores /= scores.sum()
        for i, j in self.aliases:
            scores[i] += scores[j]
            scores[j] = 0.0
        merged: dict[str, float] = {}
        for lang, score in zip(self.classes, scores.tolist(), strict=True):
            merged.setdefault(lang, score)
        return sorted(merged.items(), key=operator.itemgetter(1), reverse=True)

    def _visits(self, data: bytes) -> Counter[int] | None:
        moves, base, row_start, output = self.moves, self.column_base, self.row_start, self.output
        state = 0
        # A comprehension appends without a method call per byte (a fifth faster than a loop).
        found = [
            output[(state := base[column] + moves[row_start[state] + column])]
            for column in data.translate(self.byte_class)
        ]
        counts = Counter(found)
        del counts[-1]  # states that complete no n-gram
        return counts or None


def _get_identifier() -> Identifier:
    global _identifier
    with _lock:
        if _identifier is None:
            _identifier = load_identifier(default_cache_dir())
    return _identifier


def load_identifier(cache: Path | None) -> Identifier:
    """py3langid's model in compact form, keeping only the candidate languages' columns.

    Deriving the compact tables means decompressing the packaged model (0.5 s, 70 MB for a
    moment). With a ``cache`` directory that is done once: the tables are written there and
    memory-mapped, so later processes start at once and share the pages they read. Without
    one, or when it cannot be written, the tables are derived in memory.
    """
    model = MODEL_DIR / MODEL_FILE
    wanted = sorted({lang for langs in SCRIPT_LANGUAGES.values() for lang in langs})
    tables = None
    if cache is not None:
        with model.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256")
        digest.update(f"{_CACHE_FORMAT}:{','.join(wanted)}".encode())
        folder = cache / f"py3langid-{digest.hexdigest()[:16]}"
        try:
            if not folder.is_dir():
                tables = _tables(model, wanted)
                _write_tables(folder, tables)
            tables = _mapped(folder)
        except (OSError, ValueError, EOFError) as exc:
            _log.warning("language model cache %s unusable (%s); loading into memory", folder, exc)
            shutil.rmtree(folder, ignore_errors=True)  # written afresh by the next process
    identifier = Identifier(tables or _tables(model, wanted))
    release_freed_memory()  # the decompressed model
    return identifier


def _tables(model: Path, wanted: Collection[str]) -> dict[str, npt.NDArray[Any]]:
    """The model's arrays in compact form, language columns narrowed to ``wanted``.

    ``set_languages`` would keep the full 97-language table as well (28 MB more)."""
    ptc, pc, classes, nextmove, row, output = load_model(model)
    keep = [i for i, lang in enumerate(classes) if lang in wanted]
    moves = np.frombuffer(nextmove, dtype=np.uint32).reshape(-1, 256)
    row_of = np.frombuffer(row, dtype=np.uint16).astype(np.int64)
    seen: dict[bytes, int] = {}
    byte_class = [seen.setdefault(moves[:, byte].tobytes(), len(seen)) for byte in range(256)]
    width = len(seen)
    moves = moves[:, [byte_class.index(column) for column in range(width)]]  # one per class
    # The column entering each state (the start state, 0, is entered by many: left as -1).
    entered_by = np.full(len(row_of), -1)
    entered_by[moves.ravel()] = np.tile(np.arange(width), len(moves))
    entered_by[0] = -1
    if (entered_by[1:] < 0).any() or (entered_by[moves] != np.arange(width))[moves != 0].any():
        raise ValueError("py3langid's automaton has a state entered by two byte classes")
    # New numbering: per column, the start state then the states it enters, in old order.
    order = np.lexsort((np.arange(len(row_of)), entered_by))[1:]  # old ids, start state dropped
    sizes = np.bincount(entered_by[order], minlength=width) + 1
    column_base = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    old_of_new = np.zeros(int(sizes.sum()), dtype=np.int64)  # start-state copies stay 0
    new_of_old = np.zeros(len(row_of), dtype=np.int64)
    rank = np.arange(len(order)) - np.repeat(np.cumsum(sizes - 1) - (sizes - 1), sizes - 1)
    new_of_old[order] = column_base[entered_by[order]] + 1 + rank
    old_of_new[new_of_old[order]] = order
    local = new_of_old[moves] - column_base[np.arange(width)]  # 0 for the start state
    local[moves == 0] = 0
    dtype = np.uint16 if sizes.max() <= 1 << 16 else np.uint32
    return {
        "byte_class": np.asarray(byte_class, dtype=np.uint8),
        "moves": local.astype(dtype).ravel(),
        "column_base": column_base,
        "row_start": (row_of[old_of_new] * width).astype(np.int32),
        "output": np.asarray(output, dtype=np.int32)[old_of_new],
        "ptc": np.ascontiguousarray(ptc[:, keep]),
        "pc": np.asarray(pc)[keep],
        "classes": np.asarray([classes[i] for i in keep]),
    }


def _write_tables(folder: Path, tables: Mapping[str, npt.NDArray[Any]]) -> None:
    """Write the tables as ``.npy`` files into a fresh directory, then rename it into place,
    so a reader never sees a partial cache; if another process got there first, keep theirs."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, table in tables.items():
            with (staging / f"{name}.npy").open("wb") as handle:
                np.save(handle, table, allow_pickle=False)
                handle.flush()
                os.fsync(handle.fileno())
        try:
            staging.rename(folder)
        except OSError:
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _mapped(folder: Path) -> dict[str, npt.NDArray[Any]]:
    """The cached tables, memory-mapped."""
    tables = {
        path.stem: np.load(path, mmap_mode="r", allow_pickle=False) for path in folder.glob("*.npy")
    }
    if tables.keys() != _TABLES:
        raise ValueError(f"expected the tables {sorted(_TABLES)}")
    return tables


_SCRIPTS = {
    "hangul": "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f",
    "kana": "\u3040-\u30ff",
    "han": "\u4e00-\u9fff\u3400-\u4dbf",
    "cyrillic": "\u0400-\u04ff",
    "arabic": "\u0600-\u06ff\u0750-\u077f",
    "devanagari": "\u0900-\u097f",
    "bengali": "\u0980-\u09ff",
    "tamil": "\u0b80-\u0bff",
    "telugu": "\u0c00-\u0c7f",
    "thai": "\u0e00-\u0e7f",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "hebrew": "\u0590-\u05ff",
    "latin": "A-Za-z\u00c0-\u024f\u1e00-\u1eff",
}
"""Each writing system's letters, as a character-class body."""
_OTHER_THAN = {name: re.compile(f"[^{letters}]+") for name, letters in _SCRIPTS.items()}
"""Everything but one script's letters: deleting it leaves the letters to count, which is twice
as fast as listing them with ``findall``."""
_NOT_LATIN = re.compile(
    "[" + "".join(letters for name, letters in _SCRIPTS.items() if name != "latin") + "]"
)


def script_counts(text: str) -> Counter[str]:
    """Characters per writing system (the keys of ``_SCRIPTS``)."""
    if not _NOT_LATIN.search(text):  # most replies: one search instead of six counts
        counts = dict.fromkeys(_SCRIPTS, 0)
        counts["latin"] = len(_OTHER_THAN["latin"].sub("", text))
        return Counter(counts)
    return Counter({name: len(other.sub("", text)) for name, other in _OTHER_THAN.items()})


def identify_language(text: str, matched: Collection[str] = ()) -> str:
    """The reply's language as an ISO 639-1 code, or ``"und"`` when there is no text to tell.

    ``matched`` names the lexicons whose phrases were found in the reply; it breaks ties on
    replies too short for py3langid.
    """
    sample = text[:SAMPLE_CHARS]
    counts = script_counts(sample)
    letters = sum(counts.values())
    if not letters:
        return UNDETERMINED
    cjk = counts["hangul"] + counts["kana"] + counts["han"]
    if cjk >= 0.3 * letters:
        if counts["hangul"] >= max(counts["kana"], counts["han"] / 2):
            return "ko"
        return "ja" if counts["kana"] >= 0.05 * cjk else "zh"
    script = max(SCRIPT_LANGUAGES, key=lambda name: counts[name])
    candidates = SCRIPT_LANGUAGES[script]
    if not counts[script]:
        return UNDETERMINED
    if len(candidates) == 1:
        return candidates[0]
    fallback = [lang for lang in matched if lang in candidates]
    if letters < MIN_LETTERS and len(fallback) == 1:
        return fallback[0]
    if script == "latin" and _reads_as_english(sample):
        return "en"
    ranked = [(lang, p) for lang, p in _get_identifier().rank(sample) if lang in candidates]
    best, confidence = ranked[0]
    if confidence >= MIN_CONFIDENCE:
        return str(best)
    if len(fallback) == 1:
        return fallback[0]
    if letters < MIN_LETTERS:
        return candidates[0]  # the most common language of the script in assistant replies
    return str(best)


def _reads_as_english(sample: str) -> bool:
    if _NON_ASCII_LETTER.search(sample):
        return False
    words = _WORD.findall(sample.lower())
    if len(words) < 5 or not MIXING_MARKERS.isdisjoint(words):
        return False
    return sum(word in ENGLISH_MARKERS for word in words) >= ENGLISH_MARKER_SHARE * len(words)
