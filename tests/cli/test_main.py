"""The ``wirekafka`` command's dispatch to its subcommands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wirekafka.cli import COMMANDS, main


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out
    for name, _, summary in COMMANDS:
        assert name in listed and summary in listed


def test_each_subcommand_has_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    for name, _, _ in COMMANDS:
        with pytest.raises(SystemExit) as exited:
            main([name, "--help"])
        assert exited.value.code == 0
        assert f"usage: wirekafka {name}" in capsys.readouterr().out


def test_an_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["no-such-command"])
    assert exited.value.code == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err


def test_serve_loads_none_of_the_tools_libraries() -> None:
    """A broker's start pays for neither confluent-kafka, rich nor prometheus_client."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from wirekafka.cli import _parser\n"
            "import wirekafka.server.broker\n"
            "_parser('serve')\n"
            "print(sorted(m for m in ('confluent_kafka', 'rich', 'prometheus_client')"
            " if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert loaded.strip() == "[]"


def test_a_client_setting_librdkafka_refuses_is_a_usage_error_in_every_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No tool shows a traceback for a bad ``--command-config``: each names the key (exit 2)."""
    config = tmp_path / "client.properties"
    config.write_text("no.such.setting=1\n")
    for command in (["topics", "list"], ["groups", "list"]):
        assert main([*command, "--command-config", str(config)]) == 2
        assert '"no.such.setting"' in capsys.readouterr().err
