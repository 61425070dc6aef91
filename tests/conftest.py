"""Fixtures the unit tests of several packages share."""

from __future__ import annotations

import errno
import os

import pytest

from wirekafka.storage import cluster_metadata


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
