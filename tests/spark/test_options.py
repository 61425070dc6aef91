"""The Kafka source's and sink's options: Spark's names, Spark's defaults, named errors."""

from __future__ import annotations

import pytest

from wirekafka.spark.options import (
    EARLIEST,
    LATEST,
    Assign,
    OffsetSpec,
    OptionError,
    Subscribe,
    SubscribePattern,
    offsets_from_json,
    offsets_json,
    parse_offsets,
    sink_options,
    source_options,
)

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_batch_defaults_read_everything() -> None:
    options = source_options({**BOOTSTRAP, "subscribe": "a, b"}, streaming=False)
    assert options.subscription == Subscribe(("a", "b"))
    assert options.starting == OffsetSpec("earliest")
    assert options.ending == OffsetSpec("latest")
    assert options.max_offsets_per_trigger is None
    assert options.fail_on_data_loss is True
    assert options.include_headers is False
    assert options.poll_timeout_ms == 120_000


def test_stream_starts_at_latest_by_default() -> None:
    options = source_options({**BOOTSTRAP, "subscribe": "a"}, streaming=True)
    assert options.starting == OffsetSpec("latest")


def test_options_are_case_insensitive_as_in_spark() -> None:
    options = source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubscribePattern": "t-.*",
            "maxoffsetspertrigger": "10",
            "FAILONDATALOSS": "False",
            "includeheaders": "TRUE",
        },
        streaming=True,
    )
    assert options.bootstrap_servers == "h:1"
    assert options.subscription == SubscribePattern("t-.*")
    assert options.max_offsets_per_trigger == 10
    assert options.fail_on_data_loss is False
    assert options.include_headers is True


def test_client_settings_pass_through_without_the_prefix() -> None:
    options = source_options(
        {**BOOTSTRAP, "subscribe": "a", "kafka.security.protocol": "PLAINTEXT"}, streaming=False
    )
    assert options.client_config == {
        "bootstrap.servers": "127.0.0.1:9092",
        "security.protocol": "PLAINTEXT",
    }


@pytest.mark.parametrize(
    "key",
    ["auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.serializer"],
)
def test_client_settings_the_source_manages_are_refused(key: str) -> None:
    with pytest.raises(OptionError, match=f"kafka.{key} is not supported"):
        source_options({**BOOTSTRAP, "subscribe": "a", f"kafka.{key}": "x"}, streaming=False)


def test_assign_and_pattern() -> None:
    assign = source_options({**BOOTSTRAP, "assign": '{"a": [0, 2], "b": [1]}'}, streaming=False)
    assert assign.subscription == Assign(frozenset({("a", 0), ("a", 2), ("b", 1)}))
    assert assign.subscription.matches("b") and not assign.subscription.matches("c")
    pattern = SubscribePattern("page-.*")
    assert pattern.matches("page-views") and not pattern.matches("x-page-views")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a"}, "kafka.bootstrap.servers must be given"),
        ({**BOOTSTRAP}, "exactly one of assign, subscribe, subscribePattern"),
        ({**BOOTSTRAP, "subscribe": "a", "subscribePattern": "b"}, "exactly one of"),
        ({**BOOTSTRAP, "subscribe": " , "}, "subscribe must name at least one topic"),
        ({**BOOTSTRAP, "subscribePattern": "("}, "is not a valid pattern"),
        ({**BOOTSTRAP, "assign": "[1]"}, "assign must be JSON"),
        ({**BOOTSTRAP, "assign": '{"a": [-1]}'}, "must list partition numbers"),
        ({**BOOTSTRAP, "assign": '{"a": []}'}, "assign must name at least one partition"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": "latest"}, "cannot be latest"),
        (
            {**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": {"0": -1}}'},
            "cannot be latest",
        ),
        ({**BOOTSTRAP, "subscribe": "a", "endingOffsets": "earliest"}, "cannot be earliest"),
        (
            {**BOOTSTRAP, "subscribe": "a", "endingOffsets": '{"a": {"0": -2}}'},
            "cannot be earliest",
        ),
        ({**BOOTSTRAP, "subscribe": "a", "failOnDataLoss": "maybe"}, "must be true or false"),
        ({**BOOTSTRAP, "subscribe": "a", "maxOffsetsPerTrigger": "-5"}, "positive whole number"),
        ({**BOOTSTRAP, "subscribe": "a", "maxOffsetsPerTrigger": "ten"}, "positive whole number"),
        (
            {**BOOTSTRAP, "assign": '{"a": [0]}', "endingOffsets": '{"a": {"0": 5, "1": 7}}'},
            "endingOffsets names partitions that are not assigned: a-1",
        ),
    ],
)
def test_bad_batch_options_are_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        source_options(options, streaming=False)


def test_a_stream_has_no_ending_offsets() -> None:
    with pytest.raises(OptionError, match="endingOffsets is for batch queries"):
        source_options({**BOOTSTRAP, "subscribe": "a", "endingOffsets": "latest"}, streaming=True)


def test_offsets_json_round_trip() -> None:
    spec = parse_offsets('{"b": {"1": 7, "0": -2}, "a": {"10": -1}}', "startingOffsets")
    assert spec == OffsetSpec("specific", {("b", 1): 7, ("b", 0): EARLIEST, ("a", 10): LATEST})
    nested = offsets_json(spec.offsets)
    assert list(nested) == ["a", "b"] and list(nested["b"]) == ["0", "1"]
    assert offsets_from_json(nested) == spec.offsets
    assert parse_offsets(" Earliest ", "x") == OffsetSpec("earliest")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": {"0": -3}}',
        '{"a": {"x": 1}}',
        '{"a": {"0": 1.5}}',
        '{"a": {"0": true}}',
        '{"a": {}}',
        '{"a": 3}',
        "{}",
        "[]",
        "{",
        '{"a": {"-1": 3}}',
    ],
)
def test_bad_offsets_json_is_refused(text: str) -> None:
    with pytest.raises(OptionError, match="startingOffsets"):
        parse_offsets(text, "startingOffsets")


def test_sink_options() -> None:
    options = sink_options({**BOOTSTRAP, "topic": "out", "kafka.linger.ms": "20"})
    assert options.topic == "out"
    assert options.client_config["linger.ms"] == "20"
    assert sink_options(BOOTSTRAP).topic is None
    with pytest.raises(OptionError, match="topic must not be empty"):
        sink_options({**BOOTSTRAP, "topic": ""})
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers"):
        sink_options({"topic": "out"})
