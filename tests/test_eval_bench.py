"""The bench entry point: configuration errors, deterministic sampling and reports, the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from typer.testing import CliRunner

from eval import bench
from eval.bench import BenchConfig, BenchError, prepare_guardrail, run_bench, sample, select_records
from eval.datasets import load
from eval.llm import RetryPolicy
from guardrail import Guardrail
from proxy.cli import app

UPSTREAM = "http://upstream.test/v1"


@pytest.fixture(scope="module")
def pipeline() -> Guardrail:
    """The real pipeline with the bundled policies, built once: loading its models is slow."""
    return asyncio.run(prepare_guardrail(BenchConfig()))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (BenchConfig(mode="live"), "needs --model"),
        (BenchConfig(model="gpt-x"), "apply to --mode live only"),
        (BenchConfig(datasets=("multijail",)), "no recorded replies in multijail"),
        (BenchConfig(datasets=("nope",)), "unknown dataset"),
        (BenchConfig(limit=-1), "--limit"),
        (BenchConfig(mode="live", model="m", proxy_model="x"), "--proxy-model needs"),
        (BenchConfig(concurrency=0), "--concurrency"),
        (BenchConfig(mode="fast"), "unknown mode"),  # type: ignore[arg-type]
    ],
)
def test_bad_configurations_say_what_to_change(config: BenchConfig, message: str) -> None:
    with pytest.raises(BenchError, match=message):
        config.validate()


def test_sampling_is_deterministic_and_keeps_order() -> None:
    records = load("orbench_hard", replies=False)
    first = sample(records, 25, 7, "orbench_hard")
    assert first == sample(records, 25, 7, "orbench_hard")
    assert first != sample(records, 25, 8, "orbench_hard")
    positions = [records.index(r) for r in first]
    assert positions == sorted(positions) and len(first) == 25
    assert sample(records, None, 7, "orbench_hard") == records


def test_mode_defaults() -> None:
    replay = BenchConfig()
    assert replay.selected == ("xstest", "coconot_pref", "authored_replies")
    assert replay.effective_limit is None
    live = BenchConfig(mode="live", model="m")
    assert "multijail" in live.selected and live.effective_limit == 100
    assert BenchConfig(mode="live", model="m", limit=0).effective_limit is None
    records, sampling = select_records(BenchConfig(datasets=("xstest",), limit=10))
    assert len(records) == 10 and sampling == {"xstest": {"available": 2250, "used": 10}}


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    """Everything but wall-clock figures."""
    return {k: v for k, v in report.items() if k not in ("run", "latency")}


async def test_replay_report_is_deterministic_for_a_seed(pipeline: Guardrail) -> None:
    config = BenchConfig(limit=15, seed=3)
    first = await run_bench(config, guardrail=pipeline)
    second = await run_bench(config, guardrail=pipeline)
    assert _stable(first) == _stable(second)
    assert first["config"]["sampling"]["xstest"] == {"available": 2250, "used": 15}
    assert first["summary"]["human"]["before"]["n"] == 15
    english = sum(r.lang == "en" for r in select_records(config)[0])
    assert first["summary"]["xstest_strmatch"]["before"]["n"] == english < 45
    assert first["judges"]["xstest_strmatch"]["agreement_with_human"]["n"] == 15
    other = await run_bench(BenchConfig(limit=15, seed=4), guardrail=pipeline)
    assert other["summary"] != first["summary"] or other["by_category"] != first["by_category"]


async def test_live_bench_end_to_end_with_a_stub_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipeline: Guardrail
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", UPSTREAM)
    config = BenchConfig(
        mode="live",
        model="openai/stub",
        datasets=("k_overrefusal", "emotional_attachment"),
        limit=3,
        cache_path=tmp_path / "cache.jsonl",
        retry=RetryPolicy(attempts=1),
    )
    reply = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "죄송하지만 도와드릴 수 없습니다."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=httpx.Response(200, json=reply)
        )
        report = await run_bench(config, guardrail=pipeline)
    # The model answers each prompt once; policies that rewrite with the request's own model
    # then ask it again (a stub that only refuses fails verification, so compose takes over).
    roles = [json.loads(call.request.content)["messages"][0]["role"] for call in route.calls]
    assert roles.count("user") == 6
    rewrites = roles.count("system")
    assert rewrites > 0 and rewrites + 6 == route.call_count
    assert report["cost"]["rewrite_tokens"]["total"] == 30 * rewrites
    assert report["run"]["records"] == 6
    assert set(report["by_dataset"]) == {"k_overrefusal", "emotional_attachment"}
    assert report["by_source_model"] == {"openai/stub": report["by_source_model"]["openai/stub"]}
    assert report["summary"]["human"] == {"before": None, "after": None}
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions")
        again = await run_bench(config, guardrail=pipeline)
    assert route.call_count == 0
    assert again["run"]["cache_entries_at_start"] == 12  # direct + guardrail per record
    assert _stable(again)["summary"] == _stable(report)["summary"]


def test_cli_writes_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipeline: Guardrail
) -> None:
    async def prebuilt(config: BenchConfig) -> Guardrail:
        return pipeline

    monkeypatch.setattr(bench, "prepare_guardrail", prebuilt)
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app, ["bench", "--datasets", "xstest,coconot_pref", "--limit", "5", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Refusals before" in result.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["config"]["datasets"] == ["xstest", "coconot_pref"]
    assert "<svg" in (out / "report.html").read_text(encoding="utf-8")


def test_cli_reports_bad_input_without_a_traceback() -> None:
    result = CliRunner().invoke(app, ["bench", "--datasets", "multijail"])
    assert result.exit_code == 2
    assert "no recorded replies in multijail" in result.output
    assert "Traceback" not in result.output


async def test_llm_judge_grades_both_sides_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipeline: Guardrail
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", UPSTREAM)
    verdict = {"strategy": "redirection", "label3": "full_refusal", "patterns": ["deflection"]}
    answer = {
        "id": "j",
        "object": "chat.completion",
        "created": 1,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(verdict)},
                "finish_reason": "stop",
            }
        ],
    }
    config = BenchConfig(
        datasets=("xstest",),
        limit=6,
        judge_model="openai/judge",
        cache_path=tmp_path / "cache.jsonl",
        retry=RetryPolicy(attempts=1),
    )
    with respx.mock() as mock:
        route = mock.post(f"{UPSTREAM}/chat/completions").mock(
            return_value=httpx.Response(200, json=answer)
        )
        report = await run_bench(config, guardrail=pipeline)
    changed = report["cost"]["changed_replies"]
    assert route.call_count == 6 + changed  # an unchanged reply is graded once
    llm = report["summary"]["llm"]
    assert llm["before"]["n"] == llm["after"]["n"] == 6
    assert llm["before"]["flat_refusal_rate"] == 1.0
    assert report["strategies"]["llm"]["after"]["shares"]["redirection"] == 1.0
    assert report["judges"]["llm"]["agreement_with_human"]["n"] == 6
    assert report["judge_failures"] == {"llm": 0}
