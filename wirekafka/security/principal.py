"""Who a connection speaks for: a principal as Kafka writes it, ``Type:name`` (``User:alice``).

Principals travel as text, as they do in Kafka's ACL requests and ZooKeeper
nodes; ``User:*`` in an ACL stands for every user.
"""

from __future__ import annotations

USER_TYPE = "User"
WILDCARD_USER = "User:*"


def user(name: str) -> str:
    return f"{USER_TYPE}:{name}"


# Unauthenticated connections: a PLAINTEXT listener, or SSL without a client certificate
ANONYMOUS = user("ANONYMOUS")


def check_principal(text: str) -> str:
    """``text`` if it is ``Type:name`` with both parts present; ValueError naming it otherwise."""
    principal_type, sep, name = text.partition(":")
    if not sep or not principal_type or not name:
        raise ValueError(f"{text!r} is not a principal of the form Type:name (User:alice)")
    return text


def principal_type(text: str) -> str:
    return text.partition(":")[0]
