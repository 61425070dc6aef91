"""Record data: message sets (magic 0/1), record batches (magic 2), codecs.

* :mod:`.record_batch` reads and patches batch headers without decoding records,
  and encodes or decodes whole batches.
* :mod:`.message_set` reads and writes the older formats.
* :mod:`.convert` moves records between the two.
* :mod:`.compression` holds gzip, snappy, lz4 and zstd.
"""
