"""The Kafka wire protocol, sans-IO: bytes in, typed messages out.

Nothing in this package touches sockets, files or an event loop.
"""
