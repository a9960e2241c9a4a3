"""Compose: the offline, deterministic rewrite built from a policy's templates.

No model is involved, so compose never adds knowledge it does not have: it acknowledges the
request (naming its topic), carries over the informative sentences of the original reply,
adds the policy's general information and resources, and closes with a boundary and an offer.
Variants are picked by a hash of the request and reply, so a given input always gets the same
text while different inputs read differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from guardrail.policies.loader import FALLBACK_LANGUAGE
from guardrail.policies.policyset import PolicySet
from guardrail.policies.schema import Policy, PolicyAction, Resource
from guardrail.rewriting.topic import english_topic

UNSPACED_LANGUAGES = frozenset({"zh", "ja"})
"""Languages whose sentences are joined without a space."""


@dataclass(frozen=True, slots=True)
class ComposeRequest:
    """Everything compose needs about one reply."""

    policy: Policy
    lang: str
    request: str
    reply: str
    category: str | None = None
    salvaged: Sequence[str] = field(default_factory=tuple)


class Composer:
    """Fills a policy's templates; one per policy set."""

    def __init__(self, policy_set: PolicySet) -> None:
        self._set = policy_set

    def language(self, policy: Policy, lang: str) -> str:
        """``lang`` if there is wording for this action in it, else the fallback language."""
        base = lang.split("-")[0].lower()
        if self._set.templates.get(base, {}).get(policy.action) or policy.templates.get(base):
            return base
        return FALLBACK_LANGUAGE

    def compose(self, job: ComposeRequest) -> str:
        """The full replacement text for the reply."""
        filler = _Filler(self._set, job, self.language(job.policy, job.lang))
        action = job.policy.action
        if action is PolicyAction.BLOCK:
            return filler.slot("message") or ""
        if action is PolicyAction.EMPATHETIC_BOUNDARY:
            paragraphs = [
                filler.sentences("validate", "ai_honesty"),
                filler.sentences("offer", "connection"),
                filler.resources(),
            ]
        elif action is PolicyAction.KEEP:
            paragraphs = [
                filler.sentences("acknowledge_general", "boundary"),
                filler.general_info(),
                filler.resources(),
                filler.sentences("offer"),
            ]
        elif action is PolicyAction.REGENERATE:
            paragraphs = [
                filler.acknowledge(use_label=False),
                filler.join(job.salvaged),
                filler.sentences("limit", "offer"),
            ]
        else:
            closing = (
                ("boundary", "offer")
                if action is PolicyAction.PARTIAL_COMPLIANCE
                else ("redirect", "offer")
            )
            paragraphs = [
                filler.acknowledge(use_label=True) + filler.gap() + filler.join(job.salvaged),
                filler.general_info(),
                filler.resources(),
                filler.sentences(*closing),
            ]
        return _fit([p.strip() for p in paragraphs if p.strip()], job.policy.max_chars)

    def follow_up(self, job: ComposeRequest) -> str:
        """A short addition for a streamed reply whose refusal was already sent."""
        filler = _Filler(self._set, job, self.language(job.policy, job.lang))
        action = job.policy.action
        if action is PolicyAction.EMPATHETIC_BOUNDARY:
            parts = [filler.sentences("offer", "connection"), filler.resources()]
        elif action is PolicyAction.BLOCK:
            parts = [filler.slot("message") or ""]
        else:
            parts = [filler.general_info(), filler.resources(), filler.sentences("offer")]
        return _fit([p.strip() for p in parts if p.strip()], job.policy.max_chars)


class _Filler:
    def __init__(self, policy_set: PolicySet, job: ComposeRequest, lang: str) -> None:
        self._set = policy_set
        self._job = job
        self.lang = lang
        self._seed = f"{job.request}\0{job.reply}\0{job.policy.name}"

    def gap(self) -> str:
        return "" if self.lang in UNSPACED_LANGUAGES else " "

    def join(self, sentences: Sequence[str]) -> str:
        return self.gap().join(s.strip() for s in sentences if s and s.strip())

    def slot(self, slot: str) -> str | None:
        variants = self._variants(slot)
        if not variants:
            return None
        digest = hashlib.sha256(f"{self._seed}\0{slot}".encode()).digest()
        return variants[int.from_bytes(digest[:4], "big") % len(variants)]

    def sentences(self, *slots: str) -> str:
        return self.join([text for slot in slots if (text := self.slot(slot))])

    def acknowledge(self, *, use_label: bool) -> str:
        topic = self._topic(use_label)
        template = self.slot("acknowledge") if topic else None
        if template and topic:
            return template.format(topic=topic)
        return self.slot("acknowledge_general") or ""

    def general_info(self) -> str:
        return self.join(self._job.policy.general_info.get(self.lang, ()))

    def resources(self) -> str:
        items: list[Resource] = [
            *self._job.policy.resources.get(self.lang, ()),
            *self._job.policy.resources.get("all", ()),
        ]
        if not items:
            return ""
        lines = [
            f"- {item.name}: {item.contact}" + (f" ({item.region})" if item.region else "")
            for item in items
        ]
        intro = self.slot("resources_intro")
        return "\n".join([intro, *lines] if intro else lines)

    def _topic(self, use_label: bool) -> str | None:
        category = self._job.category
        spec = self._set.categories.get(category) if category else None
        if spec is not None and spec.echo_topic and self.lang == "en":
            phrase = english_topic(self._job.request)
            if phrase:
                return phrase
        if use_label and spec is not None:
            return spec.label.get(self.lang)
        return None

    def _variants(self, slot: str) -> list[str]:
        policy, action, category = self._job.policy, self._job.policy.action, self._job.category
        own = policy.templates.get(self.lang, {})
        shared: Mapping[str, list[str]] = self._set.templates.get(self.lang, {}).get(action, {})
        keys = [f"{slot}.{category}", slot] if category else [slot]
        for key in keys:
            for source in (own, shared):
                if source.get(key):
                    return source[key]
        return []


def _fit(paragraphs: list[str], max_chars: int) -> str:
    """Join paragraphs, dropping middle ones (never the first or last) until it fits."""
    while len(paragraphs) > 2 and len("\n\n".join(paragraphs)) > max_chars:
        paragraphs.pop(-2)
    return "\n\n".join(paragraphs)
