"""Request categories: what the user is asking about, from exemplars and keyword rules."""

from guardrail.categories.classifier import BENIGN, CategoryClassifier, CategoryEvidence
from guardrail.categories.exemplars import Encoder, ExemplarIndex, MemoEncoder, default_encoder
from guardrail.categories.keywords import KeywordRules
from guardrail.categories.spec import SENSITIVE_GROUPS, CategoryGroup, CategorySpec

__all__ = [
    "BENIGN",
    "SENSITIVE_GROUPS",
    "CategoryClassifier",
    "CategoryEvidence",
    "CategoryGroup",
    "CategorySpec",
    "Encoder",
    "ExemplarIndex",
    "KeywordRules",
    "MemoEncoder",
    "default_encoder",
]
