"""Latency statistics for the perf tools: percentiles of a list of samples.

Samples are milliseconds kept in a plain list, appended as they come (the
cheapest per-record work Python has). Summaries sort that list in place:
Python's sort finds the part sorted last time as one run and merges the new
tail into it, so summarising a growing list a few times a second stays cheap.

Percentiles use the nearest-rank method: the p-th percentile of n sorted
samples is the smallest sample such that at least p of them are at or below
it, the sample at index ``ceil(p * n) - 1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The percentiles a summary gives, as fractions, with their names (Kafka's tool prints
# the 50th, 95th, 99th and 99.9th).
SUMMARY_FRACTIONS = (0.5, 0.95, 0.99, 0.999)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile ``fraction`` (0 < fraction <= 1) of ascending samples."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"percentile fraction {fraction!r} is not in (0, 1]")
    if not sorted_values:
        raise ValueError("no samples")
    rank = math.ceil(fraction * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Count, mean, maximum and the summary percentiles of latency samples, in ms."""

    count: int
    avg_ms: float
    max_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p99_9_ms: float

    @classmethod
    def of(cls, values_ms: list[float]) -> LatencySummary:
        """The summary of ``values_ms`` (at least one), which it sorts in place."""
        if not values_ms:
            raise ValueError("no samples")
        values_ms.sort()
        p50, p95, p99, p99_9 = (percentile(values_ms, f) for f in SUMMARY_FRACTIONS)
        return cls(
            count=len(values_ms),
            avg_ms=math.fsum(values_ms) / len(values_ms),
            max_ms=values_ms[-1],
            p50_ms=p50,
            p95_ms=p95,
            p99_ms=p99,
            p99_9_ms=p99_9,
        )


def running_percentiles(
    values_ms: list[float], fractions: Sequence[float]
) -> tuple[float, ...] | None:
    """The percentiles ``fractions`` of the samples so far (sorted in place), or ``None``
    before the first sample."""
    if not values_ms:
        return None
    values_ms.sort()
    return tuple(percentile(values_ms, f) for f in fractions)
