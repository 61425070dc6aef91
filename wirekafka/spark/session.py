"""A local Spark session set up for Kafka pipelines on a small machine."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from wirekafka.spark import register


def local_session(
    app_name: str, *, cores: int = 2, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A ``local[cores]`` session with the ``wirekafka`` source registered.

    Python workers run the interpreter running this (so they import the same
    wirekafka), shuffles have one partition per core, times are UTC and the
    web UI is off.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
