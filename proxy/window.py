"""When a stream's opening has been seen long enough to decide on it.

A streamed reply is held back until the first of: its first word shows it cannot be a refusal
(the fast path), its first sentence ends, it reaches ``chars`` characters, or ``ms`` milliseconds
pass after its first text. Refusals announce themselves in the opening sentence, so the window
rarely needs to be longer; an answer waits at most one sentence, and most wait not at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from proxy.config import ProxySettings
from proxy.openings import may_open_refusal

_SENTENCE_END = re.compile(r"(?<!\d)[.!?…](?=\s)|[!?](?=$)|[。！？]|\S\s*\n")


class Verdict(StrEnum):
    WAIT = "wait"
    """Keep buffering."""
    REVIEW = "review"
    """The window is closed: review the opening now."""
    PASS = "pass"
    """The opening cannot start a refusal: send it on without a review."""


@dataclass(frozen=True, slots=True)
class DecisionWindow:
    chars: int = 100
    ms: float = 1000.0
    sentence: bool = True
    fast_pass: bool = True

    @classmethod
    def from_settings(cls, settings: ProxySettings) -> DecisionWindow:
        return cls(
            chars=settings.stream_window_chars,
            ms=settings.stream_window_ms,
            sentence=settings.stream_window_sentence,
            fast_pass=settings.stream_fast_pass,
        )

    def assess(self, text: str, elapsed_ms: float, *, refusal: bool = False) -> Verdict:
        """Judge the opening ``text``, first seen ``elapsed_ms`` ago.

        ``refusal`` marks text from the upstream's own ``refusal`` field, which never takes the
        fast path.
        """
        if self.fast_pass and not refusal and may_open_refusal(text) is False:
            return Verdict.PASS
        if len(text) >= self.chars or elapsed_ms >= self.ms:
            return Verdict.REVIEW
        if self.sentence and _SENTENCE_END.search(text.lstrip()):
            return Verdict.REVIEW
        return Verdict.WAIT
