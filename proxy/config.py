"""Proxy settings: environment variables over an optional YAML file over defaults.

The YAML file uses the field names below as keys; every field also reads ``GUARDRAIL_<NAME>``
from the environment (``REDIS_URL`` for the store), and the environment wins so that one file can
serve several deployments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from proxy.auth import key_digests

CONFIG_ENV = "GUARDRAIL_CONFIG"
"""Names the YAML file when no path is given, so that every uvicorn worker loads the same file."""

ENV_KEY_PREFIX = "os.environ/"


class ConfigError(Exception):
    """The settings could not be loaded; the message says what is wrong and where."""


class LitellmParams(BaseModel):
    """How to reach one model through litellm, as in LiteLLM's own ``model_list``.

    Fields beyond these (``api_version``, ``organization``, ...) go to litellm unchanged.
    """

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, description="litellm model, e.g. openai/gpt-4o-mini")
    api_base: str | None = None
    api_key: SecretStr | None = None
    """A literal key, or ``os.environ/NAME`` to read it from the environment at call time."""
    api_key_env: str | None = None

    def resolved_api_key(self) -> str | None:
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        if self.api_key is None:
            return None
        key = self.api_key.get_secret_value()
        if key.startswith(ENV_KEY_PREFIX):
            return os.environ.get(key.removeprefix(ENV_KEY_PREFIX))
        return key

    def extra_params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ModelEntry(BaseModel):
    """One public model name and the litellm model behind it."""

    model_config = ConfigDict(extra="forbid")

    model_name: str = Field(min_length=1)
    litellm_params: LitellmParams


class ProxySettings(BaseSettings):
    """Everything ``guardrail serve`` needs to know."""

    model_config = SettingsConfigDict(env_prefix="GUARDRAIL_", extra="forbid")

    upstream_base_url: str | None = None
    """Minimal mode: every model name is forwarded as-is to this OpenAI-compatible server."""
    upstream_api_key: SecretStr | None = None
    model_list: list[ModelEntry] = Field(default_factory=list)
    """Full mode: public model names mapped to litellm models; checked before the base URL."""
    policies: Path | None = None
    """Policy directory; ``None`` uses the bundled policies."""
    api_keys: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    """Client keys accepted as ``Authorization: Bearer``, in clear or as ``sha256:<hex>``
    (``guardrail hash-key``); empty means no authentication."""
    metrics_keys: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    """Keys a scraper must present to read ``/metrics`` (same forms); empty leaves it open."""
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("redis_url", "REDIS_URL")
    )
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)
    """Requests per minute per client key (per address without keys); ``None`` is no limit."""
    audit: bool = False
    """Record every decision in the store's audit stream."""
    audit_text: bool = False
    """Include the user turn, the reply and the rewrite in audit entries."""
    audit_redact: bool = True
    """Mask emails, phone numbers and long digit runs in audited texts."""
    max_body_bytes: int = Field(default=1_048_576, ge=1)
    max_messages: int = Field(default=1_000, ge=1)
    max_json_depth: int = Field(default=64, ge=2)
    keep_alive_s: int = Field(default=75, ge=1)
    """How long an idle client connection stays open. Longer than clients' own idle limits
    (httpx and the openai SDK: 5 s), so the client closes first and never sends a request into
    a connection the server is closing."""
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    upstream_timeout_s: float = Field(default=600.0, gt=0)
    upstream_max_retries: int = Field(default=0, ge=0)
    """Retries are left to clients by default, so one failure is never multiplied."""
    stream_window_chars: int = Field(default=100, ge=1)
    stream_window_ms: float = Field(default=1000.0, ge=0)
    stream_window_sentence: bool = True
    """Close the decision window at the end of the first sentence."""
    stream_fast_pass: bool = True
    """Pass a stream at once when its first word cannot open a refusal."""

    @field_validator("api_keys", "metrics_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(key.strip() for key in value.split(",") if key.strip())
        return value

    @field_validator("api_keys", "metrics_keys")
    @classmethod
    def _check_hashed_keys(cls, value: tuple[SecretStr, ...]) -> tuple[SecretStr, ...]:
        key_digests(key.get_secret_value() for key in value)
        return value

    @model_validator(mode="after")
    def _needs_an_upstream(self) -> ProxySettings:
        if not self.upstream_base_url and not self.model_list:
            raise ValueError(
                "no upstream configured: set GUARDRAIL_UPSTREAM_BASE_URL (or upstream_base_url "
                "in the config file) or give a model_list"
            )
        names = [entry.model_name for entry in self.model_list]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"model_list names must be unique; repeated: {duplicates}")
        return self

    def client_key_digests(self) -> tuple[bytes, ...]:
        return key_digests(key.get_secret_value() for key in self.api_keys)

    def metrics_key_digests(self) -> tuple[bytes, ...]:
        return key_digests(key.get_secret_value() for key in self.metrics_keys)


def load_settings(config_file: Path | None = None) -> ProxySettings:
    """Settings from ``config_file`` (or ``$GUARDRAIL_CONFIG``) with the environment on top."""
    path = config_file or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    file_values = _read_yaml(path) if path else {}
    try:
        env_values = EnvSettingsSource(ProxySettings)()
        return ProxySettings(**_deep_merge(file_values, env_values))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None
    except ValueError as exc:  # an environment value that is not even parseable
        raise ConfigError(f"invalid environment setting: {exc}") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" (line {mark.line + 1}, column {mark.column + 1})"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping of setting names to values")
    return data


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(exc: ValidationError, path: Path | None) -> str:
    source = f"config file {path} and environment" if path else "environment"
    lines = [f"invalid settings ({source}):"]
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "settings"
        lines.append(f"  {location}: {error['msg']}")
    return "\n".join(lines)
