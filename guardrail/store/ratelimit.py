"""Per-client rate limiting by GCRA (generic cell rate algorithm).

GCRA keeps one number per client, the theoretical arrival time (TAT) of its next request, so
it costs one key in Redis and one dict slot in memory, and it has no window-edge bursts. A
client may send ``per_minute`` requests back to back, then one every ``60 / per_minute``
seconds. Times are integer microseconds so that Redis (Lua doubles) and Python agree exactly.

:data:`GCRA_LUA` is the same arithmetic as :func:`gcra`, run atomically inside Redis with the
server's clock so that workers with skewed clocks share one limit.
"""

from __future__ import annotations

from dataclasses import dataclass

PERIOD_US = 60_000_000


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The verdict on one request."""

    allowed: bool
    limit: int
    remaining: int
    retry_after: float
    """Seconds until a request would be allowed; ``0.0`` when this one was."""


MAX_PER_MINUTE = 1_000_000


def check_limit(per_minute: int) -> int:
    if (
        isinstance(per_minute, bool)
        or not isinstance(per_minute, int)
        or not 1 <= per_minute <= MAX_PER_MINUTE
    ):
        raise ValueError(
            f"rate limit must be a whole number of requests per minute from 1 to "
            f"{MAX_PER_MINUTE:,}, got {per_minute!r}"
        )
    return per_minute


def gcra(tat_us: int | None, now_us: int, per_minute: int) -> tuple[RateLimit, int | None]:
    """Decide one request; returns the verdict and the new TAT (``None`` when rejected)."""
    interval = PERIOD_US // per_minute
    tat = now_us if tat_us is None or tat_us < now_us else tat_us
    new_tat = tat + interval
    allow_at = new_tat - PERIOD_US
    if allow_at > now_us:
        return RateLimit(False, per_minute, 0, (allow_at - now_us) / 1e6), None
    remaining = (PERIOD_US - (new_tat - now_us)) // interval
    return RateLimit(True, per_minute, remaining, 0.0), new_tat


GCRA_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = math.floor(tonumber(ARGV[1]) / tonumber(ARGV[2]))
local period = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - period
if allow_at > now then
  return {0, 0, string.format('%.0f', allow_at - now)}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor((period - (new_tat - now)) / interval), '0'}
"""
"""KEYS[1]: the client's TAT key; ARGV: period (µs), requests per period.
Returns ``{allowed, remaining, retry_after_us}``."""
