"""PySpark batch and structured-streaming pipelines against the broker."""
