"""Example pipelines that run on wirekafka (``python -m wirekafka.examples.<name>``)."""
