"""Prometheus metrics for ``GET /metrics``: this worker's own series plus the store's shared ones.

Each app gets its own registry, so several apps in one process (tests, embedding) never collide.
With several uvicorn workers each worker's ``guardrail_*`` series count only its own traffic; the
``guardrail_shared_*`` series are read from the store at scrape time and are the same, cross-worker
totals whichever worker answers the scrape.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from guardrail.store import CounterKey, Store
from guardrail.types import Action, Decision

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_OVERHEAD_BUCKETS = (
    *(0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1),
    *(0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


class ProxyMetrics:
    """The proxy's series; :meth:`render` produces the exposition text."""

    def __init__(self, store: Store) -> None:
        self.registry = CollectorRegistry()
        self._store = store
        self._shared = _StoreCollector(store)
        self.registry.register(self._shared)
        self.requests = Counter(
            "guardrail_http_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "guardrail_http_request_duration_seconds",
            "Time from request to the last byte of the response.",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.overhead = Histogram(
            "guardrail_overhead_seconds",
            "Time a chat request spent in guardrail reviews (detection, policy, rewriting).",
            ["stream"],
            buckets=_OVERHEAD_BUCKETS,
            registry=self.registry,
        )
        self.refusals = Counter(
            "guardrail_refusals_detected",
            "Upstream replies detected as refusals, by strategy.",
            ["strategy"],
            registry=self.registry,
        )
        self.rewrites = Counter(
            "guardrail_rewrites",
            "Replies a policy acted on (every action but pass), by policy, action and language.",
            ["policy", "action", "language"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "guardrail_fallbacks",
            "Rewrites that failed verification and fell back to the original reply.",
            ["policy"],
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            "guardrail_upstream_errors",
            "Upstream calls that failed before a reply, by the status sent to the client.",
            ["status"],
            registry=self.registry,
        )
        self.cache_lookups = Counter(
            "guardrail_cache_lookups",
            "Rewrite and request-embedding cache lookups, by cache and result (hit or miss).",
            ["cache", "result"],
            registry=self.registry,
        )
        self.stream_errors = Counter(
            "guardrail_upstream_stream_errors",
            "Streams the upstream broke after the response began (ended with an error event), "
            "by the status the error event carries.",
            ["status"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "guardrail_rate_limited",
            "Requests refused with 429 by the per-client rate limit.",
            registry=self.registry,
        )

    def observe_decision(self, decision: Decision) -> None:
        before = decision.before
        if before is not None and before.is_refusal:
            self.refusals.labels(strategy=before.strategy.value).inc()
        if decision.action is not Action.PASS:
            language = before.lang if before is not None else "und"
            self.rewrites.labels(
                policy=decision.policy or "none", action=decision.action.value, language=language
            ).inc()
        if decision.action is Action.FALLBACK:
            self.fallbacks.labels(policy=decision.policy or "none").inc()
        for cache, result in decision.cache.items():
            self.cache_lookups.labels(cache=cache, result=result).inc()

    async def render(self) -> bytes:
        """The exposition text, with the shared counters read from the store now."""
        self._shared.snapshot = await self._store.counters()
        return generate_latest(self.registry)


class _StoreCollector(Collector):
    """The store's health and its shared counters, as last read by :meth:`ProxyMetrics.render`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.snapshot: Mapping[CounterKey, int] = {}

    def collect(self) -> Iterator[Metric]:
        status = self._store.status()
        degraded = GaugeMetricFamily(
            "guardrail_store_degraded",
            "1 while Redis is unreachable and the store serves from memory.",
            labels=["backend"],
        )
        degraded.add_metric([status.backend], 1.0 if status.degraded else 0.0)
        yield degraded
        outages = CounterMetricFamily(
            "guardrail_store_outages", "Redis outages this worker has seen.", labels=["backend"]
        )
        outages.add_metric([status.backend], float(status.outages))
        yield outages
        yield from _shared_families(self.snapshot)


def _shared_families(counts: Mapping[CounterKey, int]) -> Iterator[Metric]:
    by_name: dict[str, list[tuple[dict[str, str], int]]] = {}
    for key, value in counts.items():
        by_name.setdefault(key.name, []).append((dict(key.labels), value))
    for name, rows in sorted(by_name.items()):
        label_names = sorted({label for labels, _ in rows for label in labels})
        family = CounterMetricFamily(
            f"guardrail_shared_{name}",
            f"Shared {name.replace('_', ' ')} across every worker using the store.",
            labels=label_names,
        )
        for labels, value in rows:
            family.add_metric([labels.get(label, "") for label in label_names], float(value))
        yield family
