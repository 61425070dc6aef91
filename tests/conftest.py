"""Fixtures the unit tests of several packages share."""

from __future__ import annotations

import errno
import os

import pytest

from wirekafka import worker_threads
from wirekafka.storage import cluster_metadata

# A function that may block, called on the event loop, fails the test that does it
# (the broker itself only logs it); see wirekafka.worker_threads.
worker_threads.set_blocking_check("raise")


@pytest.fixture
def full_disk(monkeypatch):
    """While ``full_disk["full"]``, every write of cluster-metadata.json fails with ENOSPC."""
    state = {"full": False}
    real = cluster_metadata.write_atomically

    def write(path, data):
        if state["full"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(cluster_metadata, "write_atomically", write)
    return state
