"""Cluster ids as Kafka makes them."""

from __future__ import annotations

import base64
import uuid

import pytest

from wirekafka.storage import meta_properties
from wirekafka.storage.meta_properties import new_cluster_id


def test_a_cluster_id_is_a_uuid_in_unpadded_url_safe_base64() -> None:
    made = new_cluster_id()
    assert len(made) == 22
    assert len(base64.urlsafe_b64decode(made + "==")) == 16


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's tools would read ``-t -abc...`` as an option: such an id is drawn again."""
    # 0xf8 in the first byte makes the base64 text start with "-" (62 << 2)
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(meta_properties.uuid, "uuid4", lambda: next(drawn))
    assert base64.urlsafe_b64encode(b"\xf8" + bytes(15)).startswith(b"-")
    assert new_cluster_id() == base64.urlsafe_b64encode(b"\x01" * 16).decode().rstrip("=")
