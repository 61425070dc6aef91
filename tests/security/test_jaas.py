"""JAAS config values parsed as Kafka reads sasl.jaas.config."""

from __future__ import annotations

import pytest

from wirekafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    parse_jaas_config,
    plain_users,
)

# Kafka's documentation (security.html, "Configuring Kafka Brokers" for SASL/PLAIN),
# joined into one line as a properties file reads a value continued with backslashes
KAFKA_PLAIN_EXAMPLE = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
KAFKA_SCRAM_CLIENT_EXAMPLE = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


def test_kafkas_plain_broker_example():
    entry = parse_jaas_config(KAFKA_PLAIN_EXAMPLE)
    assert entry.login_module == PLAIN_LOGIN_MODULE
    assert entry.control_flag == "required"
    assert entry.options == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": "alice-secret",
    }
    assert plain_users(entry) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_kafkas_scram_client_example():
    entry = parse_jaas_config(KAFKA_SCRAM_CLIENT_EXAMPLE)
    assert entry == JaasEntry(
        SCRAM_LOGIN_MODULE, "required", {"username": "alice", "password": "alice-secret"}
    )


def test_passwords_stay_out_of_the_repr():
    assert "secret" not in repr(parse_jaas_config(KAFKA_PLAIN_EXAMPLE))


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("m.M required;", {}),
        ("m.M REQUIRED ;", {}),
        ("  m.M\trequired\n  a=b\r\n c=d ;  ", {"a": "b", "c": "d"}),
        ("m.M required a=b;", {"a": "b"}),
        ("m.M required a = b ;", {"a": "b"}),
        ("m.M required $a=$KEY_STORE-x_1:2@3;", {"$a": "$KEY_STORE-x_1:2@3"}),
        ('m.M required a="with blanks = and ; inside";', {"a": "with blanks = and ; inside"}),
        ("m.M required a='single \"quoted\"';", {"a": 'single "quoted"'}),
        (r'm.M required a="es\"ca\\pe\d";', {"a": 'es"ca\\ped'}),
        (r'm.M required a="\t\n\101\0619";', {"a": "\t\nA19"}),
        (r'm.M required a="\477";', {"a": "'7"}),
        ('m.M required a="";', {"a": ""}),
        ('m.M required "quoted key"=v;', {"quoted key": "v"}),
        ('m.M required a="/not/a/comment";', {"a": "/not/a/comment"}),
        ("m.M required a=1 a=2;", {"a": "2"}),
        ("m.M required // the rest of the line\n a=b;", {"a": "b"}),
        ("m.M required /* a=c */ a=b /* x */;", {"a": "b"}),
        ("m.M required a=b / c=d\n;", {"a": "b"}),
        ("/* first */ m.M required a=b; // last", {"a": "b"}),
        ('m.M required user_ünï="pässwörd";', {"user_ünï": "pässwörd"}),
    ],
)
def test_tokens_as_javas_stream_tokenizer_splits_them(text, options):
    entry = parse_jaas_config(text)
    assert entry.login_module == "m.M"
    assert entry.options == options


@pytest.mark.parametrize("flag", ["required", "Requisite", "SUFFICIENT", "optional"])
def test_control_flags(flag):
    assert parse_jaas_config(f"m.M {flag};").control_flag == flag.lower()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no login module"),
        ("   // only a comment", "no login module"),
        ("m.M", "no control flag after login module m.M"),
        ("m.M ;", "no control flag"),
        ("m.M requird;", "invalid control flag after login module m.M"),
        ("m.M required", "not terminated by a semicolon"),
        ('m.M required user_a="pw"', "not terminated by a semicolon"),
        ("m.M required a;", "not key=value"),
        ("m.M required a=;", "not key=value"),
        ("m.M required =b;", "not key=value"),
        ("m.M required a b;", "not key=value"),
        ('m.M required user_a="p w" x y;', "after option 'user_a'"),
        ('m.M required a="open;', "not closed"),
        ('m.M required a="two\nlines";', "not closed"),
        ("m.M required /* open", "never closed"),
        ('"m.M" required;', "does not start with a login module"),
        ("; m.M required;", "does not start with a login module"),
        ("a.A required; b.B optional;", "contains 2 login modules, should be 1"),
    ],
)
def test_problems_are_named(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_jaas_config(text)


@pytest.mark.parametrize(
    "text",
    [
        "m.M required user_alice=hunter2 secret;",
        'm.M required user_alice="hunter2" secret-ish;',
        'm.M required user_alice="hunter2 secret',
        "m.M required user_alice=hunter2 = secret;",
        'm.M bad user_alice="hunter2 secret";',
    ],
)
def test_errors_never_show_a_value(text):
    with pytest.raises(ValueError) as failure:
        parse_jaas_config(text)
    assert "hunter2" not in str(failure.value)
    assert "secret" not in str(failure.value)


def test_plain_users_skip_other_options_and_an_empty_name():
    entry = parse_jaas_config(
        f'{PLAIN_LOGIN_MODULE} required username="admin" password="x" user_="y" user_b="b";'
    )
    assert plain_users(entry) == {"b": "b"}


def test_plain_users_need_plains_login_module():
    with pytest.raises(ValueError, match="PlainLoginModule"):
        plain_users(parse_jaas_config(KAFKA_SCRAM_CLIENT_EXAMPLE))
