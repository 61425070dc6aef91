"""Latency statistics for the perf tools: percentiles of latency samples.

Samples are milliseconds appended, as they come, to an ``array('d')`` (8 bytes
each, the cheapest per-record work Python has). The count, mean and maximum
are exact. Percentiles are exact up to ``sample_limit`` samples; of more, they
are those of every k-th sample (k the smallest stride that keeps at most
``sample_limit``), as Kafka's tool samples its latencies, so a summary's sort
stays bounded however long the run.

Percentiles use the nearest-rank method: the p-th percentile of n sorted
samples is the smallest sample such that at least p of them are at or below
it, the sample at index ``ceil(p * n) - 1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SUMMARY_SAMPLE_LIMIT = 500_000  # the most samples a summary's percentiles sort
RUNNING_SAMPLE_LIMIT = 20_000  # the most a progress line's percentiles sort


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile ``fraction`` (0 < fraction <= 1) of ascending samples."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"percentile fraction {fraction!r} is not in (0, 1]")
    if not sorted_values:
        raise ValueError("no samples")
    rank = math.ceil(fraction * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


def sorted_sample(values: Sequence[float], limit: int) -> list[float]:
    """Every k-th of ``values`` (all of them when there are at most ``limit``), sorted;
    k is the smallest stride that keeps at most ``limit``."""
    if limit < 1:
        raise ValueError(f"sample limit {limit!r} is below 1")
    stride = max(1, math.ceil(len(values) / limit))
    return sorted(values[::stride])


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Count, mean, maximum and the 50th, 95th, 99th and 99.9th percentiles, in ms."""

    count: int
    avg_ms: float
    max_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p99_9_ms: float

    @classmethod
    def of(
        cls, values_ms: Sequence[float], sample_limit: int = SUMMARY_SAMPLE_LIMIT
    ) -> LatencySummary:
        """The summary of ``values_ms`` (at least one)."""
        if not values_ms:
            raise ValueError("no samples")
        sample = sorted_sample(values_ms, sample_limit)
        p50, p95, p99, p99_9 = (percentile(sample, f) for f in (0.5, 0.95, 0.99, 0.999))
        return cls(
            count=len(values_ms),
            avg_ms=math.fsum(values_ms) / len(values_ms),
            max_ms=max(values_ms),
            p50_ms=p50,
            p95_ms=p95,
            p99_ms=p99,
            p99_9_ms=p99_9,
        )


def running_percentiles(
    values_ms: Sequence[float],
    fractions: Sequence[float],
    sample_limit: int = RUNNING_SAMPLE_LIMIT,
) -> tuple[float, ...] | None:
    """The percentiles ``fractions`` of the samples so far, or ``None`` before the first."""
    if not values_ms:
        return None
    sample = sorted_sample(values_ms, sample_limit)
    return tuple(percentile(sample, f) for f in fractions)
