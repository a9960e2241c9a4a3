"""Language identification for replies: the writing system first, then py3langid within it.

py3langid alone confuses close languages on short texts and sometimes labels Chinese as
Japanese; the script settles Korean, Japanese and Chinese outright and narrows the candidates for
the rest. Replies too short for a statistical guess fall back to the language whose refusal
phrases matched, when exactly one did.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping

import numpy as np
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
from py3langid.modelio import load_model

UNDETERMINED = "und"

SCRIPT_LANGUAGES: Mapping[str, tuple[str, ...]] = {
    "latin": (
        "en", "es", "fr", "de", "pt", "it", "vi", "nl", "pl", "tr", "id", "ro", "sv", "da",
        "no", "cs", "hu", "fi", "ca", "ms", "tl",
    ),
    "cyrillic": ("ru", "uk", "bg", "sr", "be", "kk", "mk"),
    "arabic": ("ar", "fa", "ur"),
    "devanagari": ("hi", "mr", "ne"),
}  # fmt: skip
"""Candidate languages per script, most common first; py3langid only chooses among these."""

MIN_LETTERS = 20
"""Below this many letters a statistical guess is no better than the phrase match."""
MIN_CONFIDENCE = 0.5

_lock = threading.Lock()
_identifier: LanguageIdentifier | None = None


def _get_identifier() -> LanguageIdentifier:
    """Load the py3langid model once, keeping only the candidate languages' columns.

    ``set_languages`` would keep the full 97-language table as well (28 MB more).
    """
    global _identifier
    with _lock:
        if _identifier is None:
            ptc, pc, classes, nextmove, row, output = load_model(MODEL_DIR / MODEL_FILE)
            wanted = {lang for langs in SCRIPT_LANGUAGES.values() for lang in langs}
            keep = [i for i, lang in enumerate(classes) if lang in wanted]
            _identifier = LanguageIdentifier(
                np.ascontiguousarray(ptc[:, keep]),
                np.asarray(pc)[keep],
                [classes[i] for i in keep],
                nextmove,
                output,
                norm_probs=True,
                tk_row=row,
            )
    return _identifier


def script_counts(text: str) -> Counter[str]:
    """Letters per writing system: latin, cyrillic, arabic, devanagari, hangul, kana, han."""
    counts: Counter[str] = Counter()
    for char in text:
        if not char.isalpha():
            continue
        code = ord(char)
        if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
            counts["hangul"] += 1
        elif 0x3040 <= code <= 0x30FF:
            counts["kana"] += 1
        elif 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF:
            counts["han"] += 1
        elif 0x0400 <= code <= 0x04FF:
            counts["cyrillic"] += 1
        elif 0x0600 <= code <= 0x06FF or 0x0750 <= code <= 0x077F:
            counts["arabic"] += 1
        elif 0x0900 <= code <= 0x097F:
            counts["devanagari"] += 1
        elif code < 0x0250 or 0x1E00 <= code <= 0x1EFF:
            counts["latin"] += 1
        else:
            counts[unicodedata.name(char, "other").split()[0].lower()] += 1
    return counts


def identify_language(text: str, matched: Collection[str] = ()) -> str:
    """The reply's language as an ISO 639-1 code, or ``"und"`` when there is no text to tell.

    ``matched`` names the lexicons whose phrases were found in the reply; it breaks ties on
    replies too short for py3langid.
    """
    sample = text[:2000]
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
    fallback = [lang for lang in matched if lang in candidates]
    if letters < MIN_LETTERS and len(fallback) == 1:
        return fallback[0]
    ranked = [(lang, p) for lang, p in _get_identifier().rank(sample) if lang in candidates]
    best, confidence = ranked[0]
    if confidence >= MIN_CONFIDENCE:
        return str(best)
    if len(fallback) == 1:
        return fallback[0]
    if letters < MIN_LETTERS:
        return candidates[0]  # the most common language of the script in assistant replies
    return str(best)
