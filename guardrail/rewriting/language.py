"""The language of a request or a rewrite, for choosing templates and checking rewrites.

Script decides Chinese, Japanese and Korean outright (py3langid confuses short CJK texts);
otherwise py3langid, restricted to common languages so that short texts are not labelled with
rare ones.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

SUPPORTED = ("en", "es", "fr", "de", "zh", "ja", "ko", "pt")
"""Languages with bundled compose templates."""
CANDIDATES = (*SUPPORTED, "it", "nl", "ru", "pl", "tr", "ar", "vi", "id", "sv", "uk", "hi", "th")
UNDETERMINED = "und"

_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")
_LETTER = re.compile(r"[^\W\d_]")


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_modelpath(Path(MODEL_DIR) / MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(CANDIDATES))
    return identifier


def detect_language(text: str) -> str:
    """An ISO 639-1 code, or ``und`` when the text has too few letters to tell."""
    letters = _LETTER.findall(text)
    if len(letters) < 4:
        return UNDETERMINED
    hangul, kana, han = (len(p.findall(text)) for p in (_HANGUL, _KANA, _HAN))
    if hangul and hangul >= kana:
        return "ko"
    if kana:
        return "ja"
    if han > len(letters) / 3:
        return "zh"
    lang, _ = _identifier().classify(text)
    return str(lang)
