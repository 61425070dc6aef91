"""The broker's compaction task: a pass that fails, whatever it raises, is logged with
its partition; the other partitions are compacted and the task goes on."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import SimpleNamespace

import trio

from wirekafka.config import broker_config_from_properties
from wirekafka.server.broker import Broker


@dataclass
class FakeLog:
    name: str

    def __repr__(self) -> str:
        return f"PartitionLog({self.name})"


class FakeLogs:
    def __init__(self, failures: dict[str, Exception]) -> None:
        self.logs = [FakeLog("bad-0"), FakeLog("good-0"), FakeLog("oserror-0")]
        self.failures = failures
        self.cleaned: list[str] = []

    def logs_to_compact(self) -> list[FakeLog]:
        return self.logs

    def clean(self, partition_log: FakeLog) -> None:
        self.cleaned.append(partition_log.name)
        failure = self.failures.get(partition_log.name)
        if failure is not None:
            raise failure


def test_a_failing_pass_is_logged_and_the_task_goes_on(tmp_path, caplog):
    config = broker_config_from_properties(
        {"log.dirs": str(tmp_path), "log.cleaner.backoff.ms": "1"}
    )
    broker = Broker(config)
    logs = FakeLogs({"bad-0": KeyError("a bug"), "oserror-0": OSError(5, "I/O error")})
    broker.context = SimpleNamespace(logs=logs)  # type: ignore[assignment]

    async def main() -> None:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(broker._compact)
                while len(logs.cleaned) < 6:  # two rounds over every log
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()

    with caplog.at_level(logging.ERROR, logger="wirekafka.server"):
        trio.run(main)
    assert logs.cleaned[:6] == ["bad-0", "good-0", "oserror-0"] * 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("compaction of PartitionLog(bad-0) failed") >= 2
    assert messages.count("compaction of PartitionLog(oserror-0) failed: [Errno 5] I/O error") >= 2
