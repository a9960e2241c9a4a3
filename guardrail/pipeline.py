"""The one pipeline every front door calls: detect, categorise, decide, rewrite.

The proxy (plain and streaming), the command line, the benchmark and the LiteLLM adapter all
hand a reply to :meth:`Guardrail.review`; none of them re-implements a step. Replies that are not
refusals leave after detection alone, which is what keeps pass-through cheap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from guardrail.categories import (
    SENSITIVE_GROUPS,
    CategoryClassifier,
    CategoryEvidence,
    Encoder,
    MemoEncoder,
    default_encoder,
)
from guardrail.policies import (
    LateRefusal,
    MatchContext,
    Policy,
    PolicyAction,
    PolicySet,
    PolicyStore,
    Selection,
    select_policy,
)
from guardrail.rewriting import (
    RefusalDetector,
    RewriteJob,
    Rewriter,
    Source,
    detect_language,
    salvage,
)
from guardrail.rewriting.language import UNDETERMINED
from guardrail.rewriting.model import Completion
from guardrail.settings import GuardrailSettings
from guardrail.store import CachedRewrite, EmbeddingCache, RewriteCache, Store, rewrite_key
from guardrail.types import Action, CategoryScore, Decision, Detection, Message, last_user_text

logger = logging.getLogger("guardrail")

SENSITIVE_FLOOR = 0.5
"""A harm or regulated category this confident makes the actionability check apply, whatever
category the matching policy names."""


@dataclass(frozen=True)
class Trace:
    """What a review saw, for ``guardrail explain``: the decision and the evidence behind it."""

    decision: Decision
    detection: Detection
    lang: str = UNDETERMINED
    evidence: CategoryEvidence | None = None
    selection: Selection | None = None
    problems: tuple[str, ...] = ()
    source: str = ""


@dataclass
class _Runtime:
    """Everything derived from one policy set, rebuilt when the set changes."""

    policies: PolicySet
    classifier: CategoryClassifier
    rewriter: Rewriter


@dataclass
class _Clock:
    started: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)
    _last: float = 0.0

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.marks[name] = round(1000 * (now - (self._last or self.started)), 3)
        self._last = now

    def done(self) -> dict[str, float]:
        self.marks["total"] = round(1000 * (time.perf_counter() - self.started), 3)
        return dict(self.marks)


class Guardrail:
    """Reviews upstream replies and decides what the client receives."""

    def __init__(
        self,
        policies: PolicyStore | PolicySet,
        *,
        detector: RefusalDetector | None = None,
        encoder: Encoder | None = None,
        rewrite_timeout: float = 30.0,
        upstream: Mapping[str, Any] | None = None,
        completion: Completion | None = None,
        cache_dir: Path | None = None,
        store: Store | None = None,
        cache_rewrites: bool = True,
    ) -> None:
        """``upstream``: litellm options (``api_base``, ``api_key``...) for ``rewrite_model:
        upstream``; ``encoder=None`` categorises with keyword rules only; ``cache_dir`` keeps
        exemplar embeddings between runs; ``store`` (see :meth:`attach_store`) caches
        rewrites and request embeddings."""
        self._store = policies if isinstance(policies, PolicyStore) else None
        self._static = policies if isinstance(policies, PolicySet) else None
        self.detector = detector if detector is not None else _default_detector()
        self._encoder = MemoEncoder(encoder) if encoder is not None else None
        self._rewrite_timeout = rewrite_timeout
        self._upstream = dict(upstream or {})
        self._completion = completion
        self._cache_dir = cache_dir
        self._cache_rewrites = cache_rewrites
        self._runtime: _Runtime | None = None
        self._rewrites: RewriteCache | None = None
        self._embeddings: EmbeddingCache | None = None
        if store is not None:
            self.attach_store(store)

    @classmethod
    def from_settings(
        cls,
        settings: GuardrailSettings | None = None,
        *,
        detector: RefusalDetector | None = None,
        upstream: Mapping[str, Any] | None = None,
        completion: Completion | None = None,
        store: Store | None = None,
    ) -> Guardrail:
        """The factory front doors use. Raises :class:`~guardrail.policies.PolicyError` with
        every problem when the policy files are invalid."""
        settings = settings or GuardrailSettings()
        policies = PolicyStore(settings.policies_dir, interval=settings.policy_reload_seconds)
        encoder: Encoder | None = None
        if settings.embeddings:
            encoder = default_encoder()
        return cls(
            policies,
            detector=detector,
            encoder=encoder,
            rewrite_timeout=settings.rewrite_timeout_seconds,
            upstream=upstream,
            completion=completion,
            cache_dir=settings.cache_dir,
            store=store,
            cache_rewrites=settings.cache_rewrites,
        )

    def attach_store(self, store: Store) -> None:
        """Cache finished rewrites and request embeddings in ``store`` (shared across workers
        when it is Redis). The same request, reply, policy version and model then get the
        cached rewrite without a model call."""
        self._rewrites = RewriteCache(store) if self._cache_rewrites else None
        if self._encoder is not None:
            self._embeddings = EmbeddingCache(store, f"{self._encoder.name}/category-query")

    @property
    def policies(self) -> PolicySet:
        """The policy set in force (reloaded first if its files changed)."""
        if self._store is not None:
            return self._store.current
        assert self._static is not None
        return self._static

    def warm_up(self) -> None:
        """Build the category index and load the detector's models now rather than on first use.

        Nothing is rewritten, so warming up never calls a rewrite model.
        """
        self._current()
        self.detector.detect("I'm sorry, but I can't help with that.", prompt="Hello")

    async def review(
        self,
        messages: Sequence[Message],
        reply: str | None,
        *,
        refusal: str | None = None,
        model: str | None = None,
        client_key: str | None = None,
        partial: bool = False,
        streamed: bool = False,
    ) -> Decision:
        """Decide what to do with ``reply``, the assistant text answering ``messages``.

        ``refusal`` is the OpenAI ``message.refusal`` field when the upstream set it.
        ``partial`` marks the opening of a streamed reply, reviewed before the rest arrives;
        a rewrite then replaces the whole stream.
        ``streamed`` marks a complete reply that already went to the client: only the policy's
        ``late_refusal`` setting applies (``Decision.follow_up`` carries any text to append).
        """
        trace = await self.trace(
            messages,
            reply,
            refusal=refusal,
            model=model,
            client_key=client_key,
            partial=partial,
            streamed=streamed,
        )
        return trace.decision

    async def trace(
        self,
        messages: Sequence[Message],
        reply: str | None,
        *,
        refusal: str | None = None,
        model: str | None = None,
        client_key: str | None = None,
        partial: bool = False,
        streamed: bool = False,
    ) -> Trace:
        """:meth:`review`, keeping the evidence (categories, policy checks, rejected rewrites)."""
        clock = _Clock()
        request = last_user_text(messages)
        text = reply or ""
        detection = self.detector.detect(text, prompt=request, messages=messages, refusal=refusal)
        clock.mark("detect")
        try:
            runtime = self._current()
            if not detection.is_refusal and not runtime.policies.reviews_every_reply:
                decision = Decision(
                    Action.PASS,
                    None,
                    reason="not a refusal",
                    before=detection,
                    timings_ms=clock.done(),
                )
                return Trace(decision, detection)
            return await self._decide(
                runtime,
                clock,
                messages,
                request,
                text,
                detection,
                model=model,
                client_key=client_key,
                streamed=streamed,
            )
        except Exception as error:  # the reply must still go out
            logger.exception("review failed; passing the reply through unchanged")
            decision = Decision(
                Action.PASS,
                None,
                reason=f"review failed: {type(error).__name__}: {error}",
                before=detection,
                timings_ms=clock.done(),
            )
            return Trace(decision, detection)

    async def _decide(
        self,
        runtime: _Runtime,
        clock: _Clock,
        messages: Sequence[Message],
        request: str,
        reply: str,
        detection: Detection,
        *,
        model: str | None,
        client_key: str | None,
        streamed: bool,
    ) -> Trace:
        lookups: dict[str, str] = {}
        evidence = await self._categorise(runtime, messages, lookups)
        categories = evidence.scores
        lang = detect_language(request)
        if lang == UNDETERMINED:
            lang = detection.lang
        clock.mark("categorise")
        selection = select_policy(
            runtime.policies,
            MatchContext(categories, detection.strategy, lang, model, client_key),
        )
        clock.mark("match")
        policy = selection.policy
        base: dict[str, Any] = {"before": detection, "categories": categories, "cache": lookups}
        if policy is None:
            decision = Decision(
                Action.PASS, None, reason=selection.reason, timings_ms=clock.done(), **base
            )
            return Trace(decision, detection, lang, evidence, selection)
        category = _topic_category(policy, categories)
        sensitive = _is_sensitive(runtime.policies, category, categories)
        job = RewriteJob(
            policy=policy,
            messages=messages,
            request=request,
            reply=reply,
            detection=detection,
            lang=lang,
            category=category,
            sensitive=sensitive,
            model=model,
            salvaged=tuple(salvage(reply, detection, sensitive=sensitive)),
        )
        if streamed:
            decision = self._late(runtime, policy, job, selection, clock, base)
            return Trace(decision, detection, lang, evidence, selection)
        if policy.action is PolicyAction.BLOCK or (
            policy.action is PolicyAction.KEEP and not policy.warm
        ):
            text = runtime.rewriter.compose(job) if policy.action is PolicyAction.BLOCK else None
            action = Action.BLOCKED if policy.action is PolicyAction.BLOCK else Action.KEPT
            after = self.detector.detect(text, prompt=request) if text else None
            clock.mark("rewrite")
            decision = Decision(
                action,
                text,
                policy.name,
                selection.reason,
                after=after,
                timings_ms=clock.done(),
                **base,
            )
            return Trace(decision, detection, lang, evidence, selection, source="compose")
        # Only model rewrites are cached: compose costs less than a round trip to the store.
        cache = self._rewrites if policy.rewrite_model is not None else None
        key = rewrite_key(messages, reply, policy.name, runtime.policies.version, model)
        cached = await cache.get(key) if cache is not None else None
        if cached is not None:
            lookups["rewrite"] = "hit"
            after = self.detector.detect(cached.text, prompt=request)
            clock.mark("rewrite")
            reason = f"{selection.reason}; rewrite from cache"
            decision = Decision(
                cached.action,
                cached.text,
                policy.name,
                reason,
                after=after,
                timings_ms=clock.done(),
                **base,
            )
            return Trace(decision, detection, lang, evidence, selection, source=cached.source)
        if cache is not None:
            lookups["rewrite"] = "miss"
        result = await runtime.rewriter.rewrite(job)
        clock.mark("rewrite")
        if result.text is None:
            action = Action.FALLBACK
        elif policy.action is PolicyAction.KEEP:
            action = Action.KEPT
        else:
            action = Action.REWRITTEN
        if cache is not None and result.text is not None and not result.problems:
            # A rewrite that needed a fallback is not kept: the next identical request retries.
            await cache.put(key, CachedRewrite(result.text, action, result.source.value))
        reason = selection.reason
        if result.problems:
            fallback = "kept the original" if result.source is Source.ORIGINAL else "composed"
            reason += f"; model rewrite rejected ({' | '.join(result.problems)}), {fallback}"
        decision = Decision(
            action,
            result.text,
            policy.name,
            reason,
            after=result.after,
            usage=result.usage,
            timings_ms=clock.done(),
            **base,
        )
        return Trace(
            decision, detection, lang, evidence, selection, result.problems, result.source.value
        )

    async def _categorise(
        self, runtime: _Runtime, messages: Sequence[Message], lookups: dict[str, str]
    ) -> CategoryEvidence:
        """The request's categories, its embedding taken from the caches when it is there."""
        query = runtime.classifier.query(messages)
        encoder, shared = self._encoder, self._embeddings
        if encoder is None or not query.strip():
            return await asyncio.to_thread(runtime.classifier.explain, messages)
        if encoder.get(query) is None and shared is not None:
            (found,) = await shared.get_many([query])
            if found is not None:
                encoder.remember([query], found[np.newaxis])
        lookups["embedding"] = "hit" if encoder.get(query) is not None else "miss"
        evidence = await asyncio.to_thread(runtime.classifier.explain, messages)
        vector = encoder.get(query)
        if lookups["embedding"] == "miss" and shared is not None and vector is not None:
            await shared.put_many([query], vector[np.newaxis])
        return evidence

    def _late(
        self,
        runtime: _Runtime,
        policy: Policy,
        job: RewriteJob,
        selection: Selection,
        clock: _Clock,
        base: dict[str, Any],
    ) -> Decision:
        """A refusal found only after the reply was streamed: the text can no longer change."""
        reason = f"late refusal ({policy.late_refusal.value}); {selection.reason}"
        if policy.late_refusal is LateRefusal.APPEND:
            follow_up = runtime.rewriter.follow_up(job)
            return Decision(
                Action.REWRITTEN,
                None,
                policy.name,
                reason,
                follow_up=follow_up,
                timings_ms=clock.done(),
                **base,
            )
        if policy.late_refusal is LateRefusal.LEAVE:
            return Decision(Action.KEPT, None, policy.name, reason, timings_ms=clock.done(), **base)
        return Decision(Action.PASS, None, None, reason, timings_ms=clock.done(), **base)

    def _current(self) -> _Runtime:
        policies = self.policies
        if self._runtime is None or self._runtime.policies.version != policies.version:
            self._runtime = _Runtime(
                policies,
                CategoryClassifier(policies.categories, self._encoder, cache_dir=self._cache_dir),
                Rewriter(
                    policies,
                    self.detector,
                    timeout=self._rewrite_timeout,
                    upstream=self._upstream,
                    completion=self._completion,
                ),
            )
        return self._runtime


def _topic_category(policy: Policy, categories: Sequence[CategoryScore]) -> str | None:
    """The category the rewrite is about: the best-scoring one the policy names."""
    wanted = set(policy.match.categories)
    for score in categories:
        if not wanted or score.name in wanted:
            return score.name
    return None


def _is_sensitive(
    policies: PolicySet, category: str | None, categories: Sequence[CategoryScore]
) -> bool:
    if category is not None and policies.group_of(category) in SENSITIVE_GROUPS:
        return True
    return any(
        c.score >= SENSITIVE_FLOOR and policies.group_of(c.name) in SENSITIVE_GROUPS
        for c in categories
    )


def _default_detector() -> RefusalDetector:
    from guardrail.detection import Detector

    detector: RefusalDetector = Detector()
    return detector
