"""The client adapters declare what they implement, and implement what they declare.

No broker: these check the registry (``interop_tests/clients/registry.py``),
so that a new adapter that forgets a method of a capability it declares, or
declares a codec or an assignor no scenario knows, fails here rather than as a
scenario that is generated and cannot run (or is silently not generated).
"""

from __future__ import annotations

import pytest

from interop_tests.clients.adapter import ASSIGNORS, CODECS, Capability, ClientAdapter
from interop_tests.clients.registry import ADAPTERS, BY_NAME, REFERENCE

# The methods each optional capability stands for.
METHODS = {
    Capability.METADATA: ("topics", "describe_topic", "produce_to_missing_topic"),
    Capability.ADMIN: ("create_topic",),
    Capability.WATERMARKS: ("watermarks",),
    Capability.SEEK_BY_TIME: ("offsets_for_times",),
    Capability.COMMITTED_OFFSETS: ("committed",),
    Capability.GROUPS: ("start_member",),
}

ALL = [pytest.param(c, id=c.name) for c in ADAPTERS]


@pytest.mark.parametrize("client", ALL)
def test_a_capability_is_declared_exactly_when_its_methods_are_implemented(
    client: ClientAdapter,
) -> None:
    for capability, names in METHODS.items():
        implemented = {
            name: getattr(type(client), name) is not getattr(ClientAdapter, name) for name in names
        }
        declared = capability in client.capabilities
        assert all(v == declared for v in implemented.values()), (
            f"{client.name} declares {capability.name}: {declared}; implements {implemented}"
        )


@pytest.mark.parametrize("client", ALL)
def test_codecs_and_assignors_are_known(client: ClientAdapter) -> None:
    assert set(client.codecs) <= set(CODECS)
    assert client.read_codecs <= set(CODECS)
    assert client.cross_codec in client.codecs
    assert client.eager_assignment in ASSIGNORS
    assert client.eager_assignment != "cooperative-sticky"
    assert client.reader_for(client.codecs[0]).name in BY_NAME
    for codec in client.codecs:
        assert codec in client.reader_for(codec).read_codecs
    if Capability.SEEK_BY_TIME in client.capabilities:
        assert Capability.SEEK in client.capabilities
    if Capability.COOPERATIVE in client.capabilities or Capability.STATIC_MEMBERSHIP in (
        client.capabilities
    ):
        assert Capability.GROUPS in client.capabilities


def test_every_client_reads_what_every_other_writes_in_the_cross_matrix() -> None:
    assert all(w.cross_codec in r.read_codecs for w in ADAPTERS for r in ADAPTERS)


def test_the_reference_client_can_check_what_scenarios_leave_behind() -> None:
    assert REFERENCE.supports(Capability.ADMIN, Capability.COMMITTED_OFFSETS)
