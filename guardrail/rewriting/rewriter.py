"""Rewrite a refusal under a policy: the model first (verified, with retries), then compose.

``on_failure`` decides what happens when every model attempt fails verification or errors:
``compose`` falls back to the templates, ``original`` leaves the reply as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from guardrail.policies.policyset import PolicySet
from guardrail.policies.schema import OnFailure, Policy, PolicyAction
from guardrail.rewriting.actionability import assess
from guardrail.rewriting.compose import Composer, ComposeRequest
from guardrail.rewriting.model import Completion, RewriteModelError, complete
from guardrail.rewriting.prompts import system_prompt, user_prompt
from guardrail.rewriting.verify import RefusalDetector, verify
from guardrail.types import Detection, Message, Usage, content_text

UPSTREAM = "upstream"
CONTEXT_MESSAGES = 8
"""How many earlier messages a regeneration sees."""
EARLIER_TURNS = 3
"""How many earlier user turns other rewrites see."""


class Source(StrEnum):
    MODEL = "model"
    COMPOSE = "compose"
    ORIGINAL = "original"


@dataclass(frozen=True, slots=True)
class RewriteJob:
    """One reply to rewrite and everything known about it."""

    policy: Policy
    messages: Sequence[Message]
    request: str
    reply: str
    detection: Detection
    lang: str
    category: str | None = None
    sensitive: bool = False
    model: str | None = None
    """The request's own model, used when the policy says ``rewrite_model: upstream``."""
    salvaged: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class RewriteResult:
    text: str | None
    """``None``: keep the original reply (``on_failure: original``)."""
    source: Source
    usage: Usage = field(default_factory=Usage)
    problems: tuple[str, ...] = ()
    """Why model attempts were rejected, in order."""
    after: Detection | None = None
    model: str | None = None


class Rewriter:
    """Runs model rewrites and compose for one policy set."""

    def __init__(
        self,
        policy_set: PolicySet,
        detector: RefusalDetector,
        *,
        timeout: float = 30.0,
        upstream: Mapping[str, Any] | None = None,
        completion: Completion | None = None,
    ) -> None:
        self.composer = Composer(policy_set)
        self._detector = detector
        self._timeout = timeout
        self._upstream = dict(upstream or {})
        self._completion = completion

    def compose(self, job: RewriteJob) -> str:
        return self.composer.compose(self._compose_request(job))

    def follow_up(self, job: RewriteJob) -> str:
        return self.composer.follow_up(self._compose_request(job))

    async def rewrite(self, job: RewriteJob) -> RewriteResult:
        model, options = self._model_for(job)
        problems: list[str] = []
        usage = Usage()
        if model is not None:
            baseline = assess(job.reply)
            messages = self._messages(job)
            for attempt in range(1, job.policy.max_retries + 2):
                try:
                    text, spent = await complete(
                        model,
                        messages,
                        timeout=self._timeout,
                        max_tokens=max(256, job.policy.max_chars // 2),
                        options=options,
                        completion=self._completion,
                    )
                except RewriteModelError as error:
                    problems.append(f"attempt {attempt}: {error}")
                    continue
                usage = Usage(
                    usage.prompt_tokens + spent.prompt_tokens,
                    usage.completion_tokens + spent.completion_tokens,
                )
                verdict = verify(
                    text,
                    policy=job.policy,
                    detector=self._detector,
                    request=job.request,
                    lang=job.lang,
                    original=baseline,
                    sensitive=job.sensitive,
                )
                if verdict.ok:
                    return RewriteResult(
                        text, Source.MODEL, usage, tuple(problems), verdict.detection, model
                    )
                problems.append(f"attempt {attempt}: " + "; ".join(verdict.problems))
            if job.policy.on_failure is OnFailure.ORIGINAL:
                return RewriteResult(None, Source.ORIGINAL, usage, tuple(problems), None, model)
        text = self.compose(job)
        after = self._detector.detect(text, prompt=job.request)
        return RewriteResult(text, Source.COMPOSE, usage, tuple(problems), after, model)

    def _model_for(self, job: RewriteJob) -> tuple[str | None, dict[str, Any]]:
        name = job.policy.rewrite_model
        if name is None:
            return None, {}
        if name == UPSTREAM:
            return job.model, self._upstream
        return name, {}

    def _messages(self, job: RewriteJob) -> list[dict[str, Any]]:
        system = {"role": "system", "content": system_prompt(job.policy, job.lang)}
        if job.policy.action is PolicyAction.REGENERATE:
            history = [
                {"role": m.get("role"), "content": m.get("content")}
                for m in job.messages[-CONTEXT_MESSAGES:]
                if m.get("role") in ("user", "assistant")
            ]
            return [system, *history]
        include_reply = job.policy.action is not PolicyAction.EMPATHETIC_BOUNDARY
        users = [content_text(m.get("content")) for m in job.messages if m.get("role") == "user"]
        prompt = user_prompt(
            job.request,
            job.salvaged,
            include_reply=include_reply,
            earlier=users[:-1][-EARLIER_TURNS:],
        )
        return [system, {"role": "user", "content": prompt}]

    @staticmethod
    def _compose_request(job: RewriteJob) -> ComposeRequest:
        return ComposeRequest(
            policy=job.policy,
            lang=job.lang,
            request=job.request,
            reply=job.reply,
            category=job.category,
            salvaged=tuple(job.salvaged),
        )
