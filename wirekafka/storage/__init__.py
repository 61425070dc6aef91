"""Segmented partition logs laid out as Kafka lays out a log dir."""
