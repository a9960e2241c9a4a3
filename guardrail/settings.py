"""Core settings, read from ``GUARDRAIL_*`` environment variables (or passed in directly)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_policies_dir() -> Path:
    """The bundled policy set; another is chosen explicitly, never by the working directory."""
    return Path(__file__).resolve().parent.parent / "policies"


def default_cache_dir() -> Path:
    """Where derived data (exemplar embeddings, language tables) is kept between runs:
    ``$XDG_CACHE_HOME/guardrail``, or ``~/.cache/guardrail`` when that is unset or relative
    (which the XDG spec says to ignore)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "guardrail"


class GuardrailSettings(BaseSettings):
    """What the core needs to build a :class:`~guardrail.Guardrail`."""

    model_config = SettingsConfigDict(
        env_prefix="GUARDRAIL_", extra="ignore", populate_by_name=True
    )

    policies_dir: Path = Field(
        default_factory=default_policies_dir,
        validation_alias=AliasChoices(
            "policies_dir", "GUARDRAIL_POLICIES", "GUARDRAIL_POLICIES_DIR"
        ),
    )
    policy_reload_seconds: float | None = Field(default=2.0, ge=0)
    """How often to look for edited policy files; ``None`` never reloads."""
    embeddings: bool = True
    """Use the sentence-embedding model for categories (keyword rules only when off)."""
    rewrite_timeout_seconds: float = Field(default=30.0, gt=0)
    cache_dir: Path | None = Field(default_factory=default_cache_dir)
    """Exemplar embeddings are cached here; ``None`` keeps nothing on disk."""
    cache_rewrites: bool = True
    """Reuse the rewrite of an identical request, reply, policy version and model from the
    store (off: every refusal is rewritten afresh, e.g. for sampled variety)."""
