"""The load test's own logic: its schedule, its response checks and its summary."""

from __future__ import annotations

import json

import pytest

from eval.load_test import FAULTS, Outcome, Planned, check_plain, check_stream, plan, summarise


def chunk(content: str | None = None, finish: str | None = None) -> str:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"object": "chat.completion.chunk", "choices": [choice]})


def stream(*lines: str) -> bytes:
    return "\n\n".join(lines).encode() + b"\n\n"


ERROR = "data: " + json.dumps({"error": {"message": "upstream cut", "type": "upstream_error"}})


def test_the_plan_is_fixed_rate_seeded_and_faults_at_the_asked_share() -> None:
    requests = plan(rate=100, duration_s=50, fault_rate=0.1, seed=3)
    assert len(requests) == 5000
    assert requests[1].at_s - requests[0].at_s == pytest.approx(0.01)
    faults = [r for r in requests if r.kind != "ok"]
    assert 400 < len(faults) < 600
    assert {r.kind for r in faults} == set(FAULTS)
    assert all(r.stream for r in faults if r.kind == "cut")
    assert plan(100, 50, 0.1, 3) == requests


def test_plain_replies_and_errors_are_told_from_malformed_ones() -> None:
    reply = {"object": "chat.completion", "choices": [{"message": {"content": "Hi"}}]}
    error = {"error": {"message": "upstream timed out", "type": "timeout"}}
    assert check_plain(200, json.dumps(reply).encode()) == "reply"
    assert check_plain(504, json.dumps(error).encode()) == "error"
    assert check_plain(200, b"<html>") == "malformed: not JSON"
    assert check_plain(500, b'{"detail": "boom"}').startswith("malformed")
    assert check_plain(200, json.dumps(error).encode()).startswith("malformed")


def test_streams_must_finish_or_end_with_an_error_then_done() -> None:
    assert check_stream(200, stream(chunk("Hi"), chunk(finish="stop"), "data: [DONE]")) == "reply"
    assert check_stream(200, stream(chunk("Hi"), ERROR, "data: [DONE]")) == "error"
    assert check_stream(200, stream(chunk("Hi"), chunk(finish="stop"))).startswith("malformed")
    assert check_stream(200, stream(chunk("Hi"), "data: [DONE]")) == "malformed: no finish_reason"
    cut = stream(ERROR, chunk("Hi"), "data: [DONE]")
    assert check_stream(200, cut) == "malformed: events after an error"


def test_summary_counts_wrong_statuses_and_overhead_on_clean_requests() -> None:
    ok, fault = Planned(0, "ok", False), Planned(0, "status_500", False)
    proxied = [
        Outcome(ok, 200, 0.012, "reply"),
        Outcome(ok, 200, 0.014, "reply"),
        Outcome(fault, 200, 0.5, "reply"),
    ]
    direct = [Outcome(ok, 200, 0.010, "reply"), Outcome(ok, 200, 0.011, "reply")]
    summary = summarise(proxied, direct, wall_s=1.5)
    assert summary.unexpected_status == 1
    assert summary.failed
    assert summary.requests_per_s == pytest.approx(2.0)
    assert summary.overhead_ms["plain"]["p50"] == pytest.approx(2.0)
    assert "stream" not in summary.overhead_ms
