"""The broker's settings: server.properties keys, --override pairs, listeners."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirekafka.config import (
    broker_config_from_properties,
    parse_overrides,
    read_properties_file,
)
from wirekafka.listeners import Listener, parse_listeners
from wirekafka.protocol.records.record import TimestampType
from wirekafka.storage.config import ConfigError, LogConfig


def test_defaults():
    config = broker_config_from_properties({})
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.advertised_listeners == config.listeners
    assert config.log_dirs == (Path("./wirekafka-data"),)
    assert config.auto_create_topics_enable is True
    assert config.broker_id == 0
    assert config.num_partitions == 1
    assert config.default_replication_factor == 1
    assert config.message_max_bytes == 1048588
    assert config.socket_request_max_bytes == 104857600
    assert config.connections_max_idle_ms == 600000
    assert config.producer_id_expiration_ms == 86400000
    assert config.producer_id_expiration_check_interval_ms == 600000
    assert config.log_flush_offset_checkpoint_interval_ms == 60000
    assert config.cluster_id is None
    assert config.log == LogConfig()
    assert config.properties == {}


def test_values_are_read():
    config = broker_config_from_properties(
        {
            "broker.id": "7",
            "listeners": "PLAINTEXT://0.0.0.0:19092",
            "advertised.listeners": "PLAINTEXT://kafka.example:9093",
            "log.dirs": "/a, /b,",
            "num.partitions": "6",
            "auto.create.topics.enable": " FALSE ",
            "message.max.bytes": "2000",
            "connections.max.idle.ms": "-1",
            "producer.id.expiration.ms": "5000",
            "producer.id.expiration.check.interval.ms": "60000",
            "log.flush.offset.checkpoint.interval.ms": "250",
            "cluster.id": "abc",
        }
    )
    assert config.broker_id == 7
    assert config.listeners == (Listener("PLAINTEXT", "0.0.0.0", 19092),)
    assert config.advertised_listeners == (Listener("PLAINTEXT", "kafka.example", 9093),)
    assert config.log_dirs == (Path("/a"), Path("/b"))
    assert config.num_partitions == 6
    assert config.auto_create_topics_enable is False
    assert config.message_max_bytes == 2000
    assert config.connections_max_idle_ms == -1
    assert config.producer_id_expiration_ms == 5000
    assert config.producer_id_expiration_check_interval_ms == 60000
    assert config.log_flush_offset_checkpoint_interval_ms == 250
    assert config.cluster_id == "abc"
    assert config.properties["num.partitions"] == "6"


def test_log_dirs_wins_over_log_dir():
    assert broker_config_from_properties({"log.dir": "/one"}).log_dirs == (Path("/one"),)
    both = broker_config_from_properties({"log.dir": "/one", "log.dirs": "/two"})
    assert both.log_dirs == (Path("/two"),)


def test_log_dirs_naming_no_directory_is_an_error():
    with pytest.raises(ConfigError, match=r"log\.dirs"):
        broker_config_from_properties({"log.dirs": " , ,"})


def test_unknown_key_is_an_error_naming_it():
    with pytest.raises(ConfigError, match=r"'log\.retention\.hourz'"):
        broker_config_from_properties({"log.retention.hourz": "1"})
    with pytest.raises(ConfigError, match=r"'retention\.ms'"):  # a topic key, not a broker key
        broker_config_from_properties({"retention.ms": "1"})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("broker.id", "zero", r"broker\.id='zero': not an integer"),
        ("broker.id", "-1", r"broker\.id=-1: must be between 0"),
        ("num.partitions", "0", r"num\.partitions=0: must be between 1 and 2147483647"),
        ("num.partitions", str(2**31), r"num\.partitions=2147483648"),
        ("num.partitions", "1.5", r"num\.partitions='1\.5': not an integer"),
        ("default.replication.factor", "0", r"default\.replication\.factor=0"),
        ("message.max.bytes", "-1", r"message\.max\.bytes=-1"),
        ("message.max.bytes", str(2**31), r"message\.max\.bytes=2147483648"),
        ("socket.request.max.bytes", "0", r"socket\.request\.max\.bytes=0"),
        ("connections.max.idle.ms", "-2", r"connections\.max\.idle\.ms=-2"),
        ("log.retention.check.interval.ms", "0", r"log\.retention\.check\.interval\.ms=0"),
        ("producer.id.expiration.ms", "", r"producer\.id\.expiration\.ms='': not an integer"),
        (
            "producer.id.expiration.check.interval.ms",
            "0",
            r"producer\.id\.expiration\.check\.interval\.ms=0",
        ),
        ("auto.create.topics.enable", "yes", r"auto\.create\.topics\.enable='yes'"),
        ("auto.create.topics.enable", "1", r"auto\.create\.topics\.enable='1'"),
        ("log.segment.bytes", "big", r"log\.segment\.bytes='big': not an integer"),
        ("log.segment.bytes", "13", r"log\.segment\.bytes=13: must be at least 14"),
        ("log.retention.hours", "-2", r"log\.retention\.hours=-2"),
        ("log.cleanup.policy", "forever", r"log\.cleanup\.policy='forever'"),
        ("log.message.timestamp.type", "Now", r"log\.message\.timestamp\.type='Now'"),
    ],
)
def test_bad_values_are_errors_naming_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        broker_config_from_properties({key: value})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PLAINTEXT://localhost", "is not of the form"),
        ("localhost:9092", "is not of the form"),
        ("PLAINTEXT://host:port", "is not of the form"),
        ("PLAINTEXT://:99999", "port 99999 is out of range"),
        ("OTHER://:9093", "OTHER has no security protocol"),
        ("PLAINTEXT://:9092,PLAINTEXT://:9093", "each listener name may appear once"),
        (" , ", "names no listener"),
    ],
)
def test_bad_listeners_are_errors(text, message):
    with pytest.raises(ConfigError, match=f"listeners.*{message}"):
        broker_config_from_properties({"listeners": text})


def test_advertised_listener_name_must_be_a_listener():
    with pytest.raises(ConfigError, match=r"advertised\.listeners.*EXTERNAL"):
        broker_config_from_properties(
            {
                "listeners": "PLAINTEXT://:9092",
                "advertised.listeners": "EXTERNAL://public.example:9092",
            }
        )


def test_listener_forms():
    assert parse_listeners("listeners", " plaintext://:0 ,") == (Listener("PLAINTEXT", "", 0),)
    with pytest.raises(ConfigError):
        parse_listeners("listeners", "PLAIN-TEXT://[::1]:9093")
    assert parse_listeners("listeners", "PLAINTEXT://[::1]:9093") == (
        Listener("PLAINTEXT", "::1", 9093),
    )
    assert Listener("PLAINTEXT", "::1", 9093).url() == "PLAINTEXT://[::1]:9093"
    assert Listener("PLAINTEXT", "", 0).url() == "PLAINTEXT://:0"


def test_properties_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   broker.id = 3\n"
        "listeners=PLAINTEXT://127.0.0.1:9094\n"
        "log.dirs: /var/lib/wirekafka\n"
        "num.partitions:4\n"
        "cluster.id=a=b\n"
        "log.retention.hours =\t48  \n"
        "  # indented comment\n"
    )
    properties = read_properties_file(path)
    assert properties == {
        "broker.id": "3",
        "listeners": "PLAINTEXT://127.0.0.1:9094",
        "log.dirs": "/var/lib/wirekafka",
        "num.partitions": "4",
        "cluster.id": "a=b",
        "log.retention.hours": "48",
    }
    config = broker_config_from_properties(properties)
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9094),)
    assert config.log.retention_ms == 48 * 3_600_000


@pytest.mark.parametrize("line", ["just-a-key", "=value", ": value"])
def test_properties_file_with_a_bad_line(tmp_path, line):
    path = tmp_path / "server.properties"
    path.write_text(f"broker.id=0\n{line}\n")
    with pytest.raises(ConfigError, match=r"server\.properties:2"):
        read_properties_file(path)


def test_missing_properties_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_properties_file(tmp_path / "nope.properties")


def test_overrides():
    assert parse_overrides(["broker.id=1", " log.dirs = /x ", "cluster.id=a=b", "empty="]) == {
        "broker.id": "1",
        "log.dirs": "/x",
        "cluster.id": "a=b",
        "empty": "",
    }
    assert parse_overrides(["a=1", "a=2"]) == {"a": "2"}


@pytest.mark.parametrize("pair", ["broker.id", "=1", " =1"])
def test_bad_override(pair):
    with pytest.raises(ConfigError, match="--override"):
        parse_overrides([pair])


def test_overrides_win_over_the_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\nbroker.id=1\n")
    merged = {**read_properties_file(path), **parse_overrides(["num.partitions=5"])}
    config = broker_config_from_properties(merged)
    assert (config.num_partitions, config.broker_id) == (5, 1)


def test_log_keys_reach_the_log_config():
    config = broker_config_from_properties(
        {
            "log.segment.bytes": "1048576",
            "log.roll.hours": "2",
            "log.retention.hours": "1",
            "log.retention.minutes": "30",  # finer units win
            "log.retention.bytes": "5000",
            "log.cleanup.policy": "compact,delete",
            "log.flush.interval.messages": "10",
            "log.index.interval.bytes": "128",
            "log.segment.delete.delay.ms": "0",
            "log.message.timestamp.type": "LogAppendTime",
        }
    )
    assert config.log == LogConfig(
        segment_bytes=1048576,
        roll_ms=2 * 3_600_000,
        retention_ms=30 * 60_000,
        retention_bytes=5000,
        cleanup_policy=frozenset({"compact", "delete"}),
        flush_interval_messages=10,
        index_interval_bytes=128,
        file_delete_delay_ms=0,
        message_timestamp_type=TimestampType.LOG_APPEND_TIME,
    )


def test_retention_ms_wins_over_hours():
    config = broker_config_from_properties({"log.retention.ms": "1234", "log.retention.hours": "5"})
    assert config.log.retention_ms == 1234
    forever = broker_config_from_properties({"log.retention.hours": "-1"})
    assert forever.log.retention_ms == -1


def test_queued_max_request_bytes_defaults_to_the_largest_request() -> None:
    assert broker_config_from_properties({}).queued_max_request_bytes == 104857600
    small = broker_config_from_properties({"socket.request.max.bytes": "1000"})
    assert small.queued_max_request_bytes == 1000
    for unbounded_in_kafka in ("-1", "0"):
        config = broker_config_from_properties({"queued.max.request.bytes": unbounded_in_kafka})
        assert config.queued_max_request_bytes == 104857600
    config = broker_config_from_properties({"queued.max.request.bytes": "300000000"})
    assert config.queued_max_request_bytes == 300000000


def test_queued_max_request_bytes_below_the_largest_request_is_an_error() -> None:
    with pytest.raises(
        ConfigError,
        match=r"queued\.max\.request\.bytes=1000: must be at least socket\.request\.max\.bytes",
    ):
        broker_config_from_properties({"queued.max.request.bytes": "1000"})
    with pytest.raises(ConfigError, match=r"queued\.max\.request\.bytes='lots'"):
        broker_config_from_properties({"queued.max.request.bytes": "lots"})


def test_per_ip_overrides_are_read_as_kafka_reads_them() -> None:
    config = broker_config_from_properties(
        {"max.connections.per.ip.overrides": "hostName:100, 127.0.0.1:200,::1:3,"}
    )
    assert config.max_connections_per_ip_overrides == {
        "hostName": 100,
        "127.0.0.1": 200,
        "::1": 3,
    }
    assert broker_config_from_properties({}).max_connections_per_ip_overrides == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("hostName", r"'hostName' is not of the form host:count"),
        (":5", r"':5' is not of the form host:count"),
        ("host name:5", r"'host name:5' is not of the form host:count"),
        ("host:many", r"'many' is not an integer"),
        ("host:-1", r"the count for host must be at least 0"),
    ],
)
def test_bad_per_ip_overrides_are_errors_naming_the_key(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"max\.connections\.per\.ip\.overrides=.*" + message):
        broker_config_from_properties({"max.connections.per.ip.overrides": value})


def test_max_connections_per_ip_may_be_zero_only_with_overrides() -> None:
    with pytest.raises(ConfigError, match=r"max\.connections\.per\.ip=0"):
        broker_config_from_properties({"max.connections.per.ip": "0"})
    config = broker_config_from_properties(
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:5"}
    )
    assert config.max_connections_per_ip == 0


def test_replication_keys_have_kafkas_names_and_defaults():
    config = broker_config_from_properties({})
    assert config.offsets_topic_replication_factor == 3
    assert config.replica_lag_time_max_ms == 30000
    assert config.auto_leader_rebalance_enable is True
    assert config.replica_fetch_max_bytes == 1048576
    assert config.replica_fetch_wait_max_ms == 500
    assert config.replica_fetch_min_bytes == 1
    assert config.log.min_insync_replicas == 1
    assert config.log.unclean_leader_election_enable is False
    given = broker_config_from_properties(
        {
            "offsets.topic.replication.factor": "1",
            "replica.lag.time.max.ms": "10000",
            "auto.leader.rebalance.enable": "false",
            "replica.fetch.max.bytes": "65536",
            "replica.fetch.wait.max.ms": "100",
            "replica.fetch.min.bytes": "10",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
        }
    )
    assert (
        given.offsets_topic_replication_factor,
        given.replica_lag_time_max_ms,
        given.auto_leader_rebalance_enable,
        given.replica_fetch_max_bytes,
        given.replica_fetch_wait_max_ms,
        given.replica_fetch_min_bytes,
        given.log.min_insync_replicas,
        given.log.unclean_leader_election_enable,
    ) == (1, 10000, False, 65536, 100, 10, 2, True)


def test_min_insync_replicas_and_unclean_election_are_topic_configs_too():
    broker = broker_config_from_properties({"min.insync.replicas": "2"})
    topic = broker.log.with_overrides(
        {"min.insync.replicas": "3", "unclean.leader.election.enable": "true"}
    )
    assert (topic.min_insync_replicas, topic.unclean_leader_election_enable) == (3, True)
    assert broker.log.with_overrides({}).min_insync_replicas == 2
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas=0"):
        broker.log.with_overrides({"min.insync.replicas": "0"})
    with pytest.raises(ConfigError, match=r"unclean\.leader\.election\.enable"):
        broker.log.with_overrides({"unclean.leader.election.enable": "maybe"})


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"offsets.topic.replication.factor": "0"}, "offsets.topic.replication.factor=0"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas=0"),
        ({"auto.leader.rebalance.enable": "yes"}, "auto.leader.rebalance.enable"),
        (
            {"replica.fetch.wait.max.ms": "600", "replica.lag.time.max.ms": "500"},
            "replica.fetch.wait.max.ms=600 must be at most replica.lag.time.max.ms=500",
        ),
    ],
)
def test_bad_replication_values_are_refused(properties, message):
    with pytest.raises(ConfigError, match=message):
        broker_config_from_properties(properties)


def test_controlled_shutdown_keys_have_kafkas_names_and_defaults():
    config = broker_config_from_properties({})
    assert config.controlled_shutdown_enable is True
    assert config.controlled_shutdown_max_retries == 3
    assert config.controlled_shutdown_retry_backoff_ms == 5000
    given = broker_config_from_properties(
        {
            "controlled.shutdown.enable": "false",
            "controlled.shutdown.max.retries": "0",
            "controlled.shutdown.retry.backoff.ms": "200",
        }
    )
    assert (
        given.controlled_shutdown_enable,
        given.controlled_shutdown_max_retries,
        given.controlled_shutdown_retry_backoff_ms,
    ) == (False, 0, 200)


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"controlled.shutdown.enable": "yes"}, r"controlled\.shutdown\.enable='yes'"),
        ({"controlled.shutdown.max.retries": "-1"}, r"controlled\.shutdown\.max\.retries=-1"),
        ({"controlled.shutdown.max.retries": "x"}, "not an integer"),
        ({"controlled.shutdown.retry.backoff.ms": "-5"}, r"retry\.backoff\.ms=-5"),
    ],
)
def test_bad_controlled_shutdown_values_are_refused(properties, message):
    with pytest.raises(ConfigError, match=message):
        broker_config_from_properties(properties)


def test_metrics_listener():
    assert broker_config_from_properties({}).metrics_listener is None
    assert broker_config_from_properties({"metrics.listener": ""}).metrics_listener is None
    config = broker_config_from_properties({"metrics.listener": "http://127.0.0.1:0"})
    assert config.metrics_listener == Listener("http", "127.0.0.1", 0)
    ipv6 = broker_config_from_properties({"metrics.listener": "http://[::1]:9404/"})
    assert ipv6.metrics_listener == Listener("http", "::1", 9404)
    assert ipv6.metrics_listener.url() == "http://[::1]:9404"
    for bad in ("https://127.0.0.1:9404", "127.0.0.1:9404", "http://127.0.0.1", "http://h:99999",
                "http://h:9404/metrics"):  # fmt: skip
        with pytest.raises(ConfigError, match=r"metrics\.listener"):
            broker_config_from_properties({"metrics.listener": bad})


@pytest.mark.parametrize(
    "class_name",
    [
        "kafka.security.authorizer.AclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    ],
)
def test_kafkas_authorizer_class_names_select_the_acl_authorizer(class_name):
    config = broker_config_from_properties(
        {
            "authorizer.class.name": class_name,
            "super.users": "User:admin; User:CN=broker,O=example",
            "allow.everyone.if.no.acl.found": "TRUE",
        }
    )
    assert config.authorizer is not None
    assert config.authorizer.super_users == {"User:admin", "User:CN=broker,O=example"}
    assert config.authorizer.allow_everyone_if_no_acl_found is True


def test_without_an_authorizer_class_name_there_is_no_authorizer():
    assert broker_config_from_properties({}).authorizer is None
    assert broker_config_from_properties({"authorizer.class.name": " "}).authorizer is None
    defaults = broker_config_from_properties(
        {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
    )
    assert defaults.authorizer is not None
    assert defaults.authorizer.super_users == frozenset()
    assert defaults.authorizer.allow_everyone_if_no_acl_found is False


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (
            {"authorizer.class.name": "com.example.MyAuthorizer"},
            r"authorizer\.class\.name=com\.example\.MyAuthorizer.*"
            r"kafka\.security\.authorizer\.AclAuthorizer or "
            r"org\.apache\.kafka\.metadata\.authorizer\.StandardAuthorizer",
        ),
        (
            {
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "super.users": "admin",
            },
            r"super\.users: 'admin' is not a principal",
        ),
        (
            {
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "allow.everyone.if.no.acl.found": "yes",
            },
            r"allow\.everyone\.if\.no\.acl\.found='yes'",
        ),
    ],
)
def test_a_bad_authorizer_value_names_its_key(properties, message):
    with pytest.raises(ConfigError, match=message):
        broker_config_from_properties(properties)
