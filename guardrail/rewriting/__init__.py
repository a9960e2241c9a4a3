"""Rewriting refusals: model rewrites verified before use, and offline compose from templates."""

from guardrail.rewriting.actionability import Actionability, assess
from guardrail.rewriting.compose import Composer, ComposeRequest
from guardrail.rewriting.language import SUPPORTED, detect_language
from guardrail.rewriting.rewriter import RewriteJob, Rewriter, RewriteResult, Source
from guardrail.rewriting.salvage import salvage
from guardrail.rewriting.verify import RefusalDetector, Verdict, verify

__all__ = [
    "SUPPORTED",
    "Actionability",
    "ComposeRequest",
    "Composer",
    "RefusalDetector",
    "RewriteJob",
    "RewriteResult",
    "Rewriter",
    "Source",
    "Verdict",
    "assess",
    "detect_language",
    "salvage",
    "verify",
]
