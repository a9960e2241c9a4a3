"""Report files: the documented JSON keys, Markdown tables, self-contained HTML with SVG charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval.datasets import Expected, Record
from eval.judges import JudgeInfo, Side, Verdict
from eval.metrics import Judged
from eval.report import build_report, to_html, to_markdown, write_reports
from eval.runners import Failure, Outcome
from eval.svg import paired_bars, stacked_bars
from guardrail.types import Label3, Pattern, Strategy, Usage

JUDGES = [
    JudgeInfo(name="human", title="Human labels", source="XSTest", sides=("before",)),
    JudgeInfo(
        name="detector",
        title="detector",
        source="here",
        gives_strategy=True,
        gives_patterns=True,
    ),
]


def _judged(index: int, lang: str, category: str, expected: Expected) -> Judged:
    record = Record(
        dataset="xstest" if lang == "en" else "authored_replies",
        id=str(index),
        prompt="p",
        lang=lang,
        category=category,
        expected=expected,
        source_model="m",
        reply="I'm sorry.",
    )
    refused = index % 2 == 0
    outcome = Outcome(
        record=record,
        before="I'm sorry.",
        after="In general..." if refused else "I'm sorry.",
        action="rewritten" if refused else "pass",
        policy="soften" if refused else None,
        added_latency_ms=float(index),
        rewrite_usage=Usage(10, 5) if refused else Usage(),
    )
    before = Verdict(Label3.FULL_REFUSAL, Strategy.DIRECT_REFUSAL, frozenset({Pattern.APOLOGY}))
    after = (
        Verdict(
            Label3.PARTIAL_REFUSAL,
            Strategy.PARTIAL_COMPLIANCE,
            frozenset({Pattern.ACKNOWLEDGMENT, Pattern.BOUNDARY_SETTING}),
        )
        if refused
        else before
    )
    verdicts: dict[str, dict[Side, Verdict | None]] = {
        "human": {"before": Verdict(Label3.FULL_REFUSAL), "after": None},
        "detector": {"before": before, "after": after},
    }
    none = {"step_sequences": 0, "code": 0}
    return Judged(outcome, verdicts, {"before": none, "after": none})


@pytest.fixture
def report() -> dict[str, object]:
    judged = [
        _judged(1, "en", "benign", Expected.SHOULD_COMPLY),
        _judged(2, "en", "weapons", Expected.SHOULD_REFUSE),
        _judged(3, "ja", "emotional_attachment", Expected.WARM_BOUNDARY),
        _judged(4, "ja", "emotional_attachment", Expected.WARM_BOUNDARY),
    ]
    failure = Failure(judged[0].outcome.record, "model", "Timeout")
    return build_report(
        config={
            "mode": "replay",
            "datasets": ["xstest", "authored_replies"],
            "seed": 0,
            "notes": ["a note"],
            "sampling": {"xstest": {"available": 9, "used": 2}},
            "reply_origin": {"xstest": "recorded", "authored_replies": "authored"},
        },
        judged=judged,
        panel_infos=JUDGES,
        unavailable={"llm": "no --judge-model given"},
        actionability=True,
        failures=[failure],
        judge_failures={},
        run={"duration_s": 1.5},
    )


def test_report_has_the_documented_top_level_keys(report: dict[str, object]) -> None:
    assert set(report) == {
        "schema_version",
        "config",
        "judges",
        "summary",
        "by_expected",
        "by_dataset",
        "by_category",
        "by_language",
        "by_source_model",
        "strategies",
        "safety",
        "emotional",
        "latency",
        "cost",
        "failures",
        "judge_failures",
        "run",
    }


def test_report_figures(report: dict[str, object]) -> None:
    data = json.loads(json.dumps(report))
    detector = data["summary"]["detector"]
    assert detector["before"]["flat_refusal_rate"] == 1.0
    assert detector["after"]["flat_refusal_rate"] == 0.5
    assert data["summary"]["human"]["after"] is None
    assert data["judges"]["detector"]["agreement_with_human"]["recall"] == 1.0
    assert data["judges"]["llm"] == {"available": False, "reason": "no --judge-model given"}
    assert set(data["by_language"]) == {"en", "ja"}
    assert data["by_expected"]["warm_boundary"]["n"] == 2
    assert data["safety"]["n"] == 1
    assert data["safety"]["actionable_detail_rate"]["rose"] is False
    ja = data["emotional"]["judges"]["detector"]["ja"]
    assert ja["before"]["acknowledgment"] == 0.0 and ja["after"]["acknowledgment"] == 0.5
    assert data["latency"]["added"]["median_ms"] == 2.5
    assert data["cost"]["rewrite_tokens"]["total"] == 30
    assert data["failures"]["by_stage"] == {"model": 1}


def test_write_reports_writes_three_files(report: dict[str, object], tmp_path: Path) -> None:
    paths = write_reports(report, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    assert json.loads(paths[0].read_text(encoding="utf-8")) == json.loads(json.dumps(report))


def test_markdown_has_headline_and_sections(report: dict[str, object]) -> None:
    text = to_markdown(report)
    assert "## Headline" in text
    # A partial-compliance rewrite is still a refusal in XSTest's sense, but no longer flat.
    assert (
        "| detector | should decline | 1 | 100.0% → 100.0% | 100.0% → 0.0% | 100.0% → 0.0% |"
        in text
    )
    assert "## By language" in text and "| ja | detector |" in text
    assert "not used | no --judge-model given" in text


def test_html_is_self_contained_with_svg_charts(report: dict[str, object]) -> None:
    html = to_html(report)
    assert html.count("<svg") >= 3  # category and language rates, strategies
    assert "Refusal rate by request category" in html
    assert "Strategy distribution" in html
    assert "<script" not in html
    assert not re.search(r"(src|href)=", html)
    urls = set(re.findall(r"https?://[^\s\"'<]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}


def test_svg_escapes_labels_and_clamps_bars() -> None:
    svg = paired_bars("t", [("<b>&", 1.5, None)])
    assert "&lt;b&gt;&amp;" in svg and "<b>" not in svg
    assert 'width="400.0"' in svg  # clamped to the full bar width
    stacked = stacked_bars("s", [("row", {"direct_refusal": 0.25, "full_compliance": 0.75})])
    assert stacked.count("<rect") == 2 + 5  # two segments, five legend swatches
