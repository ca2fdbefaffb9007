"""The ``metrics`` section of the scheduler configuration: where node load comes from.

Upstream (``pkg/scheduler/metrics/source``, ``cache.GetMetricsData``) reads a flat string map:

* ``type``: ``prometheus`` (query the Prometheus HTTP API at ``address``),
  ``prometheus_adaptor`` (the custom metrics API) or ``elasticsearch``; empty or absent: no
  node load is collected, and the usage and rescheduling plugins see none;
* ``address``: the Prometheus base URL (``http://prometheus:9090``), required for ``prometheus``;
* ``interval``: how often node load is collected (a Go duration, default ``30s``); the usage
  plugin also takes it as the delay before a new pod's load shows in the metrics;
* ``tls.insecureSkipVerify``: ``"true"`` skips the server certificate check.

pyvolcano collects from Prometheus only: ``prometheus_adaptor`` and ``elasticsearch`` are
refused with a clear error rather than silently collecting nothing (docs/differences.md). The
section is checked when the configuration is loaded (:func:`read_metrics`); a nested
``tls: {insecureSkipVerify: ...}``, as upstream's design document writes it, is read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.api.duration import DurationError, parse_duration_strict

__all__ = ["DEFAULT_INTERVAL", "METRICS_TYPES", "MetricsConfig", "MetricsError", "read_metrics"]

DEFAULT_INTERVAL: Final = 30.0
PROMETHEUS: Final = "prometheus"
METRICS_TYPES: Final = ("prometheus", "prometheus_adaptor", "elasticsearch")
_SUPPORTED: Final = (PROMETHEUS,)


class MetricsError(ValueError):
    """A ``metrics`` field that cannot be used: ``field`` names it, ``expected`` says what would do."""

    def __init__(self, field: str, problem: str, expected: str):
        super().__init__(f"metrics.{field}: {problem}; expected {expected}")
        self.field = field
        self.problem = problem
        self.expected = expected


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """The checked ``metrics`` section (``type == ""``: node load is not collected)."""

    type: str = ""
    address: str = ""
    interval: float = DEFAULT_INTERVAL
    insecure_skip_verify: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.type)


def _text(section: Mapping[str, Any], key: str) -> str:
    value = section.get(key)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise MetricsError(key, f"got {value!r}", "a string")


def read_metrics(section: Mapping[str, Any]) -> MetricsConfig:
    """Check ``section``; raises :class:`MetricsError` naming the field."""
    kind = _text(section, "type")
    if kind and kind not in METRICS_TYPES:
        raise MetricsError("type", f"got {kind!r}", f"one of {', '.join(METRICS_TYPES)}")
    if kind and kind not in _SUPPORTED:
        raise MetricsError("type", f"{kind} is not supported by pyvolcano", "prometheus (the Prometheus HTTP API)")
    address = _text(section, "address")
    if kind == PROMETHEUS and not address:
        raise MetricsError("address", "metrics address is empty", "the Prometheus URL, e.g. http://prometheus:9090")
    if address and not address.startswith(("http://", "https://")):
        raise MetricsError("address", f"got {address!r}", "an http:// or https:// URL")
    interval = DEFAULT_INTERVAL
    raw_interval = _text(section, "interval")
    if raw_interval:
        try:
            seconds = parse_duration_strict(raw_interval)
        except DurationError:
            raise MetricsError("interval", f"got {raw_interval!r}", "a Go duration such as 30s") from None
        # Upstream falls back to 30s for a duration that is not positive.
        interval = seconds if seconds > 0 else DEFAULT_INTERVAL
    tls = section.get("tls")
    insecure = _text(section, "tls.insecureSkipVerify")
    if isinstance(tls, Mapping) and not insecure:
        insecure = _text(tls, "insecureSkipVerify")
    return MetricsConfig(kind, address, interval, insecure == "true")
