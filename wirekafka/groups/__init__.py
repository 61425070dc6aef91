"""The consumer group coordinator and the committed-offset store."""
