import pytest

from wirekafka.config import broker_config_from_properties
from wirekafka.storage.config import ConfigError

PEM = {"ssl.keystore.location": "/etc/kafka/server.pem"}


def test_the_default_map_names_each_protocol_after_itself():
    config = broker_config_from_properties(
        {"listeners": "PLAINTEXT://:9092,SSL://:9093,SASL_PLAINTEXT://:9094", **PEM}
    )
    protocols = {n: s.security_protocol for n, s in config.listener_security.items()}
    assert protocols == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT"}
    assert config.listener_security["SSL"].tls.keystore_location == "/etc/kafka/server.pem"
    assert config.listener_security["PLAINTEXT"].tls is None
    # SCRAM users are the broker's own; PLAIN needs a JAAS entry, so it is not on by default
    assert config.listener_security["SASL_PLAINTEXT"].sasl.enabled_mechanisms == (
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
    )
    assert config.inter_broker_listener_name == "PLAINTEXT"


def test_named_listeners_take_their_keys_from_their_prefix():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
    config = broker_config_from_properties(
        {
            "listeners": "INTERNAL://:9092,EXTERNAL://:9093",
            "advertised.listeners": "INTERNAL://in:9092,EXTERNAL://out.example:9093",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
            "inter.broker.listener.name": "internal",
            "ssl.keystore.location": "/default.pem",
            "listener.name.external.ssl.keystore.location": "/external.pem",
            "listener.name.external.ssl.client.auth": "Required",
            "ssl.truststore.location": "/ca.pem",
            "listener.name.external.sasl.enabled.mechanisms": "plain,SCRAM-SHA-512",
            "listener.name.external.plain.sasl.jaas.config": jaas,
            "listener.name.external.connections.max.reauth.ms": "60000",
        }
    )
    external = config.listener_security["EXTERNAL"]
    assert (external.security_protocol, external.tls.keystore_location) == (
        "SASL_SSL",
        "/external.pem",
    )
    assert external.tls.client_auth == "required"
    assert external.sasl.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert external.sasl.jaas_configs == {"PLAIN": jaas}
    assert external.reauth_ms == 60000
    assert config.inter_broker_listener_name == "INTERNAL"
    assert "user_a" not in repr(config.listener_security)  # secrets stay out of reprs


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"listeners": "CLIENT://:9092"}, "CLIENT has no security protocol"),
        (
            {"listeners": "A://:9092", "listener.security.protocol.map": "A:SSH"},
            "'SSH' is not a security protocol",
        ),
        ({"listeners": "SSL://:9093"}, "ssl.keystore.location .* must be set"),
        ({"listeners": "SSL://:9093", **PEM, "ssl.keystore.type": "JKS"}, "only PEM stores"),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.keystore.password": "x"},
            "PEM stores have no store password",
        ),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.client.auth": "required"},
            "needs ssl.truststore.location",
        ),
        ({"listeners": "SSL://:9093", **PEM, "ssl.client.auth": "maybe"}, "expected one of"),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.enabled.protocols": "TLSv1.1"},
            "'TLSv1.1' is not served",
        ),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.cipher.suites": "TLS_NULL_WITH_NULL_NULL"},
            "ssl.cipher.suites: 'TLS_NULL_WITH_NULL_NULL' is not",
        ),
        (
            {
                "listeners": "SSL://:9093",
                **PEM,
                "ssl.enabled.protocols": "TLSv1.3",
                "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            },
            "names no suite of the enabled protocols",
        ),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.principal.mapping.rules": "RULE:(/x/"},
            "ssl.principal.mapping.rules",
        ),
        (
            {"listeners": "SASL_SSL://:9093", **PEM, "sasl.enabled.mechanisms": "GSSAPI"},
            "GSSAPI is not served",
        ),
        (
            {"listeners": "SASL_PLAINTEXT://:9093", "sasl.enabled.mechanisms": "PLAIN"},
            "plain.sasl.jaas.config must be set",
        ),
        ({"listener.name.other.ssl.client.auth": "none"}, "no listener named OTHER"),
        ({"listener.name.plaintext.ssl.keystore.pass": "x"}, "unknown config key"),
        (
            {
                "listeners": "SSL://:9093",
                **PEM,
                "zookeeper.connect": "zk:2181",
            },
            "no listener is named PLAINTEXT",
        ),
        (
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "SSL"},
            "set only one",
        ),
    ],
)
def test_bad_security_settings_are_errors_naming_the_key(properties, message):
    with pytest.raises(ConfigError, match=message):
        broker_config_from_properties(properties)


PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SASL_CLUSTER = {
    "listeners": "SASL_SSL://:9093",
    **PEM,
    "zookeeper.connect": "zk:2181",
    "inter.broker.listener.name": "SASL_SSL",
}


def test_a_sasl_inter_broker_listener_gives_the_brokers_own_credentials():
    config = broker_config_from_properties(
        {
            **SASL_CLUSTER,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                f'{PLAIN_MODULE} required username="broker" password="broker-secret" '
                'user_broker="broker-secret";'
            ),
        }
    )
    credentials = config.inter_broker_sasl_credentials
    assert credentials is not None
    assert (credentials.mechanism, credentials.username, credentials.password) == (
        "PLAIN",
        "broker",
        "broker-secret",
    )
    assert config.listener_security["SASL_SSL"].tls.endpoint_identification_algorithm == "https"
    scram = broker_config_from_properties(
        {
            **SASL_CLUSTER,
            "sasl.mechanism.inter.broker.protocol": "scram-sha-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                f"{SCRAM_MODULE} required username=broker password=s3cret;"
            ),
        }
    ).inter_broker_sasl_credentials
    assert scram is not None and (scram.mechanism, scram.username) == ("SCRAM-SHA-512", "broker")


def test_without_zookeeper_or_sasl_there_are_no_inter_broker_credentials():
    alone = {key: value for key, value in SASL_CLUSTER.items() if key != "zookeeper.connect"}
    assert broker_config_from_properties(alone).inter_broker_sasl_credentials is None
    plaintext = broker_config_from_properties(
        {"listeners": "PLAINTEXT://:9092", "zookeeper.connect": "zk:2181"}
    )
    assert plaintext.inter_broker_sasl_credentials is None


def test_empty_endpoint_identification_turns_the_host_name_check_off():
    config = broker_config_from_properties(
        {"listeners": "SSL://:9093", **PEM, "ssl.endpoint.identification.algorithm": ""}
    )
    assert config.listener_security["SSL"].tls.endpoint_identification_algorithm == ""


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (
            {
                **SASL_CLUSTER,
                "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                    f'{PLAIN_MODULE} required user_broker="broker-secret";'
                ),
            },
            r"listener\.name\.sasl_ssl\.plain\.sasl\.jaas\.config must give the user .*"
            r"\(the PLAIN JAAS entry has no username and no password option",
        ),
        (
            {**SASL_CLUSTER, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
            r"listener\.name\.sasl_ssl\.scram-sha-256\.sasl\.jaas\.config must give the user "
            rf".*{SCRAM_MODULE} required",
        ),
        (SASL_CLUSTER, r"listener\.name\.sasl_ssl\.plain\.sasl\.jaas\.config must give"),
        (
            {
                **SASL_CLUSTER,
                "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                    f"{PLAIN_MODULE} required username=broker password=broker-secret;"
                ),
            },
            r"sasl.mechanism.inter.broker.protocol=PLAIN must be one of "
            r"listener.name.sasl_ssl.sasl.enabled.mechanisms \(SCRAM-SHA-512\)",
        ),
        (
            {**SASL_CLUSTER, "sasl.mechanism.inter.broker.protocol": "GSSAPI"},
            "sasl.mechanism.inter.broker.protocol=GSSAPI: not served",
        ),
        (
            {"listeners": "SSL://:9093", **PEM, "ssl.endpoint.identification.algorithm": "ldaps"},
            "ssl.endpoint.identification.algorithm='ldaps': expected https",
        ),
    ],
)
def test_bad_inter_broker_security_is_an_error_naming_the_key(properties, message):
    with pytest.raises(ConfigError, match=message) as raised:
        broker_config_from_properties(properties)
    assert "broker-secret" not in str(raised.value)
