"""The Java client's settings as librdkafka takes them, for whatever hands Kafka's client
properties to confluent-kafka (the ``wirekafka`` tools' ``--command-config``, the Spark
source's ``kafka.*`` options).

Most keys are the same in both (``security.protocol``, ``sasl.mechanism``,
``client.id``). Those of another shape are translated: ``sasl.jaas.config``'s
``username`` and ``password``; a PEM ``ssl.truststore.location`` (the CAs) and
``ssl.keystore.location`` (key and certificate chain in one file); an empty
``ssl.endpoint.identification.algorithm`` (no host name check). A JKS or PKCS12
store is refused: librdkafka reads PEM.
"""

from __future__ import annotations

from collections.abc import Mapping

from wirekafka.security.jaas import parse_jaas_config


def translate_java_settings(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` with the Java client's keys made librdkafka's; ValueError naming a
    setting librdkafka cannot be given (never quoting a secret)."""
    translated: dict[str, str] = {}
    for key, value in properties.items():
        if key == "sasl.jaas.config":
            try:
                options = parse_jaas_config(value).options
            except ValueError as exc:
                raise ValueError(f"sasl.jaas.config: {exc}") from None
            for option, target in (("username", "sasl.username"), ("password", "sasl.password")):
                if option in options:
                    translated[target] = options[option]
        elif key == "ssl.truststore.location":
            translated["ssl.ca.location"] = value
        elif key == "ssl.keystore.location":  # PEM: the key and its certificate chain
            translated["ssl.certificate.location"] = value
            translated["ssl.key.location"] = value
        elif key == "ssl.endpoint.identification.algorithm" and not value:
            translated[key] = "none"
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise ValueError(f"{key}={value}: only PEM stores are read")
        else:
            translated[key] = value
    return translated
