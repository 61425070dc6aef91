"""Where the JVM jars of the interop suite are, and a Java command line over them.

``interop_tests/jvm/fetch`` (run by the README's test command) has Maven copy
each classpath of ``interop_tests/jvm/pom.xml`` into ``interop_tests/jvm/jars/<name>``.
A test that needs one fails with a message saying how to fetch it: the suite
never skips the JVM side.
"""

from __future__ import annotations

import shutil
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parent / "jvm"
JARS_DIR = JVM_DIR / "jars"

SPARK_KAFKA = "spark-kafka"
KAFKA_CLIENTS_3 = "kafka-clients-3.9"
KAFKA_CLIENTS_4 = "kafka-clients-4"
KAFKA = "kafka"  # Apache Kafka's broker and tools


class JarsMissing(AssertionError):
    """The jars a test needs were not fetched."""


def jars(name: str) -> list[Path]:
    """The jars of one classpath, sorted; fails if they were not fetched."""
    found = sorted((JARS_DIR / name).glob("*.jar"))
    if not found:
        raise JarsMissing(
            f"no jars in {JARS_DIR / name}: run {JVM_DIR / 'fetch'} (Maven fetches them)"
        )
    return found


def classpath(name: str) -> str:
    return ":".join(str(jar) for jar in jars(name))


def java() -> str:
    found = shutil.which("java")
    if found is None:
        raise JarsMissing("no java on PATH: the JVM tests need Java 17")
    return found
