"""Errors of the probes package.

Tree::

    ProbeError
    ├── ModelCallError          a call to the model endpoint failed (recorded, never scored)
    │   ├── ModelTimeout
    │   ├── ModelRateLimited
    │   ├── ModelUnavailable    connection refused, 5xx, or the circuit breaker is open
    │   └── BadModelResponse    a body that is not a usable chat completion
    └── UnknownScorer
"""

from __future__ import annotations

from monitor.errors import MedmonError


class ProbeError(MedmonError):
    """Base of the probes package's errors."""


class ModelCallError(ProbeError):
    """A model call that failed; ``kind`` is stored as the result's error type."""

    kind = "error"


class ModelTimeout(ModelCallError):
    kind = "timeout"


class ModelRateLimited(ModelCallError):
    kind = "rate_limited"


class ModelUnavailable(ModelCallError):
    kind = "unavailable"


class BadModelResponse(ModelCallError):
    kind = "bad_response"


class UnknownScorer(ProbeError):
    """A scorer name that is not registered."""
