"""The ZooKeeper registry (kazoo), with Kafka's znode layout."""
