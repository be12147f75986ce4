"""Token buckets, the rate limiter and the circuit breaker, on a fake clock."""

from __future__ import annotations

import pytest

from medmon.probes.limits import BreakerState, CircuitBreaker, RateLimiter, TokenBucket
from tests.probes.simkit import FakeClock, RecordingSleep, run


def test_bucket_refills_at_the_per_minute_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(120, capacity=2, clock=clock)  # 2 a second
    assert bucket.try_take(1) == 0 and bucket.try_take(1) == 0
    assert bucket.try_take(1) == pytest.approx(0.5)
    clock.advance(0.5)
    assert bucket.try_take(1) == 0


def test_bucket_admits_a_request_larger_than_its_capacity_once_full() -> None:
    clock = FakeClock()
    bucket = TokenBucket(600, clock=clock)  # capacity 10
    assert bucket.capacity == 10
    assert bucket.try_take(25) == 0  # full bucket: admitted, now in debt
    assert bucket.available == pytest.approx(-15)
    assert bucket.try_take(1) == pytest.approx(1.6)  # 16 tokens at 10/s


@pytest.mark.parametrize(
    "kwargs, message",
    [({"per_minute": 0}, "per_minute"), ({"per_minute": 10, "capacity": 0}, "capacity")],
    ids=["rate-must-be-positive", "capacity-must-be-positive"],
)
def test_bucket_rejects_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenBucket(**kwargs)


def test_limiter_paces_requests_per_minute() -> None:
    clock = FakeClock()
    sleep = RecordingSleep(clock)
    limiter = RateLimiter(requests_per_minute=60, clock=clock, sleep=sleep)  # 1 a second, burst 1

    async def five() -> None:
        for _ in range(5):
            await limiter.acquire()

    run(five())
    assert sum(sleep.waits) == pytest.approx(4.0)


def test_limiter_settles_token_reservations_with_real_usage() -> None:
    clock = FakeClock()
    sleep = RecordingSleep(clock)
    limiter = RateLimiter(tokens_per_minute=6000, clock=clock, sleep=sleep)  # 100 tokens a second
    run(limiter.acquire(100))
    limiter.settle(reserved=100, used=40)  # 60 tokens come back
    assert limiter.tokens is not None and limiter.tokens.available == pytest.approx(60)
    run(limiter.acquire(100))
    assert sum(sleep.waits) == pytest.approx(0.4)


def test_limiter_without_limits_never_waits() -> None:
    sleep = RecordingSleep()
    limiter = RateLimiter(sleep=sleep)
    for _ in range(100):
        run(limiter.acquire(10_000))
    assert sleep.waits == []


def test_breaker_opens_after_consecutive_failures_and_a_success_resets_the_count() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=3, cooldown_s=10, clock=clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == BreakerState.closed
    breaker.record_failure()
    assert breaker.state == BreakerState.open
    admission = breaker.admit()
    assert not admission.allowed and admission.retry_in == pytest.approx(10)


def test_half_open_lets_one_trial_through_and_a_failed_trial_reopens() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=5, clock=clock)
    breaker.record_failure()
    clock.advance(5)
    first, second = breaker.admit(), breaker.admit()
    assert first.allowed and first.state == BreakerState.half_open
    assert not second.allowed
    breaker.record_failure()
    assert breaker.state == BreakerState.open and breaker.times_opened == 2
    clock.advance(5)
    assert breaker.admit().allowed
    breaker.record_success()
    assert breaker.state == BreakerState.closed and breaker.admit().allowed


def test_a_released_trial_lets_the_next_caller_try() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=1, clock=clock)
    breaker.record_failure()
    clock.advance(1)
    assert breaker.admit().allowed
    breaker.release()  # e.g. the trial got a 429: no verdict on the endpoint
    assert breaker.admit().allowed


@pytest.mark.parametrize(
    "kwargs", [{"failure_threshold": 0}, {"cooldown_s": 0}], ids=["threshold-at-least-one", "cooldown-positive"]
)
def test_breaker_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]


def test_limiter_terminates_when_refills_fall_a_hair_short() -> None:
    """Waits computed from float refills must not shrink to nothing (a fake clock stops moving)."""
    clock = FakeClock()
    sleep = RecordingSleep(clock)
    limiter = RateLimiter(tokens_per_minute=7000, clock=clock, sleep=sleep)  # 116.67 a second

    async def many() -> None:
        for _ in range(300):
            await limiter.acquire(37)
            limiter.settle(reserved=37, used=13)

    run(many())
    assert 0 < sum(sleep.waits) < 300 * 13 / (7000 / 60) and all(w >= 1e-6 for w in sleep.waits)
