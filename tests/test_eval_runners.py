"""Runners: replay through the pipeline, live against a respx-mocked model and proxy, resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from eval.cache import ResponseCache, cache_key
from eval.datasets import Expected, Record, ReplyOrigin
from eval.llm import RetryPolicy, proxy_base_url, proxy_model_name
from eval.runners import LiveRunner, ReplayRunner
from guardrail import Guardrail
from guardrail.store import Store
from guardrail.types import Action, Decision, Message, Usage

UPSTREAM = "http://upstream.test/v1"
PROXY = "http://proxy.test"
MODEL = "openai/stub"
NO_WAIT = RetryPolicy(attempts=3, base_delay_s=0)


class RewritingGuardrail(Guardrail):
    """A pipeline double: rewrites replies that open with an apology, passes the rest."""

    def __init__(self) -> None:
        self.seen: list[tuple[str | None, str | None]] = []

    def attach_store(self, store: Store) -> None:
        """The double caches nothing."""

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
        self.seen.append((reply, model))
        if reply and reply.startswith("I'm sorry"):
            return Decision(
                action=Action.REWRITTEN,
                text="Here is what I can say in general.",
                policy="test-policy",
                usage=Usage(prompt_tokens=12, completion_tokens=8),
            )
        return Decision(action=Action.PASS, text=None)


def _records(n: int, *, reply: str | None = None) -> list[Record]:
    return [
        Record(
            dataset="set",
            id=str(i),
            prompt=f"question {i}",
            lang="en",
            category="benign",
            expected=Expected.SHOULD_COMPLY,
            reply=reply,
            reply_origin=ReplyOrigin.RECORDED if reply else None,
            source_model="recorded-model" if reply else None,
        )
        for i in range(n)
    ]


def _chat(content: str, *, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        200,
        headers=headers,
        json={
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "stub",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        },
    )


def _answer(request: httpx.Request) -> httpx.Response:
    """Refuse even-numbered questions, answer odd ones."""
    question = json.loads(request.content)["messages"][-1]["content"]
    number = int(question.split()[-1])
    return _chat("I'm sorry, I can't." if number % 2 == 0 else f"Answer to {number}.")


def _live(cache: ResponseCache, **kwargs: Any) -> LiveRunner:
    return LiveRunner(
        MODEL,
        cache=cache,
        retry=NO_WAIT,
        concurrency=3,
        api_base=UPSTREAM,
        api_key="test",
        **kwargs,
    )


async def test_replay_runs_recorded_replies_through_the_pipeline() -> None:
    guardrail = RewritingGuardrail()
    records = _records(2, reply="I'm sorry, I can't.") + _records(1, reply="Sure, here it is.")
    ticks: list[int] = []
    result = await ReplayRunner(guardrail).run(records, lambda: ticks.append(1))
    assert len(result.outcomes) == 3 and not result.failures
    assert len(ticks) == 3
    rewritten, _, passed = result.outcomes
    assert (rewritten.action, rewritten.after, rewritten.policy) == (
        "rewritten",
        "Here is what I can say in general.",
        "test-policy",
    )
    assert rewritten.changed and rewritten.rewrite_usage == Usage(12, 8)
    assert rewritten.added_latency_ms is not None and rewritten.added_latency_ms >= 0
    assert (passed.action, passed.after, passed.changed) == ("pass", "Sure, here it is.", False)
    assert guardrail.seen[0] == ("I'm sorry, I can't.", None)  # no model to rewrite with


async def test_replay_reports_pipeline_errors_as_failures() -> None:
    class Broken(RewritingGuardrail):
        async def review(self, *args: Any, **kwargs: Any) -> Decision:
            raise RuntimeError("policy engine down")

    result = await ReplayRunner(Broken()).run(_records(2, reply="x"))
    assert result.outcomes == []
    assert [f.stage for f in result.failures] == ["guardrail", "guardrail"]
    assert "policy engine down" in result.failures[0].message


async def test_live_in_process_then_resume_from_cache_without_calls(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    records = _records(4)
    guardrail = RewritingGuardrail()
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        result = await _live(ResponseCache(path), guardrail=guardrail).run(records)
    assert route.call_count == 4
    assert [o.action for o in result.outcomes] == ["rewritten", "pass", "rewritten", "pass"]
    assert result.outcomes[1].before == result.outcomes[1].after == "Answer to 1."
    assert result.outcomes[0].record.source_model == MODEL
    assert {model for _, model in guardrail.seen} == {MODEL}
    assert result.outcomes[0].rewrite_usage == Usage(12, 8)

    guardrail = RewritingGuardrail()
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        again = await _live(ResponseCache(path), guardrail=guardrail).run(records)
    assert route.call_count == 0
    assert guardrail.seen == []
    assert [(o.before, o.after, o.action) for o in again.outcomes] == [
        (o.before, o.after, o.action) for o in result.outcomes
    ]


async def test_interrupted_run_continues_with_the_missing_records(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    records = _records(4)

    def flaky(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["messages"][-1]["content"] == "question 3":
            return httpx.Response(500, json={"error": {"message": "upstream crashed"}})
        return _answer(request)

    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=flaky)
        first = await _live(ResponseCache(path), guardrail=RewritingGuardrail()).run(records)
    assert route.call_count == 3 + NO_WAIT.attempts
    assert len(first.outcomes) == 3
    assert [(f.record.id, f.stage) for f in first.failures] == [("3", "model")]

    # The process died mid-write: a half line at the end must not lose the next entries.
    with path.open("a", encoding="utf-8") as out:
        out.write('{"key": "abc", "val')
    cache = ResponseCache(path)
    assert cache.skipped_lines == 1
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        second = await _live(cache, guardrail=RewritingGuardrail()).run(records)
    assert route.call_count == 1
    assert json.loads(route.calls[0].request.content)["messages"][-1]["content"] == "question 3"
    assert len(second.outcomes) == 4 and not second.failures
    assert ResponseCache(path).skipped_lines == 1


async def test_transient_errors_are_retried_with_backoff() -> None:
    responses = iter(
        [httpx.Response(503, json={"error": {"message": "busy"}}), _chat("Answer to 1.")]
    )
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            side_effect=lambda request: next(responses)
        )
        result = await _live(ResponseCache(None), guardrail=RewritingGuardrail()).run(_records(1))
    assert route.call_count == 2
    assert result.outcomes[0].before == "Answer to 1."


async def test_permanent_errors_are_not_retried() -> None:
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=httpx.Response(401, json={"error": {"message": "bad key"}})
        )
        result = await _live(ResponseCache(None), guardrail=RewritingGuardrail()).run(_records(1))
    assert route.call_count == 1
    assert result.failures[0].stage == "model"


async def test_live_through_a_proxy_url_reads_the_guardrail_headers(tmp_path: Path) -> None:
    def proxied(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["model"] == "stub"  # the litellm provider prefix is not the proxy's business
        assert request.headers["authorization"] == "Bearer proxy-key"
        return _chat(
            "Here is what I can say in general.",
            headers={"x-guardrail-action": "rewritten", "x-guardrail-policy": "soften"},
        )

    path = tmp_path / "cache.jsonl"
    with respx.mock() as mock:
        mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        proxy = mock.post(f"{PROXY}/v1/chat/completions").mock(side_effect=proxied)
        result = await _live(ResponseCache(path), proxy_url=PROXY, proxy_api_key="proxy-key").run(
            _records(2)
        )
    assert proxy.call_count == 2
    first = result.outcomes[0]
    assert (first.before, first.after) == (
        "I'm sorry, I can't.",
        "Here is what I can say in general.",
    )
    assert (first.action, first.policy, first.rewrite_usage) == ("rewritten", "soften", None)
    assert first.added_latency_ms is not None
    keys = {json.loads(line)["key"] for line in path.read_text().splitlines()}
    assert cache_key("set", "0", MODEL, "proxy") in keys
    assert cache_key("set", "0", MODEL, "direct") in keys


def test_live_runner_needs_exactly_one_target() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        LiveRunner(MODEL, cache=ResponseCache(None))
    with pytest.raises(ValueError, match="exactly one"):
        LiveRunner(
            MODEL, cache=ResponseCache(None), guardrail=RewritingGuardrail(), proxy_url=PROXY
        )


@pytest.mark.parametrize(
    "base",
    [
        "http://h:8080",
        "http://h:8080/",
        "http://h:8080/v1",
        "http://h:8080/v1/chat/completions",
    ],
)
def test_proxy_url_forms(base: str) -> None:
    assert proxy_base_url(base) == "http://h:8080/v1"


def test_proxy_model_drops_the_provider_prefix() -> None:
    assert proxy_model_name("openai/gpt-4o-mini") == "gpt-4o-mini"
    assert proxy_model_name("hosted_vllm/org/model") == "org/model"
    assert proxy_model_name("gpt-4o") == "gpt-4o"


def test_live_against_the_real_proxy_app_on_a_socket() -> None:
    from pydantic import SecretStr

    from eval.loopback import serve
    from proxy.app import create_app
    from proxy.config import ProxySettings

    app = create_app(
        ProxySettings(upstream_base_url=UPSTREAM, upstream_api_key=SecretStr("test")),
        guardrail=RewritingGuardrail(),
    )
    with respx.mock(assert_all_called=False) as mock, serve(app) as proxy_url:
        mock.route(host="127.0.0.1").pass_through()
        upstream = mock.post(f"{UPSTREAM}/chat/completions").mock(side_effect=_answer)
        result = asyncio.run(_live(ResponseCache(None), proxy_url=proxy_url).run(_records(2)))
    assert not result.failures, result.failures
    assert upstream.call_count == 4  # each prompt directly, and once more through the proxy
    refused, answered = result.outcomes
    assert (refused.action, refused.policy) == ("rewritten", "test-policy")
    assert refused.after == "Here is what I can say in general."
    assert (answered.action, answered.policy, answered.after) == ("pass", None, "Answer to 1.")
