"""One module per API, each declaring that API's request and response.

Field names are Kafka's, in snake_case; version ranges are Kafka's message
specs trimmed to the versions wirekafka serves (see ..api_table).
"""
