"""The FastAPI app: OpenAI's chat completions and models endpoints in front of the guardrail.

Thin on purpose: each route parses, authenticates, calls the upstream and hands the reply to the
guardrail through :mod:`proxy.review` or :mod:`proxy.streaming`; nothing here judges a reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from guardrail import Guardrail, GuardrailSettings
from guardrail.store import AuditConfig, Store, key_id, open_store
from proxy.access import AccessMiddleware, request_record
from proxy.accounting import Accounting
from proxy.auth import authenticate
from proxy.config import ProxySettings, load_settings
from proxy.errors import from_exception, install_handlers
from proxy.limits import RequestLimits
from proxy.metrics import CONTENT_TYPE, ProxyMetrics
from proxy.request_id import STATE_KEY as REQUEST_ID
from proxy.request_id import RequestIdMiddleware
from proxy.review import bind_review, guardrail_headers, review_completion
from proxy.schema import chat_request_openapi, parse_chat_request
from proxy.streaming import GuardedStream
from proxy.upstream import Upstream
from proxy.window import DecisionWindow

log = logging.getLogger("guardrail.proxy")

T = TypeVar("T")


def build_guardrail(settings: ProxySettings) -> Guardrail:
    """The pipeline the proxy serves with; raises ``PolicyError`` if the policy set is invalid.

    Rewrite models named ``upstream`` in a policy reach the same upstream as the request.
    """
    upstream = Upstream(settings)
    core = (
        GuardrailSettings()
        if settings.policies is None
        else (GuardrailSettings(policies_dir=settings.policies))
    )
    return Guardrail.from_settings(
        core, upstream=upstream.rewrite_options(), completion=upstream.rewrite_completion
    )


def create_app(
    settings: ProxySettings, guardrail: Guardrail | None = None, *, store: Store | None = None
) -> FastAPI:
    """The proxy for ``settings``; ``guardrail`` defaults to :func:`build_guardrail`.

    ``store`` defaults to one opened from ``settings.redis_url`` and closed at shutdown; a store
    passed in stays open, as its owner may share it. The pipeline caches rewrites in it.
    """
    pipeline = guardrail if guardrail is not None else build_guardrail(settings)
    upstream = Upstream(settings)
    window = DecisionWindow.from_settings(settings)
    keys = settings.client_key_digests()
    metrics_keys = settings.metrics_key_digests()
    owns_store = store is None
    state_store = store if store is not None else open_store(settings.redis_url)
    pipeline.attach_store(state_store)
    metrics = ProxyMetrics(state_store)
    accounting = Accounting(
        state_store,
        metrics,
        rate_limit_per_minute=settings.rate_limit_per_minute,
        audit=AuditConfig(
            enabled=settings.audit, include_text=settings.audit_text, redact=settings.audit_redact
        ),
    )
    limits = RequestLimits(
        max_body_bytes=settings.max_body_bytes,
        max_messages=settings.max_messages,
        max_depth=settings.max_json_depth,
    )
    state: dict[str, Any] = {"ready": False, "problem": "warming up"}

    async def warm_up() -> None:
        # Models and indexes load lazily; loading them before traffic keeps that off a request.
        try:
            await asyncio.to_thread(pipeline.warm_up)
        except Exception as exc:
            state["problem"] = f"guardrail warm-up failed: {exc}"
            log.exception("guardrail warm-up failed")
            return
        state.update(ready=True, problem=None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(warm_up())
        try:
            yield
        finally:
            task.cancel()
            await upstream.aclose()
            if owns_store:
                await state_store.aclose()

    app = FastAPI(title="guardrail", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(AccessMiddleware, metrics=metrics)
    install_handlers(app)

    async def call_upstream(call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as exc:
            metrics.upstream_errors.labels(status=str(from_exception(exc).status)).inc()
            raise

    def count_stream_error(error: Exception) -> None:
        metrics.stream_errors.labels(status=str(from_exception(error).status)).inc()

    @app.post("/v1/chat/completions", openapi_extra=chat_request_openapi())
    async def chat_completions(request: Request) -> Response:
        client_key = authenticate(request.headers.get("authorization"), keys)
        record = request_record(request.scope)
        record.key_id = key_id(client_key) if client_key else None
        address = request.client.host if request.client else "unknown"
        await accounting.admit(client_key or address)
        body, chat = parse_chat_request(await limits.read_body(request), limits)
        record.model, record.stream = chat.model, bool(chat.stream)
        review = accounting.watch(
            bind_review(pipeline, chat.messages, model=chat.model, client_key=record.key_id),
            record,
            messages=chat.messages,
            client_key=client_key,
            request_id=request.scope.get("state", {}).get(REQUEST_ID),
        )
        if chat.stream:
            stream = GuardedStream(
                await call_upstream(upstream.stream(body)),
                review=review,
                window=window,
                include_usage=chat.include_usage,
                on_error=count_stream_error,
            )
            decision = await stream.decide()
            return stream.response(guardrail_headers([decision]))
        reply = await call_upstream(upstream.complete(body))
        decisions = await review_completion(reply, review)
        return Response(
            json.dumps(reply, ensure_ascii=False, separators=(",", ":")),
            media_type="application/json",
            headers=guardrail_headers(decisions),
        )

    @app.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        authenticate(request.headers.get("authorization"), keys)
        return JSONResponse({"object": "list", "data": await upstream.list_models()})

    @app.get("/metrics")
    async def metrics_endpoint(request: Request) -> Response:
        authenticate(request.headers.get("authorization"), metrics_keys)
        return Response(await metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        # A degraded store still serves every request (from memory), so it is reported, not
        # made a reason to take the worker out of rotation.
        health = state_store.status()
        store = {"backend": health.backend, "degraded": health.degraded, "outages": health.outages}
        if state["ready"]:
            return JSONResponse({"status": "ready", "store": store})
        return JSONResponse(
            {"status": "not ready", "reason": state["problem"], "store": store}, status_code=503
        )

    return app


def app_from_environment() -> FastAPI:
    """The uvicorn factory for ``guardrail serve``: settings from ``$GUARDRAIL_CONFIG`` and env."""
    return create_app(load_settings())
