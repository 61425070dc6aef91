"""``meta.properties``: which broker and cluster a log dir belongs to.

The same key=value layout Kafka writes in ZooKeeper mode (``version=0``,
``broker.id``, ``cluster.id``).
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path

from wirekafka.storage.files import META_PROPERTIES_FILE, write_atomically


class MetaPropertiesError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class MetaProperties:
    broker_id: int
    cluster_id: str
    version: int = 0


def new_cluster_id() -> str:
    """A random cluster id in Kafka's form: a UUID in URL-safe base64, unpadded,
    never starting with ``-`` (as Kafka draws again: a command line would read
    such an id as an option)."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not made.startswith("-"):
            return made


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    path = log_dir / META_PROPERTIES_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    try:
        return MetaProperties(
            broker_id=int(values["broker.id"]),
            cluster_id=values["cluster.id"],
            version=int(values.get("version", "0")),
        )
    except (KeyError, ValueError) as exc:
        raise MetaPropertiesError(f"{path} is missing or has a bad {exc}") from exc


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    text = (
        "#\n# written by wirekafka\n"
        f"version={meta.version}\nbroker.id={meta.broker_id}\ncluster.id={meta.cluster_id}\n"
    )
    write_atomically(log_dir / META_PROPERTIES_FILE, text.encode())
