"""Every Kafka client of the interop suite behind one interface.

``adapter.py`` declares what a client adapter does (:class:`~.adapter.ClientAdapter`)
and the capabilities it may declare; each other module is one client's adapter,
with its group member (the child side of ``interop_tests/group_driver.py``);
``registry.py`` lists them. The scenario tests (``interop_tests/test_round_trips.py``,
``test_cross_client.py``, ``test_groups*.py``) are parametrized over the adapters
that declare what a scenario needs: a scenario a client cannot take part in is
not generated for it.

A new client is one module here (its adapter, its declared capabilities and,
if it can join groups, its member loop) and one entry in ``registry.py``.

This package must stay importable with nothing but the standard library and
the one client a module drives: group members and the kafka-python 2.0.2
driver import a client's module in interpreters that have no pytest, no
wirekafka and no other client.
"""
