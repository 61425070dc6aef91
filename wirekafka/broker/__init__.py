"""The broker's shared state and its assembly: topics, logs, producers, groups and the cluster view.

Handlers translate one API each (request in, response out) and reach this
state through :class:`wirekafka.broker.context.BrokerContext`; the server
builds it at start-up.
"""
