"""Call limits for one endpoint: a requests/tokens-per-minute limiter and a circuit breaker.

Both exist so that probing never harms the service it watches. The limiter keeps medmon under
the provider's quota (a probe that trips the quota measures the quota, not the model). The
breaker keeps an outage from becoming a flood: after ``failure_threshold`` consecutive failed
*calls* (each counted once, after its own retries, so a brief burst that retries absorb never
opens it) it *opens* and every call fails fast, without touching the network, for
``cooldown_s``; then it lets one trial call through (*half-open*) while the others wait for its
outcome, and closes again only if that call succeeds.

Both take an injected monotonic clock, so tests drive them without waiting, and both are safe
to share between threads (APScheduler runs probe jobs in a thread pool, each with its own event
loop): state changes happen under a ``threading.Lock`` and waiting happens outside it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum

Clock = Callable[[], float]
_EPSILON = 1e-9
_MIN_WAIT_S = 1e-6
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """A token bucket refilled at ``per_minute / 60`` tokens a second, holding at most ``capacity``.

    A request larger than the capacity (a long prompt under a small tokens-per-minute quota) is
    admitted once the bucket is full and leaves it in debt, so it waits its fair share instead of
    waiting forever.

    Parameters
    ----------
    per_minute
        Sustained rate, in tokens per minute.
    capacity
        Largest burst; by default one second's worth (at least 1), which is how providers enforce
        per-minute quotas in practice (as per-second slices).
    clock
        Monotonic seconds.

    Examples
    --------
    >>> t = [0.0]
    >>> bucket = TokenBucket(60, capacity=2, clock=lambda: t[0])
    >>> bucket.try_take(1), bucket.try_take(1), bucket.try_take(1)
    (0.0, 0.0, 1.0)
    >>> t[0] = 1.0
    >>> bucket.try_take(1)
    0.0
    """

    def __init__(self, per_minute: float, *, capacity: float | None = None, clock: Clock = time.monotonic) -> None:
        if per_minute <= 0:
            raise ValueError(f"per_minute must be positive, got {per_minute}")
        self.per_minute = per_minute
        self.capacity = capacity if capacity is not None else max(1.0, per_minute / 60)
        if self.capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self._rate = per_minute / 60
        self._clock = clock
        self._tokens = self.capacity
        self._stamp = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def try_take(self, amount: float) -> float:
        """Take ``amount`` now and return 0, or take nothing and return the seconds to wait first."""
        with self._lock:
            self._refill()
            need = min(amount, self.capacity)
            if self._tokens >= need - _EPSILON:  # float refills land a hair short of whole tokens
                self._tokens -= amount
                return 0.0
            return max((need - self._tokens) / self._rate, _MIN_WAIT_S)

    def adjust(self, amount: float) -> None:
        """Give back (positive) or charge (negative) tokens once the true cost of a call is known."""
        with self._lock:
            self._refill()
            self._tokens = min(self.capacity, self._tokens + amount)

    @property
    def available(self) -> float:
        with self._lock:
            self._refill()
            return self._tokens


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits for one endpoint; either may be off.

    ``acquire(tokens)`` waits until one request and ``tokens`` tokens fit. The token cost of a
    chat call is not known in advance, so callers reserve an estimate (prompt characters / 4 plus
    ``max_tokens``) and ``settle`` the difference with the usage the endpoint reports.
    """

    def __init__(
        self,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.requests = TokenBucket(requests_per_minute, clock=clock) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute, clock=clock) if tokens_per_minute else None
        self._sleep = sleep

    async def acquire(self, tokens: int = 0) -> float:
        """Wait for room for one request of ``tokens`` tokens; returns the seconds waited."""
        waited = 0.0
        for bucket, amount in ((self.requests, 1), (self.tokens, tokens)):
            if bucket is None or amount <= 0:
                continue
            while (delay := bucket.try_take(amount)) > 0:
                waited += delay
                await self._sleep(delay)
        return waited

    def settle(self, reserved: int, used: int | None) -> None:
        """Correct a reservation with the tokens a call really used."""
        if self.tokens is not None and used is not None:
            self.tokens.adjust(reserved - used)


class BreakerState(str, Enum):
    closed = "closed"
    open = "open"
    half_open = "half_open"


@dataclass(frozen=True)
class Admission:
    """Whether a call may go ahead; ``retry_in`` is the rest of the cool-down when it may not."""

    allowed: bool
    state: BreakerState
    retry_in: float = 0.0
    trial: bool = False  # this caller holds the half-open trial: its outcome decides the state


class CircuitBreaker:
    """Closed, open, half-open: fail fast for ``cooldown_s`` after ``failure_threshold`` failures in a row.

    Examples
    --------
    >>> t = [0.0]
    >>> breaker = CircuitBreaker(failure_threshold=2, cooldown_s=10, clock=lambda: t[0])
    >>> breaker.record_failure(); breaker.record_failure(); breaker.state.value
    'open'
    >>> breaker.admit().allowed
    False
    >>> t[0] = 10.0
    >>> breaker.admit().trial, breaker.admit().allowed  # one trial call, the others wait
    (True, False)
    >>> breaker.record_success(); breaker.state.value
    'closed'
    """

    def __init__(self, *, failure_threshold: int = 5, cooldown_s: float = 30.0, clock: Clock = time.monotonic) -> None:
        if failure_threshold < 1:
            raise ValueError(f"failure_threshold must be at least 1, got {failure_threshold}")
        if cooldown_s <= 0:
            raise ValueError(f"cooldown_s must be positive, got {cooldown_s}")
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state = BreakerState.closed
        self._failures = 0
        self._opened_at = 0.0
        self._trial_out = False
        self.times_opened = 0

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    def admit(self) -> Admission:
        """Ask before each attempt; after the cool-down exactly one caller gets the trial call."""
        with self._lock:
            if self._state == BreakerState.closed:
                return Admission(True, self._state)
            if self._state == BreakerState.open:
                remaining = self._opened_at + self.cooldown_s - self._clock()
                if remaining > 0:
                    return Admission(False, self._state, remaining)
                self._state, self._trial_out = BreakerState.half_open, False
            if not self._trial_out:
                self._trial_out = True
                return Admission(True, self._state, trial=True)
            return Admission(False, self._state, 0.0)

    def record_success(self) -> None:
        with self._lock:
            self._state, self._failures, self._trial_out = BreakerState.closed, 0, False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._state == BreakerState.half_open or (
                self._state == BreakerState.closed and self._failures >= self.failure_threshold
            ):
                self._state, self._opened_at, self._trial_out = BreakerState.open, self._clock(), False
                self.times_opened += 1

    def settled(self) -> bool:
        """Whether no trial is out: a caller waiting on a half-open breaker may ask again."""
        with self._lock:
            return not (self._state == BreakerState.half_open and self._trial_out)

    def release(self) -> None:
        """A trial call ended without a verdict on the endpoint (e.g. a 429): let another try."""
        with self._lock:
            self._trial_out = False


@dataclass
class CallGuard:
    """The limiter and breaker of one endpoint; share one per endpoint across runs to make quotas global."""

    limiter: RateLimiter
    breaker: CircuitBreaker

    @classmethod
    def build(
        cls,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        failure_threshold: int = 5,
        cooldown_s: float = 30.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> CallGuard:
        return cls(
            RateLimiter(
                requests_per_minute=requests_per_minute, tokens_per_minute=tokens_per_minute, clock=clock, sleep=sleep
            ),
            CircuitBreaker(failure_threshold=failure_threshold, cooldown_s=cooldown_s, clock=clock),
        )
