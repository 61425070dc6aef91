"""wirekafka: a Kafka-compatible broker in Python on trio."""

__version__ = "0.1.0"
