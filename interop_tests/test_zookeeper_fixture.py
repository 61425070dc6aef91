"""The ZooKeeper fixture starts a real server that kazoo can use, and stops it."""

from __future__ import annotations

from kazoo.client import KazooClient

from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401  (fixture)


def test_zookeeper_fixture_start_create_read_stop(zookeeper: ZooKeeper) -> None:  # noqa: F811
    assert zookeeper.running
    assert zookeeper.connect_string == f"127.0.0.1:{zookeeper.port}"
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10.0)
    client.start(timeout=15)
    try:
        client.create("/wirekafka/check", b'{"version":1}', makepath=True)
        data, stat = client.get("/wirekafka/check")
        assert data == b'{"version":1}'
        assert stat.version == 0
        assert client.get_children("/wirekafka") == ["check"]
    finally:
        client.stop()
        client.close()
    zookeeper.stop()
    assert not zookeeper.running


def test_missing_zookeeper_fails_with_install_hint(monkeypatch, tmp_path) -> None:
    import pytest

    from interop_tests.zookeeper import _started
    from wirekafka.testing import zookeeper as zk

    monkeypatch.setattr(zk, "ZOOKEEPER_JAR", tmp_path / "no-zookeeper.jar")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y zookeeper"):
        _started(tmp_path / "zk")
