"""Finished rewrites, cached so that a repeated request and reply cost no second model call."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from guardrail.store.base import Store
from guardrail.types import Action

logger = logging.getLogger("guardrail")


@dataclass(frozen=True, slots=True)
class CachedRewrite:
    """What a cache hit restores: the text sent, the action it was, and what produced it."""

    text: str
    action: Action
    source: str


class RewriteCache:
    """JSON values in a :class:`Store`, under keys from :func:`~guardrail.store.rewrite_key`.

    The cache only ever saves work, so it fails open: a store that raises, or a value this
    version cannot read, is a miss, never an error on the request.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> CachedRewrite | None:
        try:
            raw = await self.store.get_rewrite(key)
        except Exception:
            logger.warning("rewrite cache read failed; rewriting instead", exc_info=True)
            return None
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            return CachedRewrite(data["text"], Action(data["action"]), data["source"])
        except (TypeError, ValueError, KeyError):
            logger.warning("unreadable rewrite cache entry %s; rewriting instead", key[:12])
            return None

    async def put(self, key: str, rewrite: CachedRewrite) -> None:
        try:
            value = {"text": rewrite.text, "action": rewrite.action.value, "source": rewrite.source}
            await self.store.set_rewrite(key, json.dumps(value, ensure_ascii=False))
        except Exception:
            logger.warning("rewrite cache write failed", exc_info=True)
