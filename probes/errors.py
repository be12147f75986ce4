"""Errors of the probes package.

Tree::

    ProbeError
    ├── ModelCallError          a call to the model endpoint failed (recorded, never scored)
    │   ├── ModelTimeout
    │   ├── ModelRateLimited
    │   ├── ModelRefused        the endpoint answered no: 400, 401, 403, 404, 422 (not retried)
    │   ├── ModelUnavailable    connection refused or 5xx
    │   │   └── CircuitOpen     failed fast: the endpoint's circuit breaker is open
    │   └── BadModelResponse    a body that is not a usable chat completion
    │       └── EmptyCompletion a well-formed completion with no text
    ├── JuryNotConfigured       a task scored by the jury in a plan without a ``jury`` section
    └── UnknownScorer
"""

from __future__ import annotations

from medmon.errors import MedmonError


class ProbeError(MedmonError):
    """Base of the probes package's errors."""


class ModelCallError(ProbeError):
    """A model call that failed; ``kind`` is stored as the result's error type.

    ``attempts`` counts the HTTP attempts made (retries included); ``completion`` holds what a
    call that reached the model returned (tokens and cost are still owed for an empty answer);
    ``retry_after`` is the wait a 429 or 5xx asked for; ``status`` the HTTP status when the
    endpoint answered one.
    ``retryable`` says whether another attempt may help; ``trips_breaker`` whether the failure
    counts against the endpoint's circuit breaker (a 429 or an empty answer does not: the
    endpoint is up).
    """

    kind = "error"
    retryable = False
    trips_breaker = False
    attempts: int = 1
    completion: object | None = None
    retry_after: float | None = None
    status: int | None = None
    latency_s: float | None = None  # the whole call's wall time, retries and waits included

    @property
    def cause(self) -> str:
        """What failed, for grouping failures: ``HTTP 401 Incorrect API key``, ``timeout``..."""
        return str(self) if self.status is not None else self.kind


class ModelRefused(ModelCallError):
    """The endpoint answered and refused the request (bad key, no such model, bad parameter).

    Retrying cannot help and the endpoint is up, so it neither retries nor trips the breaker;
    ``medmon probe run`` exits with its own code for it, apart from an unreachable endpoint.
    """

    kind = "refused"


class ModelTimeout(ModelCallError):
    kind = "timeout"
    retryable = True
    trips_breaker = True


class ModelRateLimited(ModelCallError):
    kind = "rate_limited"
    retryable = True


class ModelUnavailable(ModelCallError):
    kind = "unavailable"
    retryable = True
    trips_breaker = True


class CircuitOpen(ModelUnavailable):
    """Not attempted: the breaker is open after consecutive failures, so the call failed fast."""

    kind = "circuit_open"
    retryable = False
    trips_breaker = False


class BadModelResponse(ModelCallError):
    kind = "bad_response"
    trips_breaker = True


class EmptyCompletion(BadModelResponse):
    """The endpoint answered with an empty text: recorded as an error, never scored as wrong."""

    kind = "empty_completion"
    trips_breaker = False


class JuryNotConfigured(ProbeError):
    """A task uses the ``jury`` scorer but the plan has no ``jury`` section."""


class UnknownScorer(ProbeError):
    """A scorer name that is not registered."""
