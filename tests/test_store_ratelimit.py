import pytest

from guardrail.store.ratelimit import PERIOD_US, check_limit, gcra


def run(times_s: list[float], per_minute: int) -> list[bool]:
    tat: int | None = None
    verdicts = []
    for t in times_s:
        verdict, new_tat = gcra(tat, int(t * 1_000_000), per_minute)
        tat = new_tat if new_tat is not None else tat
        verdicts.append(verdict.allowed)
    return verdicts


def test_a_full_minute_of_requests_may_come_at_once_then_one_per_interval() -> None:
    # 6 per minute: six at t=0, the seventh must wait 10 s.
    assert run([0.0] * 7, 6) == [True] * 6 + [False]
    assert run([0.0] * 6 + [9.9, 10.0, 10.1], 6) == [True] * 6 + [False, True, False]


def test_rejection_reports_remaining_zero_and_exact_retry_after() -> None:
    tat = None
    for _ in range(3):
        verdict, tat = gcra(tat, 0, 3)
    verdict, new_tat = gcra(tat, 5_000_000, 3)
    assert new_tat is None
    assert not verdict.allowed
    assert verdict.remaining == 0
    assert verdict.retry_after == pytest.approx(15.0)


def test_remaining_counts_down() -> None:
    tat = None
    remaining = []
    for _ in range(4):
        verdict, tat = gcra(tat, 0, 4)
        remaining.append(verdict.remaining)
    assert remaining == [3, 2, 1, 0]


def test_idle_client_regains_its_full_burst() -> None:
    tat = None
    for _ in range(5):
        _, tat = gcra(tat, 0, 5)
    assert run([0.0] * 5, 5) == [True] * 5
    verdict, _ = gcra(tat, PERIOD_US, 5)
    assert verdict.allowed and verdict.remaining == 4


def test_odd_limits_never_exceed_the_minute() -> None:
    # 60_000_000 // 7 is not exact: rounding must not let an eighth request through.
    assert run([0.0] * 8, 7) == [True] * 7 + [False]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10", 1_000_001])
def test_invalid_limits_are_rejected_clearly(bad: object) -> None:
    with pytest.raises(ValueError, match="whole number of requests per minute"):
        check_limit(bad)  # type: ignore[arg-type]
