"""Calls to the upstream model, all through ``litellm.acompletion``.

Two kinds of route. An OpenAI-compatible upstream (minimal mode, and ``openai/...`` entries of the
model list) gets the client's JSON body verbatim, passed as ``extra_body`` so litellm cannot drop
or rename a field (litellm gets no messages of its own there: the body's replace them anyway),
and its stream is read as the upstream sent it, chunk for chunk. Any other
provider (``anthropic/...``, ``ollama/...``) gets its fields as litellm arguments: litellm
translates the standard OpenAI ones and passes the others on, except names litellm reserves for
itself (``api_base``, ``mock_response``, ``metadata``...), which are dropped so that no client can
steer the proxy's own routing.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import litellm
import openai
from litellm.types.utils import all_litellm_params

from proxy.config import ProxySettings
from proxy.errors import ProxyError

litellm.suppress_debug_info = True

VERBATIM_PROVIDERS = frozenset({"openai"})
"""Providers spoken to in OpenAI's own wire format, where the body can go unchanged."""

TRANSLATED_FIELDS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
"""OpenAI request fields litellm maps onto other providers' APIs."""

RESERVED_FIELDS = (
    frozenset(all_litellm_params)
    | (frozenset(inspect.signature(litellm.acompletion).parameters) - TRANSLATED_FIELDS)
    | {"drop_params", "extra_body", "mock_delay", "messages", "model", "stream"}
)
"""Names litellm would act on itself rather than send to a translated provider."""

log = logging.getLogger("guardrail.proxy")

_NO_KEY = "no-key"  # never let litellm fall back to OPENAI_API_KEY for a third-party base URL


@dataclass(frozen=True, slots=True)
class Route:
    """Where one public model name goes."""

    model: str
    """The litellm model, provider prefix included."""
    params: Mapping[str, Any] = field(default_factory=dict)
    verbatim: bool = True


class Upstream:
    """Resolves model names and calls them; replies come back as OpenAI-shaped dicts."""

    def __init__(self, settings: ProxySettings) -> None:
        self._settings = settings
        self._entries = {entry.model_name: entry for entry in settings.model_list}
        self._http: httpx.AsyncClient | None = None

    def route(self, model_name: str) -> Route:
        entry = self._entries.get(model_name)
        if entry is not None:
            params = entry.litellm_params
            _, provider, _, _ = litellm.get_llm_provider(params.model)
            extra = {"api_base": params.api_base, "api_key": params.resolved_api_key()}
            return Route(
                model=params.model,
                params={k: v for k, v in extra.items() if v is not None} | params.extra_params(),
                verbatim=provider in VERBATIM_PROVIDERS,
            )
        if self._settings.upstream_base_url:
            key = self._settings.upstream_api_key
            return Route(
                model=f"openai/{model_name}",
                params={
                    "api_base": self._settings.upstream_base_url,
                    "api_key": key.get_secret_value() if key else _NO_KEY,
                },
            )
        raise ProxyError(
            404,
            f"The model '{model_name}' does not exist or is not served by this proxy.",
            code="model_not_found",
            param="model",
        )

    async def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A non-streaming reply, in OpenAI's shape without litellm's additions."""
        response = await litellm.acompletion(**self._arguments(body, stream=False))
        return to_openai(response.model_dump(exclude_none=True))

    async def stream(self, body: Mapping[str, Any]) -> ChunkStream:
        """Open a stream; upstream errors before the first chunk raise here."""
        route = self.route(str(body["model"]))
        wrapper = await litellm.acompletion(**self._arguments(body, stream=True, route=route))
        return ChunkStream(wrapper, raw=route.verbatim)

    async def list_models(self) -> list[dict[str, Any]]:
        """Configured names first, then whatever a minimal-mode upstream lists."""
        models = [
            {"id": name, "object": "model", "created": 0, "owned_by": "guardrail"}
            for name in self._entries
        ]
        if self._settings.upstream_base_url:
            known = set(self._entries)
            models += [m for m in await self._upstream_models() if m.get("id") not in known]
        return models

    def rewrite_options(self) -> dict[str, Any]:
        """litellm options that reach the minimal-mode upstream, for policies whose rewrite
        model is the request's own (``rewrite_model: upstream``)."""
        if not self._settings.upstream_base_url:
            return {}
        key = self._settings.upstream_api_key
        return {
            "custom_llm_provider": "openai",
            "api_base": self._settings.upstream_base_url,
            "api_key": key.get_secret_value() if key else _NO_KEY,
        }

    async def rewrite_completion(self, *, model: str, **options: Any) -> Any:
        """``litellm.acompletion`` for rewrite models, with this proxy's model-list names
        resolved to the models behind them; any other name goes to litellm as it is."""
        if model in self._entries:
            route = self.route(model)
            for name in ("custom_llm_provider", "api_base", "api_key"):
                options.pop(name, None)
            options.update(route.params)
            model = route.model
        return await litellm.acompletion(model=model, **options)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    def _arguments(
        self, body: Mapping[str, Any], *, stream: bool, route: Route | None = None
    ) -> dict[str, Any]:
        route = route or self.route(str(body["model"]))
        fields = {k: v for k, v in body.items() if k not in ("model", "stream")}
        arguments: dict[str, Any] = {
            "model": route.model,
            # A verbatim body carries the messages itself and replaces litellm's on the wire;
            # litellm would only convert, copy and log that copy, ~0.15 ms of CPU per message.
            "messages": [] if route.verbatim else body["messages"],
            "stream": stream,
            "timeout": self._settings.upstream_timeout_s,
            "max_retries": self._settings.upstream_max_retries,
            "drop_params": False,
            **route.params,
        }
        if route.verbatim:
            arguments["extra_body"] = fields
            return arguments
        reserved = sorted(k for k in fields if _reserved(k))
        if reserved:
            log.warning("dropped fields litellm reserves for %s: %s", route.model, reserved)
        arguments.update({k: v for k, v in fields.items() if not _reserved(k)})
        # Tools are the client's, not litellm's MCP gateway's: never execute them here.
        arguments["_skip_mcp_handler"] = True
        return arguments

    async def _upstream_models(self) -> list[dict[str, Any]]:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._settings.upstream_timeout_s)
        key = self._settings.upstream_api_key
        headers = {"authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        url = f"{str(self._settings.upstream_base_url).rstrip('/')}/models"
        response = await self._http.get(url, headers=headers)
        if response.status_code != 200:
            raise ProxyError(502, f"upstream model list failed with {response.status_code}")
        try:
            data = response.json()["data"]
        except (ValueError, KeyError, TypeError):
            raise ProxyError(502, "upstream model list is not in OpenAI's shape") from None
        return [m for m in data if isinstance(m, dict)]


class ChunkStream:
    """The upstream's ``chat.completion.chunk`` events as dicts.

    For verbatim routes the chunks are the upstream's own, field for field; litellm's stream
    wrapper would rewrite ``created``, drop ``refusal`` deltas and merge choices. ``aclose`` closes
    the HTTP response, which is how an upstream learns to stop generating.
    """

    def __init__(self, wrapper: Any, *, raw: bool) -> None:
        self._wrapper = wrapper
        source = wrapper.completion_stream
        self._raw = raw and isinstance(source, openai.AsyncStream)
        self._source: AsyncIterator[Any] = source if self._raw else wrapper

    def __aiter__(self) -> ChunkStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        chunk = await self._source.__anext__()
        if self._raw:
            return dict(chunk.model_dump(exclude_unset=True))
        return to_openai(chunk.model_dump(exclude_none=True))

    async def aclose(self) -> None:
        await self._wrapper.aclose()


def _reserved(name: str) -> bool:
    return name not in TRANSLATED_FIELDS and (name in RESERVED_FIELDS or name.startswith("_"))


def to_openai(data: dict[str, Any]) -> dict[str, Any]:
    """Put fields litellm moved into ``provider_specific_fields`` (``refusal``, ``stop_reason``...)
    back where the upstream sent them, and drop the container, which OpenAI does not define."""
    _restore(data)
    for choice in data.get("choices") or ():
        _restore(choice)
        for key in ("message", "delta"):
            if isinstance(choice.get(key), dict):
                _restore(choice[key])
    return data


def _restore(container: dict[str, Any]) -> None:
    moved = container.pop("provider_specific_fields", None)
    if isinstance(moved, dict):
        for key, value in moved.items():
            if value is not None:
                container.setdefault(key, value)
