"""Refusal detection and rewriting for LLM replies: the core library, with no web code."""

from guardrail.pipeline import Guardrail, Trace
from guardrail.policies import PolicyError
from guardrail.settings import GuardrailSettings
from guardrail.types import (
    Action,
    CategoryScore,
    Decision,
    Detection,
    Label3,
    Pattern,
    PatternEvidence,
    Strategy,
    Usage,
)

__all__ = [
    "Action",
    "CategoryScore",
    "Decision",
    "Detection",
    "Guardrail",
    "GuardrailSettings",
    "Label3",
    "Pattern",
    "PatternEvidence",
    "PolicyError",
    "Strategy",
    "Trace",
    "Usage",
]
