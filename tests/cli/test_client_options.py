"""The client options every tool takes, and the one librdkafka log policy they set."""

from __future__ import annotations

import argparse
from pathlib import Path

from wirekafka.cli.client_options import LOGIN_FAILURES, add_client_options, client_config


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_client_options(parser)
    return parser.parse_args(list(argv))


def test_librdkafka_is_silent_unless_asked() -> None:
    config = client_config(parsed())
    assert config == {
        "bootstrap.servers": "localhost:9092",
        "log_level": 0,
        "error_cb": LOGIN_FAILURES.note,  # a failed login is reported as the tool's error
    }


def test_debug_turns_on_librdkafkas_debug_contexts() -> None:
    config = client_config(parsed("--debug", "broker,protocol"))
    assert (config["debug"], config["log_level"]) == ("broker,protocol", 7)


def test_the_command_config_and_the_tools_settings_win(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("log_level=3\nclient.id=ops\n")
    config = client_config(parsed("--command-config", str(properties)))
    assert (config["log_level"], config["client.id"]) == ("3", "ops")
    assert client_config(parsed(), log_level=6)["log_level"] == 6
