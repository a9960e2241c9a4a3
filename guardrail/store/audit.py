"""The opt-in audit trail of guardrail decisions.

An entry says who (a key id, never the key), which model, what the request was about, how the
reply was classified before and after, and what the guardrail did. Texts are recorded only when
configured, with secrets always masked and personal data masked when ``redact`` is on.
Upstream provider keys never reach this module: nothing here accepts them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardrail.store.keys import key_id
from guardrail.store.redaction import mask_secrets, redact
from guardrail.types import Decision, Message, last_user_text

if TYPE_CHECKING:
    from guardrail.store.base import Store


@dataclass(frozen=True, slots=True)
class AuditConfig:
    enabled: bool = False
    include_text: bool = False
    """Record the latest user turn, the upstream reply and the rewrite."""
    redact: bool = True
    """Mask emails, phone numbers and long digit runs in recorded texts."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One decision as stored in the audit stream."""

    time: float
    key_id: str
    model: str
    action: str
    policy: str | None = None
    categories: tuple[str, ...] = ()
    strategy_before: str | None = None
    strategy_after: str | None = None
    request_id: str | None = None
    request: str | None = None
    reply: str | None = None
    rewrite: str | None = None

    def to_fields(self) -> dict[str, str]:
        """Flat string fields, as a Redis stream entry holds them; absent values are left out."""
        fields = {
            "time": repr(self.time),
            "key_id": self.key_id,
            "model": self.model,
            "action": self.action,
            "categories": json.dumps(list(self.categories)),
        }
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        return fields

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> AuditEntry:
        return cls(
            time=float(fields["time"]),
            key_id=fields["key_id"],
            model=fields["model"],
            action=fields["action"],
            categories=tuple(json.loads(fields.get("categories", "[]"))),
            **{name: fields.get(name) for name in _OPTIONAL},
        )


_OPTIONAL = (
    "policy",
    "strategy_before",
    "strategy_after",
    "request_id",
    "request",
    "reply",
    "rewrite",
)


def audit_entry(
    decision: Decision,
    *,
    config: AuditConfig,
    client_key: str | None,
    model: str | None,
    messages: Sequence[Message] = (),
    reply: str | None = None,
    request_id: str | None = None,
    now: float | None = None,
) -> AuditEntry:
    """Build the entry for one decision, applying the configured text and redaction rules."""
    clean = redact if config.redact else mask_secrets

    def text(value: str | None) -> str | None:
        return clean(value) if config.include_text and value is not None else None

    return AuditEntry(
        time=time.time() if now is None else now,
        key_id=key_id(client_key) if client_key else "anonymous",
        model=model or "",
        action=decision.action.value,
        policy=decision.policy,
        categories=tuple(c.name for c in decision.categories),
        strategy_before=decision.before.strategy.value if decision.before else None,
        strategy_after=decision.after.strategy.value if decision.after else None,
        request_id=request_id,
        request=text(last_user_text(messages)),
        reply=text(reply),
        rewrite=text(decision.text),
    )


class Auditor:
    """Writes decisions to a store's audit stream when auditing is enabled; a no-op otherwise."""

    def __init__(self, store: Store, config: AuditConfig) -> None:
        self.store = store
        self.config = config

    async def record(
        self,
        decision: Decision,
        *,
        client_key: str | None,
        model: str | None,
        messages: Sequence[Message] = (),
        reply: str | None = None,
        request_id: str | None = None,
    ) -> None:
        if not self.config.enabled:
            return
        entry = audit_entry(
            decision,
            config=self.config,
            client_key=client_key,
            model=model,
            messages=messages,
            reply=reply,
            request_id=request_id,
        )
        await self.store.append_audit(entry)
