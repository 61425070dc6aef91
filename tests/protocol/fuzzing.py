"""What every fuzz target shares: settings, mutations of valid input, the invariant.

The invariant (h11's): a decoder given malformed input raises ProtocolError
and nothing else, and handles every input within 100 ms of CPU time (garbage
collection of the rest of the test process excluded).

The number of examples per target comes from WIREKAFKA_FUZZ_EXAMPLES
(default 10,000; lower it for a quick local run).
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from wirekafka.protocol.errors import ProtocolError

EXAMPLES = int(os.environ.get("WIREKAFKA_FUZZ_EXAMPLES", "10000"))
CPU_SECONDS_PER_INPUT = 0.1

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,  # timed below in CPU seconds, which other processes cannot inflate
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

_interesting_ints = st.sampled_from(
    [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00",
     b"\x00\x00\x00\x01", b"\xff\xfe", b"\x80", b"\xff"]
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, corpus: list[bytes]) -> bytes:
    """One of ``corpus`` with one to four bytes flipped, set, inserted or deleted,
    cut short, or overwritten with an integer at an edge."""
    data = bytearray(draw(st.sampled_from(corpus)))
    for _ in range(draw(st.integers(1, 4))):
        size = max(len(data), 1)
        at = draw(st.integers(0, size - 1))
        action = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete", "int"]))
        if action == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "truncate":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif action == "int":
            value = draw(_interesting_ints)
            data[at : at + len(value)] = value
    return bytes(data)


def only_protocol_errors(decode: Callable[[], Any]) -> None:
    """Run ``decode``: it may raise ProtocolError, nothing else, within the CPU budget."""
    # The collector is paused while timing: a full collection of the test
    # process's heap is not the decoder's cost and can take longer than 100 ms.
    gc.disable()
    try:
        started = time.process_time()
        with contextlib.suppress(ProtocolError):
            decode()
        elapsed = time.process_time() - started
    finally:
        gc.enable()
    assert elapsed < CPU_SECONDS_PER_INPUT, f"input took {elapsed * 1000:.0f} ms of CPU"
