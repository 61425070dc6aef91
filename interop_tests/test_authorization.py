"""ACLs enforced on real clients: a SASL user may do what its ACLs allow and nothing more,
learns nothing of topics it may not describe, and a restart keeps the ACLs.

Kafka's ``kafka-acls`` adds the ACLs over the PLAINTEXT listener, whose anonymous
principal is a super user here; the clients log in over SASL_PLAINTEXT.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.broker import Broker
from interop_tests.kafka_tools import KafkaTools
from interop_tests.security import PLAIN_JAAS, USERS
from wirekafka.testing.certificates import make_certificates

OPEN, SECRET = "open-topic", "secret-topic"


@pytest.fixture
def guarded(broker_factory) -> Broker:
    broker = broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "auto.create.topics.enable": "false",
        }
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(t, 1) for t in (OPEN, SECRET)]).values():
        future.result(30)
    return broker


def as_user(broker: Broker, name: str) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.listener_bootstrap("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": name,
        "sasl.password": USERS[name],
    }


def produce_error(config: dict[str, str], topic: str) -> KafkaError | None:
    """Produce one record; the delivery's error (None: stored)."""
    errors: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 10000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert errors, "no delivery report"
    return errors[0]


def consume_error(config: dict[str, str], topic: str, group: str) -> KafkaError | None:
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            return message.error()
        raise AssertionError(f"nothing read from {topic} and no error")
    finally:
        consumer.close()


def allow(broker: Broker, *args: str) -> None:
    KafkaTools(broker.bootstrap).acls("--add", "--allow-principal", "User:alice", *args)


def test_a_user_may_do_what_its_acls_allow_and_no_more(guarded: Broker) -> None:
    alice, bob = as_user(guarded, "alice"), as_user(guarded, "bob")
    assert produce_error(alice, OPEN).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(guarded, "--operation", "Write", "--topic", OPEN)
    assert produce_error(alice, OPEN) is None
    assert produce_error(alice, SECRET).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(bob, OPEN).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Write implies Describe: alice sees the open topic, and nothing of the secret one
    listed = AdminClient(alice).list_topics(timeout=20).topics
    assert OPEN in listed and SECRET not in listed
    assert not {
        t for t in AdminClient(bob).list_topics(timeout=20).topics if not t.startswith("__")
    }
    # reading needs Read on the topic and on the group
    allow(guarded, "--operation", "Read", "--topic", OPEN)
    refused = consume_error(alice, OPEN, "alices-group")
    assert refused is not None and refused.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    allow(
        guarded, "--operation", "Read", "--group", "alices-", "--resource-pattern-type", "prefixed"
    )
    assert consume_error(alice, OPEN, "alices-group") is None  # a record, no error
    # a restart keeps the ACLs
    guarded.restart()
    assert produce_error(alice, OPEN) is None
    assert produce_error(alice, SECRET).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_wins_over_allow(guarded: Broker) -> None:
    alice = as_user(guarded, "alice")
    allow(guarded, "--operation", "All", "--topic", "*")
    assert produce_error(alice, SECRET) is None
    KafkaTools(guarded.bootstrap).acls(
        "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", SECRET
    )
    assert produce_error(alice, SECRET).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(alice, OPEN) is None


def test_admin_requests_need_cluster_or_topic_acls(guarded: Broker) -> None:
    alice = AdminClient(as_user(guarded, "alice"))
    with pytest.raises(KafkaException) as refused:
        alice.create_topics([NewTopic("alices-new", 1)])["alices-new"].result(20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(
        guarded,
        "--operation",
        "Create",
        "--topic",
        "alices-",
        "--resource-pattern-type",
        "prefixed",
    )
    alice.create_topics([NewTopic("alices-new", 1)])["alices-new"].result(20)
    with pytest.raises(KafkaException) as not_deleted:
        alice.delete_topics([OPEN])[OPEN].result(20)
    assert not_deleted.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_tls_client_is_named_by_its_certificate(broker_factory, tmp_path) -> None:
    """On an SSL listener the principal is the certificate's subject, as
    ``ssl.principal.mapping.rules`` rewrites it; without a certificate, ANONYMOUS."""
    certs = make_certificates(tmp_path / "certs", client_name="alice")
    broker = broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **certs.broker_settings("SSL", client_auth="requested"),
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/L,DEFAULT",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",  # the PLAINTEXT set-up client
            "auto.create.topics.enable": "false",
        }
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(OPEN, 1)])[OPEN].result(30)
    with_certificate = {
        "bootstrap.servers": broker.listener_bootstrap("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
        "ssl.certificate.location": str(certs.client_certificate),
        "ssl.key.location": str(certs.client_key),
    }
    assert produce_error(with_certificate, OPEN).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(broker, "--operation", "Write", "--topic", OPEN)  # User:alice, as the rule maps it
    assert produce_error(with_certificate, OPEN) is None
    anonymous = {
        key: value
        for key, value in with_certificate.items()
        if "certificate" not in key and "key.location" not in key
    }
    # without a certificate the client is User:ANONYMOUS, a super user here
    assert produce_error(anonymous, OPEN) is None
