"""Open segment files and the spans of them that reads hand out.

A :class:`FileSpan` keeps its file open for as long as someone holds the span,
so a reader finishes its ``sendfile`` even if retention removes the segment
meanwhile: the file's name goes, its data stays until the last span is dropped.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from pathlib import Path


class OpenFile:
    """A file descriptor closed when the last reference to this object goes."""

    __slots__ = ("__weakref__", "_finalizer", "fd", "path")

    def __init__(self, path: Path, flags: int) -> None:
        self.path = path
        self.fd = os.open(path, flags, 0o644)
        self._finalizer = weakref.finalize(self, os.close, self.fd)

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        self._finalizer()


@dataclass(frozen=True, slots=True)
class FileSpan:
    """``size_bytes`` bytes of an open file from ``position``: whole record batches."""

    file: OpenFile
    position: int
    size_bytes: int

    def fileno(self) -> int:
        return self.file.fd

    def read_bytes(self) -> bytes:
        """The span's bytes, copied into memory (for conversions and tests, not for sending)."""
        data = os.pread(self.file.fd, self.size_bytes, self.position)
        if len(data) != self.size_bytes:
            raise OSError(
                f"{self.file.path}: span of {self.size_bytes} bytes at {self.position} is cut off"
            )
        return data
