"""The figures tools/bench_peers.py takes from its load generators."""

from __future__ import annotations

import json

from tools.bench_peers import (
    Result,
    delivered_all,
    figure,
    median_result,
    rdkafka_requests,
    rdkafka_round_trip_ms,
)


def test_cpu_per_gb_is_of_the_payload_the_client_counted():
    # 1M records of 1,024 bytes (1.024 MB/s at 1,000 msg/s): 1.024 GB, 2.048 s of CPU
    assert Result(1_000_000, 1000.0, 1.024, None, 2.048).cpu_s_per_gb == 2.0


def test_requests_are_counted_by_api_not_by_write():
    stats = {
        "tx": 5065,  # librdkafka counts every TLS write here
        "txmsgs": 1000,
        "brokers": {
            "sasl_ssl://127.0.0.1:9094/0": {"req": {"Produce": 10, "Metadata": 1, "Fetch": 0}},
            "sasl_ssl://127.0.0.1:9094/bootstrap": {"req": {"ApiVersion": 1}},
        },
    }
    output = "% delivered\n" + json.dumps(stats) + "\n"
    assert rdkafka_requests(output, 2000, "txmsgs") == 24.0
    assert rdkafka_requests("no statistics\n", 2000, "txmsgs") is None


def test_a_producer_that_delivered_all_it_sent_has_not_failed_whatever_its_exit_status():
    raced = (
        "% 499999 messages produced (512000000 bytes), 500000 delivered "
        "(offset 499999, 0 failed) in 1005ms: 497497 msgs/s and 509.44 MB/s\n"
    )
    assert delivered_all(raced)
    assert not delivered_all(raced.replace("0 failed", "3 failed"))
    assert not delivered_all(raced.replace("500000 delivered", "499000 delivered"))
    assert not delivered_all("% Sending 500000 messages of size 1024 bytes\n")


def test_the_median_of_runs_keeps_the_load_generator_s_cpu_per_message():
    runs = [
        Result(1_000, 1000.0, 0.1, None, 0.001, load_cpu_s=seconds)
        for seconds in (0.002, 0.001, 0.003)
    ]
    median = median_result(runs)
    assert median.load_cpu_s == 0.002
    assert median.load_cpu_us_per_message == 2.0
    assert Result(1_000, 1000.0, 0.1, None, 0.001).load_cpu_us_per_message is None


def test_the_round_trip_is_averaged_over_every_window_of_the_brokers_produced_to():
    def stats(produce_rtt: tuple[int, int], other_rtt: tuple[int, int]) -> str:
        def broker(produces: int, rtt: tuple[int, int]) -> dict[str, object]:
            return {
                "req": {"Produce": produces, "Metadata": 1},
                "rtt": {"sum": rtt[0], "cnt": rtt[1], "avg": rtt[0] // max(rtt[1], 1)},
            }

        return json.dumps(
            {"brokers": {"127.0.0.1:9092/0": broker(5, produce_rtt), "b/1": broker(0, other_rtt)}}
        )

    # windows of 2 and 6 round trips (µs): 8 in all, 16,000 µs; the metadata-only
    # broker's round trips are not the producer's
    output = "\n".join(
        ["% Sending", stats((1_000, 2), (90_000, 1)), stats((15_000, 6), (0, 0)), "% done"]
    )
    assert rdkafka_round_trip_ms(output) == 2.0
    assert rdkafka_round_trip_ms("no statistics\n") is None
    assert rdkafka_round_trip_ms(stats((0, 0), (5, 1))) is None


def test_the_median_of_runs_keeps_the_round_trip():
    runs = [Result(1_000, 1000.0, 0.1, None, 0.001, round_trip_ms=ms) for ms in (3.0, 1.0, 2.0)]
    assert median_result(runs).round_trip_ms == 2.0
    unknown = Result(1_000, 1000.0, 0.1, None, 0.001)  # a run without statistics
    assert median_result([runs[0], unknown]).round_trip_ms == 3.0


def test_the_latency_rows_show_the_largest_latency_of_all_runs():
    runs = [
        Result(1_000, 1000.0, 0.1, None, 0.001, p50_ms=0.9, p99_ms=p99, max_ms=largest)
        for p99, largest in ((5.0, 12.0), (4.0, 110.0), (6.0, 9.0))
    ]
    assert figure(runs[1], "ms") == "0.9/4.0 ms (max 110.0)"
    median = median_result(runs)
    assert (median.p99_ms, median.max_ms) == (5.0, 110.0)  # one run's stall is not voted away
    assert figure(median, "ms") == "0.9/5.0 ms (max 110.0)"
    without = Result(1_000, 1000.0, 0.1, None, 0.001, p50_ms=0.9, p99_ms=5.0)
    assert figure(without, "ms") == "0.9/5.0 ms"
    assert median_result([without]).max_ms is None
