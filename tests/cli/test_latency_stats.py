"""The perf tools' latency statistics: nearest-rank percentiles and summaries."""

from __future__ import annotations

import array
import random

import pytest

from wirekafka.cli.latency_stats import (
    LatencySummary,
    percentile,
    running_percentiles,
    sorted_sample,
)


def test_percentiles_of_one_to_a_hundred_are_their_ranks():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.999) == 100.0  # rank ceil(99.9) = 100
    assert percentile(values, 1.0) == 100.0
    assert percentile(values, 0.001) == 1.0


def test_nearest_rank_rounds_the_rank_up():
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 0.25) == 10.0  # rank 1
    assert percentile(values, 0.26) == 20.0  # rank ceil(1.04) = 2
    assert percentile(values, 0.5) == 20.0  # rank 2
    assert percentile(values, 0.51) == 30.0
    assert percentile(values, 0.75) == 30.0
    assert percentile(values, 0.99) == 40.0


def test_one_sample_is_every_percentile():
    for fraction in (0.0001, 0.5, 0.999, 1.0):
        assert percentile([7.5], fraction) == 7.5


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.0001, 50.0])
def test_a_fraction_outside_zero_to_one_is_refused(fraction):
    with pytest.raises(ValueError, match="not in"):
        percentile([1.0, 2.0], fraction)


def test_no_samples_have_no_percentile_and_no_summary():
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="no samples"):
        LatencySummary.of([])
    assert running_percentiles([], (0.5, 0.99)) is None


def test_summary_gives_count_mean_max_and_percentiles():
    values = array.array("d", range(1000, 0, -1))  # 1000 .. 1, descending
    random.Random(18).shuffle(values)
    before = values.tolist()
    summary = LatencySummary.of(values)
    assert values.tolist() == before  # the samples are left as they were
    assert summary == LatencySummary(
        count=1000,
        avg_ms=500.5,
        max_ms=1000.0,
        p50_ms=500.0,
        p95_ms=950.0,
        p99_ms=990.0,
        p99_9_ms=999.0,
    )


def test_summary_of_equal_samples():
    summary = LatencySummary.of([2.5] * 10)
    assert (summary.avg_ms, summary.max_ms, summary.p50_ms, summary.p99_9_ms) == (2.5,) * 4


def test_a_sample_takes_every_kth_value_past_its_limit():
    values = array.array("d", range(1, 1001))
    assert sorted_sample(values, 1000) == list(values)
    assert sorted_sample(values, 5000) == list(values)
    assert sorted_sample(values, 100) == [float(v) for v in range(1, 1001, 10)]
    assert sorted_sample(values, 99) == [float(v) for v in range(1, 1001, 11)]  # 91 values
    assert sorted_sample(values, 1) == [1.0]
    assert sorted_sample([3.0, 1.0, 2.0], 3) == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="below 1"):
        sorted_sample(values, 0)


def test_past_the_sample_limit_count_mean_and_max_stay_exact():
    values = array.array("d", range(1, 1001))
    summary = LatencySummary.of(values, sample_limit=100)  # 1, 11, ..., 991
    assert (summary.count, summary.avg_ms, summary.max_ms) == (1000, 500.5, 1000.0)
    assert (summary.p50_ms, summary.p99_ms, summary.p99_9_ms) == (491.0, 981.0, 991.0)


def test_sampled_percentiles_stay_close_on_a_large_run():
    rng = random.Random(11)
    values = array.array("d", (rng.expovariate(1 / 5.0) for _ in range(200_000)))
    exact = sorted(values)
    sampled = LatencySummary.of(values, sample_limit=20_000)
    for fraction, got in ((0.5, sampled.p50_ms), (0.95, sampled.p95_ms), (0.99, sampled.p99_ms)):
        assert got == pytest.approx(percentile(exact, fraction), rel=0.05)


def test_running_percentiles_follow_a_growing_run():
    values = array.array("d")
    rng = random.Random(7)
    for _ in range(20):
        values.extend(rng.uniform(0.0, 100.0) for _ in range(rng.randrange(1, 500)))
        expected = sorted(values)
        got = running_percentiles(values, (0.5, 0.99))
        assert got == (percentile(expected, 0.5), percentile(expected, 0.99))


def test_percentiles_match_a_brute_force_definition():
    rng = random.Random(3)
    for _ in range(200):
        values = sorted(rng.uniform(0.0, 10.0) for _ in range(rng.randrange(1, 300)))
        fraction = rng.choice((0.5, 0.95, 0.99, 0.999, rng.uniform(0.001, 1.0)))
        # the smallest sample with at least `fraction` of the samples at or below it
        brute = min(v for v in values if sum(w <= v for w in values) >= fraction * len(values))
        assert percentile(values, fraction) == brute
