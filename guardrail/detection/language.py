"""Language identification for replies: the writing system first, then py3langid within it.

py3langid alone confuses close languages on short texts and sometimes labels Chinese as
Japanese; the script settles Korean, Japanese and Chinese outright and narrows the candidates for
the rest. Replies too short for a statistical guess fall back to the language whose refusal
phrases matched, when exactly one did.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Collection, Mapping

import numpy as np
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
from py3langid.modelio import load_model

from guardrail.detection.memory import release_freed_memory

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

SAMPLE_CHARS = 300
"""Enough text to tell languages apart; py3langid walks every byte in Python."""
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
            release_freed_memory()
    return _identifier


_SCRIPTS = {
    "hangul": re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"),
    "kana": re.compile("[\u3040-\u30ff]"),
    "han": re.compile("[\u4e00-\u9fff\u3400-\u4dbf]"),
    "cyrillic": re.compile("[\u0400-\u04ff]"),
    "arabic": re.compile("[\u0600-\u06ff\u0750-\u077f]"),
    "devanagari": re.compile("[\u0900-\u097f]"),
    "latin": re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
}


def script_counts(text: str) -> Counter[str]:
    """Characters per writing system: latin, cyrillic, arabic, devanagari, hangul, kana, han."""
    return Counter({name: len(pattern.findall(text)) for name, pattern in _SCRIPTS.items()})


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
