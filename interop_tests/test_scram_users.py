"""Users' SCRAM credentials through Kafka's own ``kafka-configs --entity-type users``,
confluent-kafka's AdminClient and the protocol: kept salted (never a password) in
the embedded default's security-metadata.json (mode 0600) across a restart, and with
ZooKeeper at Kafka's ``/config/users/<name>``, seen by every broker within a second."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.kafka_tools import KafkaTools
from interop_tests.protocol_client import ProtocolClient
from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from wirekafka.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from wirekafka.security.scram_credentials import (
    SCRAM_SHA_256,
    new_credential,
    parse_credential,
    salted_password,
)
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE

TIMEOUT_S = 30.0
SEEN_WITHIN_S = 1.0
PASSWORD = "alice-secret"
ADD_ALICE = (
    "--alter",
    "--add-config",
    f"SCRAM-SHA-256=[iterations=8192,password={PASSWORD}],SCRAM-SHA-512=[password={PASSWORD}]",
    "--entity-type",
    "users",
    "--entity-name",
    "alice",
)


def described(tools: KafkaTools, *args: str) -> list[str]:
    return tools.configs("--describe", "--entity-type", "users", *args).lines


def stored_credentials(broker: Broker) -> dict[str, dict[str, str]]:
    path = broker.data_dir / SECURITY_METADATA_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return json.loads(path.read_text())["scram_credentials"]


def files_holding(directory: Path, text: str) -> list[Path]:
    return [
        path
        for path in directory.rglob("*")
        if path.is_file() and text.encode() in path.read_bytes()
    ]


def test_kafka_configs_adds_describes_and_deletes_users(broker_factory: BrokerFactory) -> None:
    broker = broker_factory()
    tools = KafkaTools(broker.bootstrap)
    added = tools.configs(*ADD_ALICE)
    assert added.lines == ["Completed updating config for user alice."]
    tools.configs(
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[password=bob-secret]",
        "--entity-type",
        "users",
        "--entity-name",
        "bob",
    )
    alice_line = (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    bob_line = "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096"
    assert described(tools) == [alice_line, bob_line]
    assert described(tools, "--entity-name", "alice") == [alice_line]
    assert described(tools, "--entity-name", "nobody") == []  # as Kafka: nothing printed

    # salted, in Kafka's form, keys that the password (and nothing else) gives
    credentials = stored_credentials(broker)
    assert sorted(credentials) == ["alice", "bob"]
    for mechanism, iterations in (("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096)):
        kept = parse_credential(credentials["alice"][mechanism])
        assert kept.iterations == iterations
        assert kept == new_credential(mechanism, PASSWORD, iterations, salt=kept.salt)
        assert kept != new_credential(mechanism, "bob-secret", iterations, salt=kept.salt)
    assert files_holding(broker.data_dir, PASSWORD) == []
    assert files_holding(broker.data_dir, "bob-secret") == []

    broker.restart()
    assert stored_credentials(broker) == credentials
    assert described(tools) == [alice_line, bob_line]

    tools.configs(
        "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users", "--entity-name", "alice"
    )  # fmt: skip
    assert described(tools, "--entity-name", "alice") == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192"
    ]
    tools.configs(
        "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users", "--entity-name", "alice"
    )  # fmt: skip
    assert described(tools) == [bob_line]
    assert sorted(stored_credentials(broker)) == ["bob"]
    # deleting what is not there: Kafka's error, and the tool says so
    refused = tools.configs(
        "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users", "--entity-name", "alice",
        expect_status=1,
    )  # fmt: skip
    assert "Attempt to delete a user credential that does not exist" in refused.stderr
    broker.assert_running()


def test_confluent_kafka_admin_client(broker_factory: BrokerFactory) -> None:
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000), b"carol-secret"
            ),
            UserScramCredentialUpsertion(
                "dave",
                ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                b"dave-secret",
                b"salt",
            ),
        ]
    )
    assert {user: future.result(TIMEOUT_S) for user, future in futures.items()} == {
        "carol": None,
        "dave": None,
    }
    everyone = admin.describe_user_scram_credentials().result(TIMEOUT_S)
    assert sorted(everyone) == ["carol", "dave"]
    [carol] = everyone["carol"].scram_credential_infos
    assert (carol.mechanism, carol.iterations) == (ScramMechanism.SCRAM_SHA_256, 10000)
    [dave] = (
        admin.describe_user_scram_credentials(["dave"])["dave"]
        .result(TIMEOUT_S)
        .scram_credential_infos
    )
    assert (dave.mechanism, dave.iterations) == (ScramMechanism.SCRAM_SHA_512, 4096)
    kept = parse_credential(stored_credentials(broker)["dave"]["SCRAM-SHA-512"])
    assert kept == new_credential("SCRAM-SHA-512", "dave-secret", 4096, salt=b"salt")

    unknown = admin.describe_user_scram_credentials(["erin"])["erin"]
    with pytest.raises(KafkaException, match="does not exist"):
        unknown.result(TIMEOUT_S)
    too_few = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"x"
            )
        ]
    )["erin"]
    with pytest.raises(KafkaException, match="Too few iterations"):
        too_few.result(TIMEOUT_S)
    deleted = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
    )["carol"]
    assert deleted.result(TIMEOUT_S) is None
    assert sorted(admin.describe_user_scram_credentials().result(TIMEOUT_S)) == ["dave"]
    assert files_holding(broker.data_dir, "dave-secret") == []
    broker.assert_running()


# With ZooKeeper


@pytest.fixture
def kazoo(zookeeper: ZooKeeper) -> Iterator[KazooClient]:  # noqa: F811
    client = KazooClient(zookeeper.connect_string)
    client.start(timeout=TIMEOUT_S)
    yield client
    client.stop()
    client.close()


def alice_upsertion(iterations: int) -> ScramCredentialUpsertion:
    salt = b"alice-salt"
    return ScramCredentialUpsertion(
        name="alice",
        mechanism=SCRAM_SHA_256.type,
        iterations=iterations,
        salt=salt,
        salted_password=salted_password(SCRAM_SHA_256.name, PASSWORD, salt, iterations),
    )


def alice_iterations(client: ProtocolClient) -> int | None:
    """Alice's SCRAM-SHA-256 iterations as the broker describes them (None: no credential)."""
    response = client.request(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        0,
        DescribeUserScramCredentialsRequest(users=[UserName(name="alice")]),
    )
    [result] = response.results
    if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
        return None
    assert result.error_code == ErrorCode.NONE, result
    [info] = result.credential_infos
    return int(info.iterations)


def seen_after(client: ProtocolClient, iterations: int | None) -> float:
    """Seconds until the broker describes alice with ``iterations``; fails after a second."""
    started = time.monotonic()
    while alice_iterations(client) != iterations:
        assert time.monotonic() - started < SEEN_WITHIN_S, f"not seen within {SEEN_WITHIN_S} s"
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_user_added_on_one_broker_is_seen_by_the_other(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
    kazoo: KazooClient,
) -> None:
    brokers = [
        broker_factory(
            settings={"zookeeper.connect": zookeeper.connect_string, "broker.id": str(broker_id)}
        )
        for broker_id in (1, 2)
    ]
    with (
        ProtocolClient(*brokers[0].address, timeout_s=TIMEOUT_S) as first,
        ProtocolClient(*brokers[1].address, timeout_s=TIMEOUT_S) as second,
    ):
        assert alice_iterations(second) is None
        for iterations, writer, reader in ((8192, first, second), (5000, second, first)):
            response = writer.request(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                0,
                AlterUserScramCredentialsRequest(
                    deletions=[], upsertions=[alice_upsertion(iterations)]
                ),
            )
            assert [(r.user, r.error_code) for r in response.results] == [("alice", 0)]
            assert alice_iterations(writer) == iterations  # at once where it was made
            seen_after(reader, iterations)
    data = json.loads(kazoo.get("/config/users/alice")[0])
    assert list(data) == ["version", "config"] and data["version"] == 1
    assert list(data["config"]) == ["SCRAM-SHA-256"]
    kept = parse_credential(data["config"]["SCRAM-SHA-256"])
    assert kept == new_credential("SCRAM-SHA-256", PASSWORD, 5000, salt=b"alice-salt")
    changes = sorted(kazoo.get_children("/config/changes"))
    assert [json.loads(kazoo.get(f"/config/changes/{c}")[0]) for c in changes] == [
        {"version": 2, "entity_path": "users/alice"}
    ] * 2
    # Kafka's tool, through the second broker, sees what the first wrote
    tools = KafkaTools(brokers[1].bootstrap)
    assert described(tools) == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=5000"
    ]
    for broker in brokers:
        assert files_holding(broker.data_dir, PASSWORD) == []
        assert not (broker.data_dir / SECURITY_METADATA_FILE).exists()
        broker.assert_running()
