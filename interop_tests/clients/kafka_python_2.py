"""kafka-python 2.0.2: the kafka-python adapter's code, run in a venv of its own.

kafka-python 2.0.2 shares the import name ``kafka`` with kafka-python 3, so it
lives in a separate venv, by default ``.venv/kafka-python-2`` at the top of the
repo (inside the gitignored dev venv), or the interpreter named by
``WIREKAFKA_KAFKA_PYTHON_2``. Each call runs ``python -m
interop_tests.clients.kafka_python`` there with one JSON job (see that module);
its group members run ``interop_tests/group_driver.py`` there with the same
member loop. 2.0.2 uses fixed request versions (Metadata v1, Produce up to v7,
Fetch v4, ListOffsets v1) and has no idempotence, cooperative assignor or
static membership.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from interop_tests.clients import kafka_python
from interop_tests.clients.adapter import (
    Capability,
    ClientAdapter,
    Counts,
    MemberConfig,
    Start,
    TopicAlreadyExists,
)
from interop_tests.group_driver import ROOT, MemberEvents, start_python_member
from interop_tests.support import Got, Sample

VENV = ROOT / ".venv" / "kafka-python-2"
INSTALL = (
    f"python3 -m venv {VENV.relative_to(ROOT)} && "
    f"{VENV.relative_to(ROOT)}/bin/pip install kafka-python==2.0.2 python-snappy lz4 zstandard xxhash"
)
TIMEOUT_S = 180
VERSION = "2.0.2"


class DriverFailed(AssertionError):
    """kafka-python 2.0.2's interpreter is missing, or a job failed there."""


def interpreter() -> Path:
    configured = os.environ.get("WIREKAFKA_KAFKA_PYTHON_2")
    python = Path(configured) if configured else VENV / "bin" / "python"
    if not python.exists():
        raise DriverFailed(
            f"kafka-python {VERSION}'s venv is missing ({python}); create it with:\n{INSTALL}"
        )
    return python


class KafkaPython2(ClientAdapter):
    name = "kafka-python-2"
    capabilities = frozenset(Capability) - {
        Capability.IDEMPOTENCE,
        Capability.COOPERATIVE,
        Capability.STATIC_MEMBERSHIP,
        Capability.KEEPS_GENERATION_THROUGH_RESTART,
    }
    cross_codec = "snappy"
    missing_topic_error = kafka_python.KafkaPython.missing_topic_error

    def __init__(self) -> None:
        self._checked = False

    def _drive(self, op: str, **arguments: Any) -> Any:
        python = interpreter()
        if not self._checked:  # once: the venv holds the kafka-python it should
            self._checked = True
            version = self._drive("version")
            if version != VERSION:
                self._checked = False
                raise DriverFailed(f"{python} has kafka-python {version}, expected {VERSION}")
        job = kafka_python.encode_call(op, **arguments)
        result = subprocess.run(
            [str(python), "-m", kafka_python.__name__],
            input=json.dumps(job).encode(),
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
            cwd=ROOT,
        )
        if result.returncode != 0:
            raise DriverFailed(
                f"kafka-python {VERSION} failed on {op} (exit {result.returncode}):\n"
                + result.stderr.decode(errors="replace")[-6000:]
            )
        reply = json.loads(result.stdout)
        if "error" in reply:
            kind, text = reply["error"]
            assert kind == "TopicAlreadyExists", reply
            raise TopicAlreadyExists(text)
        return kafka_python.decode_answer(op, reply["answer"])

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        assert not idempotent, f"{self.name} has no idempotent producer"
        return self._drive(
            "produce", bootstrap=bootstrap, topic=topic, samples=samples, codec=codec, acks=acks
        )

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        return self._drive("read", bootstrap=bootstrap, topic=topic, counts=counts, starts=starts)

    def topics(self, bootstrap: str) -> set[str]:
        return self._drive("topics", bootstrap=bootstrap)

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        return self._drive("describe_topic", bootstrap=bootstrap, topic=topic)

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        return self._drive("produce_to_missing_topic", bootstrap=bootstrap, topic=topic)

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        self._drive("create_topic", bootstrap=bootstrap, topic=topic, partitions=partitions)

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        return self._drive(
            "watermarks", bootstrap=bootstrap, topic=topic, partitions=list(partitions)
        )

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        return self._drive("offsets_for_times", bootstrap=bootstrap, topic=topic, times=times)

    def committed(
        self, bootstrap: str, group: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, int | None]:
        return self._drive(
            "committed", bootstrap=bootstrap, group=group, topic=topic, partitions=list(partitions)
        )

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        return start_python_member(
            name,
            config.driver_config(name, self),
            kafka_python.__name__,  # the same loop, in 2.0.2's interpreter
            log_dir=log_dir,
            client=self.name,
            python=interpreter(),
        )


ADAPTER = KafkaPython2()
