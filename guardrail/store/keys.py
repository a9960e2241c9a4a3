"""Cache keys and client ids derived by SHA-256, so no stored key ever contains raw text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from guardrail.types import Message


def _digest(value: Any) -> str:
    # Canonical JSON keeps the key stable across dict orderings and free of field-boundary
    # ambiguity ("ab" + "c" and "a" + "bc" hash differently).
    canonical = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def rewrite_key(
    messages: Sequence[Message],
    reply: str,
    policy: str,
    policy_version: str,
    model: str | None = None,
) -> str:
    """The rewrite-cache key: one per request, upstream reply, policy version and model.

    The version is part of the key so that editing a policy invalidates its cached rewrites;
    the requested model, because a policy may rewrite with it.
    """
    return _digest(["rewrite/2", [dict(m) for m in messages], reply, policy, policy_version, model])


def embedding_key(model: str, text: str) -> str:
    """The embedding-cache key: vectors from different models never collide."""
    return _digest(["embedding/1", model, text])


def key_id(client_key: str) -> str:
    """A stable, non-reversible id for a client key, safe to log, audit and use in key names."""
    return "key_" + hashlib.sha256(client_key.encode("utf-8")).hexdigest()[:16]
