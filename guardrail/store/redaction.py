"""Masking of personal data and secrets in text bound for the audit stream.

Secrets are always masked; personal data (emails, phone numbers, long digit runs) only when
redaction is on. Patterns err towards masking: an audit log loses little from a masked number,
and a leaked one cannot be recalled.
"""

from __future__ import annotations

import re

_SECRET = re.compile(
    r"""
    \b(?:
        sk-[A-Za-z0-9_-]{16,}                        # OpenAI, Anthropic (sk-ant-...) and lookalikes
      | (?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}
      | AKIA[0-9A-Z]{16}                             # AWS access key id
      | AIza[0-9A-Za-z_-]{35}                        # Google API key
      | xox[abposr]-[A-Za-z0-9-]{10,}                # Slack
      | (?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}  # long opaque token
    )\b
    | (?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}
    """,
    re.VERBOSE,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE_OR_NUMBER = re.compile(r"(?<![\w+(])[+(]?\d(?:[ ().-]{0,2}\d){6,18}(?!\w)")
_DIGIT_RUN = re.compile(r"\d{6,}")

SECRET = "[SECRET]"
EMAIL = "[EMAIL]"
PHONE = "[PHONE]"
NUMBER = "[NUMBER]"


def mask_secrets(text: str) -> str:
    """Replace API-key-like tokens with ``[SECRET]``."""
    return _SECRET.sub(SECRET, text)


def redact(text: str) -> str:
    """Mask secrets, emails, phone numbers and runs of six or more digits."""
    text = mask_secrets(text)
    text = _EMAIL.sub(EMAIL, text)
    text = _PHONE_OR_NUMBER.sub(_phone_or_number, text)
    return _DIGIT_RUN.sub(NUMBER, text)


def _phone_or_number(match: re.Match[str]) -> str:
    token = match.group(0)
    return NUMBER if token.isdigit() else PHONE
