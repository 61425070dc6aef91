"""perf produce's summary (the JSON the tests and scripts read)."""

from __future__ import annotations

from wirekafka.cli.perf_common import BYTES_PER_MB
from wirekafka.cli.perf_produce import _Summary


def test_the_json_s_mb_per_s_is_of_the_records_per_s_it_gives() -> None:
    """Both rounded: MB/s is taken of the rate as given, so that a reader recomputing
    it gets the same figure (this elapsed time rounds the two apart otherwise)."""
    summary = _Summary(
        num_records=3000,
        record_size_bytes=100,
        elapsed_s=0.013121187091902447,
        records_sent=3000,
        latency=None,
        failures=[],
    )
    found = summary.to_json("t")
    assert found["records_per_s"] == 228637.85
    assert found["mb_per_s"] == round(228637.85 * 100 / BYTES_PER_MB, 6)
