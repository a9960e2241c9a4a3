"""Refusal detection: is a reply a refusal, of which kind, with which patterns, in which language.

Layered cheapest first: multilingual spaCy rules, then (for replies the rules head is unsure of)
a sentence embedding of the reply's start and a small trained head. See :class:`Detector`.
"""

from guardrail.detection import spacy_without_torch  # noqa: F401  (before rules.py)
from guardrail.detection.batch import BatchError, detect_file
from guardrail.detection.detector import Detector, DetectorConfig, DetectorError
from guardrail.detection.encoder import BUNDLED_MODEL, Encoder, EncoderError, load_encoder
from guardrail.detection.head import HeadError
from guardrail.detection.language import identify_language

__all__ = [
    "BUNDLED_MODEL",
    "BatchError",
    "Detector",
    "DetectorConfig",
    "DetectorError",
    "Encoder",
    "EncoderError",
    "HeadError",
    "detect_file",
    "identify_language",
    "load_encoder",
]
