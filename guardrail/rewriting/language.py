"""Languages for rewriting: which ones compose has wording for, and identifying a text's.

Identification is the detector's (script first, then py3langid within the script), so requests,
replies and rewrites are all judged by the same rule.
"""

from __future__ import annotations

from guardrail.detection.language import UNDETERMINED, identify_language

SUPPORTED = ("en", "es", "fr", "de", "zh", "ja", "ko", "pt")
"""Languages with bundled compose templates."""

__all__ = ["SUPPORTED", "UNDETERMINED", "detect_language"]


def detect_language(text: str) -> str:
    """An ISO 639-1 code, or ``und`` when the text is too short to tell."""
    return identify_language(text)
