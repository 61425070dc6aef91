"""ACLs kept and served as Kafka's tools and clients expect them.

Kafka's own ``kafka-acls`` adds, lists (showing what it shows against Kafka)
and removes ACLs, literal and prefixed; confluent-kafka's AdminClient creates,
describes and deletes them; a restart keeps them (the embedded default's
security metadata file, mode 0600). With ZooKeeper, three brokers: an ACL
created through one broker is in the other two's DescribeAcls within a second,
its znode holds Kafka's JSON, and a deletion travels the same way.

Every broker here has ``authorizer.class.name`` set and the PLAINTEXT
client's principal, ``User:ANONYMOUS``, as super user, so the tools may manage
ACLs; what the ACLs then allow is checked where the APIs are authorized.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from interop_tests.broker import Broker, Brokers
from interop_tests.kafka_tools import KafkaTools, ToolRun
from interop_tests.protocol_client import ProtocolClient
from interop_tests.test_zk_cluster import Cluster
from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from wirekafka.protocol.messages.describe_acls import DescribeAclsRequest
from wirekafka.security import acl
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE

TIMEOUT_S = 60.0
PROPAGATION_S = 1.0  # an ACL change reaches every broker of a cluster within this
SECURED = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}
ACLS_VERSION = 3  # CreateAcls, DescribeAcls and DeleteAcls: the newest, the 4.x client's pick


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Brokers(tmp_path_factory.mktemp("acls")) as brokers:
        broker = brokers(SECURED)
        yield broker
        broker.assert_running()
        broker.stop()


@pytest.fixture
def new_topic(topic_name: Callable[[str], str]) -> Callable[[str], str]:
    """Topic names without underscores, which kafka-acls passes on unchanged."""
    return lambda suffix="": topic_name(suffix).replace("_", "-")


# -- what kafka-acls prints, as it prints it against Kafka


def resource(name: str, pattern_type: str = "LITERAL", resource_type: str = "TOPIC") -> str:
    return f"ResourcePattern(resourceType={resource_type}, name={name}, patternType={pattern_type})"


def entry(principal: str, operation: str, permission: str = "ALLOW", host: str = "*") -> str:
    return (
        f"(principal={principal}, host={host}, operation={operation}, permissionType={permission})"
    )


def listed(run: ToolRun) -> dict[str, set[str]]:
    """``--list``'s output: per resource pattern, its ACL entries. Fails on a line that
    is neither a resource header nor an entry under one."""
    found: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in run.lines:
        if line.startswith("Current ACLs for resource `") and line.endswith("`:"):
            current = found.setdefault(line.removeprefix("Current ACLs for resource `")[:-2], set())
        else:
            assert current is not None and line.startswith("\t("), f"unexpected line {line!r}"
            current.add(line.strip())
    return found


def test_kafka_acls_adds_lists_and_removes_literal_and_prefixed_acls(
    acl_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    tools = KafkaTools(acl_broker.bootstrap)
    topic, prefix = new_topic("t"), new_topic("p")

    added = tools.acls(
        "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic
    )
    assert added.stdout == (
        f"Adding ACLs for resource `{resource(topic)}`: \n \t{entry('User:alice', 'READ')}\n\n"
    )
    tools.acls(
        "--add", "--deny-principal", "User:eve", "--deny-host", "10.0.0.9",
        "--operation", "Write", "--operation", "Describe", "--topic", topic,
    )  # fmt: skip
    tools.acls(
        "--add", "--allow-principal", "User:bob", "--operation", "Write",
        "--topic", prefix, "--resource-pattern-type", "prefixed",
    )  # fmt: skip

    literal = {
        entry("User:alice", "READ"),
        entry("User:eve", "WRITE", "DENY", "10.0.0.9"),
        entry("User:eve", "DESCRIBE", "DENY", "10.0.0.9"),
    }
    assert listed(tools.acls("--list", "--topic", topic)) == {resource(topic): literal}
    everything = listed(tools.acls("--list"))
    assert everything[resource(topic)] == literal
    assert everything[resource(prefix, "PREFIXED")] == {entry("User:bob", "WRITE")}
    # the patterns that apply to one topic name
    matching = tools.acls(
        "--list", "--topic", f"{prefix}-orders", "--resource-pattern-type", "match"
    )
    assert listed(matching) == {resource(prefix, "PREFIXED"): {entry("User:bob", "WRITE")}}

    # what a second client sees
    admin = AdminClient({"bootstrap.servers": acl_broker.bootstrap})
    described = admin.describe_acls(
        AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
            AclOperation.ANY, AclPermissionType.ANY,
        )
    ).result(TIMEOUT_S)  # fmt: skip
    assert {(b.principal, b.host, b.operation, b.permission_type) for b in described} == {
        ("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        ("User:eve", "10.0.0.9", AclOperation.WRITE, AclPermissionType.DENY),
        ("User:eve", "10.0.0.9", AclOperation.DESCRIBE, AclPermissionType.DENY),
    }

    tools.acls(
        "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    assert listed(tools.acls("--list", "--topic", topic)) == {
        resource(topic): literal - {entry("User:alice", "READ")}
    }
    tools.acls("--remove", "--force", "--topic", topic)  # every ACL of the topic
    tools.acls("--remove", "--force", "--topic", prefix, "--resource-pattern-type", "prefixed")
    assert listed(tools.acls("--list", "--topic", topic)) == {}
    assert listed(tools.acls("--list", "--topic", prefix, "--resource-pattern-type", "any")) == {}


def test_confluent_kafka_creates_describes_and_deletes_acls(
    acl_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    admin = AdminClient({"bootstrap.servers": acl_broker.bootstrap})
    group, topic = new_topic("g"), new_topic("t")
    bindings = [
        AclBinding(
            ResourceType.GROUP, group, ResourcePatternType.LITERAL, "User:alice", "*",
            AclOperation.READ, AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, "User:alice", "*",
            AclOperation.WRITE, AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, "User:bob", "10.1.2.3",
            AclOperation.ALL, AclPermissionType.DENY,
        ),
    ]  # fmt: skip
    for future in admin.create_acls(bindings).values():
        assert future.result(TIMEOUT_S) is None

    alice = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    described = admin.describe_acls(alice).result(TIMEOUT_S)
    mine = [b for b in described if b.name in (group, topic)]
    assert sorted(mine, key=str) == sorted(bindings[:2], key=str)

    prefixed = AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    deleted = admin.delete_acls([prefixed])[prefixed].result(TIMEOUT_S)
    assert sorted(deleted, key=str) == sorted(bindings[1:], key=str)
    left = admin.describe_acls(alice).result(TIMEOUT_S)
    assert [b for b in left if b.name in (group, topic)] == bindings[:1]


def test_a_restart_keeps_the_acls(broker_factory: Brokers) -> None:
    broker = broker_factory(SECURED)
    tools = KafkaTools(broker.bootstrap)
    tools.acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "g1")
    tools.acls(
        "--add", "--allow-principal", "User:bob", "--operation", "Write",
        "--topic", "logs-", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    before = listed(tools.acls("--list"))
    assert before == {
        resource("g1", resource_type="GROUP"): {entry("User:alice", "READ")},
        resource("logs-", "PREFIXED"): {entry("User:bob", "WRITE")},
    }
    path = broker.data_dir / SECURITY_METADATA_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    broker.restart()
    assert listed(KafkaTools(broker.bootstrap).acls("--list")) == before
    broker.restart(crash=True)  # nor does a crash: each change was written before its answer
    assert listed(KafkaTools(broker.bootstrap).acls("--list")) == before


# -- three brokers on ZooKeeper


def creation(name: str, pattern_type: acl.PatternType, principal: str) -> AclCreation:
    return AclCreation(
        resource_type=acl.ResourceType.TOPIC,
        resource_name=name,
        resource_pattern_type=pattern_type,
        principal=principal,
        host="*",
        operation=acl.AclOperation.READ,
        permission_type=acl.AclPermissionType.ALLOW,
    )


def principals(broker: Broker, name: str, pattern_type: acl.PatternType) -> set[str]:
    """The principals of ``name``'s ACLs in the broker's DescribeAcls."""
    request = DescribeAclsRequest(
        resource_type_filter=acl.ResourceType.TOPIC,
        resource_name_filter=name,
        pattern_type_filter=pattern_type,
        principal_filter=None,
        host_filter=None,
        operation=acl.AclOperation.ANY,
        permission_type=acl.AclPermissionType.ANY,
    )
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        response = client.request(ApiKey.DESCRIBE_ACLS, ACLS_VERSION, request)
    assert response.error_code == ErrorCode.NONE, response.error_message
    return {a.principal for r in response.resources for a in r.acls}


def seen_everywhere(brokers: list[Broker], check: Callable[[Broker], bool]) -> float:
    """How long after now every one of ``brokers`` passes ``check``; fails after
    :data:`PROPAGATION_S` (and a margin to report how late it was)."""
    started = time.monotonic()
    waiting = list(brokers)
    while waiting:
        waiting = [broker for broker in waiting if not check(broker)]
        elapsed = time.monotonic() - started
        assert elapsed < 5 * PROPAGATION_S, (
            f"{len(waiting)} brokers still behind after {elapsed:.2f} s"
        )
        time.sleep(0.02)
    took = time.monotonic() - started
    print(f"every broker had the change after {took:.3f} s")
    return took


@pytest.mark.slow
def test_an_acl_change_on_one_broker_reaches_the_others_within_a_second(
    zookeeper: ZooKeeper,  # noqa: F811
    tmp_path: Path,
) -> None:
    with Cluster(zookeeper, tmp_path, settings=SECURED).running() as cluster:
        first, second, third = cluster.brokers.values()
        with ProtocolClient(*first.address, timeout_s=TIMEOUT_S) as client:
            created = client.request(
                ApiKey.CREATE_ACLS,
                ACLS_VERSION,
                CreateAclsRequest(
                    creations=[
                        creation("orders", acl.PatternType.LITERAL, "User:alice"),
                        creation("orders", acl.PatternType.LITERAL, "User:bob"),
                        creation("ord", acl.PatternType.PREFIXED, "User:carol"),
                    ]
                ),
            )
        assert [r.error_code for r in created.results] == [ErrorCode.NONE] * 3
        took = seen_everywhere(
            [second, third],
            lambda b: (
                principals(b, "orders", acl.PatternType.LITERAL) == {"User:alice", "User:bob"}
                and principals(b, "ord", acl.PatternType.PREFIXED) == {"User:carol"}
            ),
        )
        assert took < PROPAGATION_S, f"the other brokers had the ACLs after {took:.2f} s"

        def read(user: str) -> dict[str, str]:
            return {"principal": user, "permissionType": "Allow", "host": "*", "operation": "Read"}

        assert cluster.json("/kafka-acl/Topic/orders") == {
            "version": 1,
            "acls": [read("User:alice"), read("User:bob")],
        }
        assert cluster.json("/kafka-acl-extended/prefixed/Topic/ord") == {
            "version": 1,
            "acls": [read("User:carol")],
        }
        [change] = cluster.kazoo.get_children("/kafka-acl-changes")
        assert change.startswith("acl_changes_")
        assert cluster.kazoo.get(f"/kafka-acl-changes/{change}")[0] == b"TOPIC:orders"
        assert len(cluster.kazoo.get_children("/kafka-acl-extended-changes")) == 1

        # Kafka's tool through the second broker removes; the last binding takes its node
        KafkaTools(second.bootstrap).acls("--remove", "--force", "--topic", "orders")
        assert cluster.kazoo.exists("/kafka-acl/Topic/orders") is None
        took = seen_everywhere(
            [first, third], lambda b: principals(b, "orders", acl.PatternType.LITERAL) == set()
        )
        assert took < PROPAGATION_S, f"the other brokers lost the ACLs after {took:.2f} s"

        third.restart()  # loads what ZooKeeper holds
        assert principals(third, "ord", acl.PatternType.PREFIXED) == {"User:carol"}
        assert principals(third, "orders", acl.PatternType.LITERAL) == set()
