"""``wirekafka dump-log PATH ...``: a partition's segment files, read offline.

Like Kafka's ``kafka-dump-log``, for files of wirekafka or of Apache Kafka
(the layout is the same): ``NNNNNNNNNNNNNNNNNNNN.log`` with its ``.index``
and ``.timeindex`` (``.deleted``, ``.cleaned`` and ``.swap`` copies too). A
PATH that is a directory stands for the segment files in it. Files are
opened read-only; nothing is ever written.

* ``.log``: one line per batch (a message, for magic 0/1 message sets):
  offsets, count, position, size, magic, stored CRC and whether it matches
  (CRC32C for magic 2, CRC32 for magic 0/1), codec, timestamp type, first
  and max timestamps, producer id/epoch, sequences, partition leader epoch,
  transactional and control flags. ``--deep`` (Kafka's ``--deep-iteration``)
  adds a line per record (``|``-prefixed): offset, timestamp, key and value
  sizes, header keys, and what a control record says. ``--print-data``
  (Kafka's ``--print-data-log``; implies ``--deep``) adds keys, values and
  header values: as text when they are UTF-8 (control characters escaped as
  ``\\n``, ``\\x00`` ..., a backslash as ``\\\\``), else as ``base64:...``.
  Zeros after the last batch (an active segment's preallocated space) end
  the log; other bytes that are no batch are reported with their position.
* ``.index`` and ``.timeindex``: their entries, checked against the ``.log``
  beside them (see :mod:`wirekafka.storage.segment_reader` for the checks).
  ``--verify-index-only`` (as Kafka's tool) checks them without printing
  them; ``--index-sanity-check`` (as Kafka's tool) makes only the check a
  broker makes when it opens a segment (whole entries, the last offset not
  below the base offset, a time index's last timestamp not below its first),
  without the log, and says whether the file passed.

Problems are printed where they are found and summed up at the end.

``--json`` prints one document::

    {"files": [FILE, ...], "problem_count": N}

    FILE = {"path": str, "kind": "log" | "index" | "timeindex" | null,
            "base_offset": int | null, "size_bytes": int,
            "problems": [{"position": int | null, "entry": int | null, "message": str}],
            ...by kind:}
      log:       "batches": [BATCH], "valid_bytes": int, "zero_bytes": int
      index:     "entries": [{"offset": int, "relative_offset": int, "position": int}],
                 "entry_count": int, "zero_bytes": int
      timeindex: "entries": [{"timestamp": int, "offset": int, "relative_offset": int}],
                 "entry_count": int, "zero_bytes": int
                 ("entries" is empty with --verify-index-only or --index-sanity-check;
                 with the latter, "sanity_check": "passed" | "failed" too)
      a file that cannot be read: {"path", "kind", "error": str} only
    BATCH = {"position", "size_bytes", "magic", "base_offset", "last_offset",
             "record_count" (null: a compressed message that does not open),
             "crc", "crc_valid", "compression" ("none", "gzip", ... or null),
             "timestamp_type" ("CreateTime", "LogAppendTime", "NoTimestampType"),
             "first_timestamp", "max_timestamp",
             "producer_id", "producer_epoch", "base_sequence", "last_sequence",
             "partition_leader_epoch", "is_transactional", "is_control"
             (these seven null for magic 0/1),
             "records": [RECORD] (with --deep only)}
    RECORD = {"offset", "timestamp", "sequence" (null for magic 0/1),
              "key_size", "value_size" (-1: null),
              "headers": [{"key": str, "value_size": int}],
              "control": {"type": str, "coordinator_epoch": int | null} (control batches),
              with --print-data: "key", "key_encoding", "value", "value_encoding"
              (encoding "utf-8" or "base64"; null with a null key or value)
              and each header's "value" and "value_encoding"}

``valid_bytes``: where the last readable batch ends; ``zero_bytes``: zeros
after it (or after an index's last entry) to the end of the file.

Exit codes: 0 every file read and no problem found; 1 a problem found
(corrupt or truncated data, a CRC mismatch, an index entry that does not
match the log); 2 a PATH that cannot be read or is no segment file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wirekafka.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from wirekafka.cli.output import add_output_options
from wirekafka.cli.record_output import text_or_base64
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import NO_SEQUENCE
from wirekafka.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    base_offset_of,
)
from wirekafka.storage.segment_reader import (
    DEFAULT_MAX_ENTRY_BYTES,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    LogEnd,
    LogEntry,
    LogLayout,
    Problem,
    check_offset_index,
    check_time_index,
    control_record,
    read_index,
    records_of,
    sanity_problems,
    scan_log,
)

_KINDS = {LOG_SUFFIX: "log", INDEX_SUFFIX: "index", TIME_INDEX_SUFFIX: "timeindex"}
_COPY_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
_KIND_ORDER = {"log": 0, "index": 1, "timeindex": 2}
_TIMESTAMP_TYPES = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
    None: "NoTimestampType",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dump-log",
        help="print and check a partition's segment files (.log, .index, .timeindex) offline",
        description="Print the batches of .log files and the entries of .index and "
        ".timeindex files, as Kafka's kafka-dump-log does, and check them: CRCs, "
        "truncated or corrupt batches, index entries that do not match the log. "
        "Files are only read. Keys and values (--print-data) print as text when "
        "they are UTF-8, else as base64:... (in JSON: with a *_encoding of "
        "utf-8 or base64).",
        epilog="Exit codes: 0 no problem found; 1 a problem found (corrupt or truncated "
        "data, a CRC mismatch, an index entry that does not match the log); 2 a path "
        "that cannot be read or is no segment file.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="segment files (NNNNNNNNNNNNNNNNNNNN.log, .index, .timeindex), or a "
        "partition directory for all of its segment files",
    )
    parser.add_argument(
        "--files",
        metavar="FILES",
        help="more paths, comma-separated (as Kafka's tool takes them)",
    )
    parser.add_argument(
        "--deep",
        "--deep-iteration",
        dest="deep",
        action="store_true",
        help="print every record of every batch, decompressing compressed ones",
    )
    parser.add_argument(
        "--print-data",
        "--print-data-log",
        dest="print_data",
        action="store_true",
        help="print keys, values and header values too (implies --deep)",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=DEFAULT_MAX_ENTRY_BYTES,
        metavar="BYTES",
        help="the largest batch read; a larger size is taken for corruption "
        f"(default {DEFAULT_MAX_ENTRY_BYTES})",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="check index entries against the log without printing them",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="only the sanity check a broker makes of an index when it opens a segment "
        "(whole entries, offsets not below the base offset, a time index's last timestamp "
        "not below its first); the log is not read for it",
    )
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    paths = [Path(path) for path in args.paths]
    if args.files:
        paths += [Path(path) for path in args.files.split(",") if path]
    if not paths:
        raise CommandError("name at least one PATH (or --files)", EXIT_USAGE)
    if args.max_message_size < 1:
        raise CommandError("--max-message-size must be positive", EXIT_USAGE)
    options = _Options(
        deep=args.deep or args.print_data,
        print_data=args.print_data,
        max_message_size=args.max_message_size,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
    )
    sink: _Sink = _JsonSink() if args.json else _TextSink()
    try:
        failed = _dump_all(paths, options, sink)
        sink.finish()
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    if failed:
        return EXIT_USAGE
    return EXIT_FAILED if sink.problem_count else EXIT_OK


@dataclass(frozen=True, slots=True)
class _Options:
    deep: bool
    print_data: bool
    max_message_size: int
    verify_index_only: bool = False
    index_sanity_check: bool = False


class _Sink(Protocol):
    """Where a dump goes: lines for people, or one JSON document; both written as it comes."""

    problem_count: int

    def start(self, path: Path, kind: str, base_offset: int | None, size_bytes: int) -> None: ...
    def batch(self, doc: dict[str, Any]) -> None: ...
    def entry(self, doc: dict[str, Any]) -> None: ...
    def problem(self, problem: Problem) -> None: ...
    def end(self, summary: dict[str, Any]) -> None: ...
    def error(self, path: Path, kind: str | None, message: str) -> None: ...
    def finish(self) -> None: ...


def _dump_all(paths: list[Path], options: _Options, sink: _Sink) -> bool:
    """Dump every file; whether some PATH could not be read."""
    failed = False
    layouts: dict[Path, LogLayout] = {}
    for path in _expand(paths):
        kind = _kind_of(path)
        if not path.exists():
            sink.error(path, kind, "No such file or directory")
            failed = True
        elif path.is_dir():
            sink.error(path, None, "a directory without segment files")
            failed = True
        elif kind is None:
            sink.error(path, None, "not a segment file (.log, .index or .timeindex)")
            failed = True
        else:
            failed |= not _dump_file(path, kind, options, sink, layouts)
    return failed


def _dump_file(
    path: Path, kind: str, options: _Options, sink: _Sink, layouts: dict[Path, LogLayout]
) -> bool:
    """Dump one file; whether it could be read."""
    try:
        with _opened(path) as read_at:
            if kind == "log":
                layouts[path.resolve()] = _dump_log(path, read_at, options, sink)
            else:
                _dump_index(path, kind, read_at, layouts, options, sink)
    except BrokenPipeError:  # stdout's, not the file's
        raise
    except (OSError, ValueError) as exc:
        sink.error(path, kind, _reason(exc))
        return False
    return True


def _expand(paths: list[Path]) -> Iterator[Path]:
    """The paths, a directory replaced by the segment files in it (named by a base
    offset; by base offset, then kind)."""
    for path in paths:
        if not path.is_dir():
            yield path
            continue
        found = [
            child
            for child in path.iterdir()
            if _kind_of(child) and base_offset_of(child) is not None and child.is_file()
        ]
        if not found:
            yield path  # reported
        yield from sorted(
            found,
            key=lambda child: (
                base_offset_of(child),
                child.name.count("."),
                _KIND_ORDER[_kind_of(child) or "log"],
            ),
        )


def _kind_of(path: Path) -> str | None:
    """ "log", "index" or "timeindex" by the file's suffix, after any .deleted etc."""
    name = path.name
    for copy in _COPY_SUFFIXES:
        name = name.removesuffix(copy)
    for suffix, kind in _KINDS.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return kind
    return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


_READ_AHEAD_BYTES = 8 * 1024 * 1024


class _FileBytes:
    """A file opened read-only, read at any position in large chunks (a
    :data:`~wirekafka.storage.segment_reader.ReadAt`). Reads, not a memory map:
    a broker cutting the file meanwhile makes a read come back short, where a
    map would kill the process."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.size = os.fstat(fd).st_size
        self._chunk = memoryview(b"")
        self._start = 0

    def __call__(self, position: int, size: int) -> memoryview:
        local = position - self._start
        if local >= 0 and local + size <= len(self._chunk):
            return self._chunk[local : local + size]
        if size >= _READ_AHEAD_BYTES:
            return memoryview(os.pread(self._fd, size, position))
        self._chunk = memoryview(os.pread(self._fd, _READ_AHEAD_BYTES, position))
        self._start = position
        return self._chunk[:size]


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[_FileBytes]:
    fd = os.open(path, os.O_RDONLY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        yield _FileBytes(fd)
    finally:
        os.close(fd)


def _dump_log(path: Path, read_at: _FileBytes, options: _Options, sink: _Sink) -> LogLayout:
    sink.start(path, "log", base_offset_of(path), read_at.size)
    layout = LogLayout()
    undecoded = None  # reported after what the scan finds wrong with the same batch
    for item in scan_log(read_at, read_at.size, max_entry_bytes=options.max_message_size):
        if isinstance(item, Problem):
            sink.problem(item)
            continue
        if undecoded is not None:
            sink.problem(undecoded)
            undecoded = None
        if isinstance(item, LogEntry):
            layout.add(item)
            doc = _batch_doc(item)
            if options.deep:
                doc["records"], undecoded = _records(item, options)
            sink.batch(doc)
        else:
            assert isinstance(item, LogEnd)
            sink.end({"valid_bytes": item.valid_bytes, "zero_bytes": item.zero_bytes})
    return layout


def _batch_doc(entry: LogEntry) -> dict[str, Any]:
    header = entry.header
    compression = entry.compression
    return {
        "position": entry.position,
        "size_bytes": entry.size_bytes,
        "magic": entry.magic,
        "base_offset": entry.base_offset,
        "last_offset": entry.last_offset,
        "record_count": entry.record_count,
        "crc": entry.crc,
        "crc_valid": entry.crc_valid,
        "compression": compression.name.lower() if compression is not None else None,
        "timestamp_type": _TIMESTAMP_TYPES[entry.timestamp_type],
        "first_timestamp": entry.first_timestamp,
        "max_timestamp": entry.max_timestamp,
        "producer_id": header.producer_id if header else None,
        "producer_epoch": header.producer_epoch if header else None,
        "base_sequence": header.base_sequence if header else None,
        "last_sequence": header.last_sequence if header else None,
        "partition_leader_epoch": header.partition_leader_epoch if header else None,
        "is_transactional": header.is_transactional if header else None,
        "is_control": header.is_control if header else None,
    }


def _records(entry: LogEntry, options: _Options) -> tuple[list[dict[str, Any]], Problem | None]:
    """The records' docs, and the problem that stopped their decoding, if any."""
    docs: list[dict[str, Any]] = []
    try:
        for record in records_of(entry):
            docs.append(_record_doc(record, entry, options))
    except ProtocolError as exc:
        return docs, Problem(
            f"records of the batch at offsets {entry.base_offset}..{entry.last_offset} "
            f"do not decode after {len(docs)} of them: {exc}",
            entry.position,
        )
    return docs, None


def _record_doc(record: Record, entry: LogEntry, options: _Options) -> dict[str, Any]:
    header = entry.header
    sequence = None
    if header is not None:
        sequence = (
            NO_SEQUENCE
            if header.base_sequence == NO_SEQUENCE
            else (header.base_sequence + record.offset - header.base_offset) & 0x7FFFFFFF
        )
    doc: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "sequence": sequence,
        "key_size": _size(record.key),
        "value_size": _size(record.value),
        "headers": [{"key": key, "value_size": _size(value)} for key, value in record.headers],
    }
    if header is not None and header.is_control:
        try:
            control = control_record(record)
            doc["control"] = {
                "type": control.type,
                "coordinator_epoch": control.coordinator_epoch,
            }
        except ProtocolError:
            doc["control"] = None
    if options.print_data:
        doc["key"], doc["key_encoding"] = _data(record.key)
        doc["value"], doc["value_encoding"] = _data(record.value)
        for header_doc, (_, value) in zip(doc["headers"], record.headers, strict=True):
            header_doc["value"], header_doc["value_encoding"] = _data(value)
    return doc


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _data(data: bytes | None) -> tuple[str | None, str | None]:
    """(text, "utf-8") when ``data`` is UTF-8, else (base64, "base64")."""
    return (None, None) if data is None else text_or_base64(data)


def _dump_index(
    path: Path,
    kind: str,
    read_at: _FileBytes,
    layouts: dict[Path, LogLayout],
    options: _Options,
    sink: _Sink,
) -> None:
    base_offset = base_offset_of(path)
    sink.start(path, kind, base_offset, read_at.size)
    if base_offset is None:
        sink.problem(Problem("not named by a base offset (20 digits): its entries cannot be read"))
        sink.end({"zero_bytes": 0})
        return
    data = read_at(0, read_at.size)  # an index is a few bytes per 4 KiB of log
    read = read_index(data, OFFSET_INDEX_ENTRY if kind == "index" else TIME_INDEX_ENTRY)
    summary: dict[str, Any] = {"entry_count": len(read.entries), "zero_bytes": read.zero_bytes}
    if options.index_sanity_check:
        problems = sanity_problems(read, time_index=kind == "timeindex")
        for problem in problems:
            sink.problem(problem)
        sink.end({**summary, "sanity_check": "failed" if problems else "passed"})
        return
    for problem in read.problems:
        sink.problem(problem)
    for first, second in [] if options.verify_index_only else read.entries:
        if kind == "index":
            sink.entry(
                {"offset": base_offset + first, "relative_offset": first, "position": second}
            )
        else:
            sink.entry(
                {"timestamp": first, "offset": base_offset + second, "relative_offset": second}
            )
    layout = _layout_beside(path, layouts)
    if layout is None:
        sink.problem(Problem(f"no {_log_beside(path).name} beside it: entries not checked"))
    else:
        check = check_offset_index if kind == "index" else check_time_index
        for problem in check(read.entries, base_offset, layout):
            sink.problem(problem)
    sink.end(summary)


def _log_beside(path: Path) -> Path:
    name = path.name
    copy = next((suffix for suffix in _COPY_SUFFIXES if name.endswith(suffix)), "")
    name = name.removesuffix(copy)
    stem = name.removesuffix(INDEX_SUFFIX).removesuffix(TIME_INDEX_SUFFIX)
    return path.with_name(stem + LOG_SUFFIX + copy)


def _layout_beside(path: Path, layouts: dict[Path, LogLayout]) -> LogLayout | None:
    log_path = _log_beside(path)
    key = log_path.resolve()
    if key not in layouts:
        try:
            with _opened(log_path) as read_at:
                layouts[key] = LogLayout.of(read_at, read_at.size)
        except (OSError, ValueError):
            return None
    return layouts[key]


# output


@dataclass(slots=True)
class _JsonSink:
    """One JSON document, written as the dump goes (a batch per line), so a
    large log is never held whole."""

    problem_count: int = 0
    _files_written: int = 0
    _items_written: int = 0
    _in_file: bool = False  # a file's list is being written: its other fields follow
    _problems: list[dict[str, Any]] = field(default_factory=list)

    def _open_file(self) -> None:
        sys.stdout.write('{"files": [\n' if not self._files_written else ",\n")
        self._files_written += 1

    def start(self, path: Path, kind: str, base_offset: int | None, size_bytes: int) -> None:
        self._open_file()
        head = {"path": str(path), "kind": kind, "base_offset": base_offset}
        head["size_bytes"] = size_bytes
        items = "batches" if kind == "log" else "entries"
        sys.stdout.write(json.dumps(head)[:-1] + f', "{items}": [')
        self._in_file, self._problems, self._items_written = True, [], 0

    def _item(self, doc: dict[str, Any]) -> None:
        sys.stdout.write(("\n" if not self._items_written else ",\n") + json.dumps(doc))
        self._items_written += 1

    def batch(self, doc: dict[str, Any]) -> None:
        self._item(doc)

    def entry(self, doc: dict[str, Any]) -> None:
        self._item(doc)

    def problem(self, problem: Problem) -> None:
        self.problem_count += 1
        self._problems.append(
            {"position": problem.position, "entry": problem.entry, "message": problem.message}
        )

    def end(self, summary: dict[str, Any]) -> None:
        rest = json.dumps({**summary, "problems": self._problems})
        sys.stdout.write("],\n" + rest[1:])
        self._in_file = False

    def error(self, path: Path, kind: str | None, message: str) -> None:
        if self._in_file:  # cut short: what was read stands
            self.end({"error": message})
        else:
            self._open_file()
            sys.stdout.write(json.dumps({"path": str(path), "kind": kind, "error": message}))
        print(f"wirekafka dump-log: {path}: {message}", file=sys.stderr)

    def finish(self) -> None:
        if not self._files_written:
            sys.stdout.write('{"files": [')
        sys.stdout.write(f'\n], "problem_count": {self.problem_count}}}\n')
        sys.stdout.flush()


@dataclass(slots=True)
class _TextSink:
    """Kafka's kafka-dump-log lines (its field names), problems among them and summed up last."""

    problem_count: int = 0
    _path: Path | None = None
    _entries: int = 0  # of the index being printed
    _problems: list[tuple[Path, Problem]] = field(default_factory=list)

    def start(self, path: Path, kind: str, base_offset: int | None, size_bytes: int) -> None:
        self._path = path
        self._entries = 0
        _line(f"Dumping {path}")
        if kind == "log":
            _line(f"Log starting offset: {'-' if base_offset is None else base_offset}")

    def batch(self, doc: dict[str, Any]) -> None:
        parts = [
            f"baseOffset: {doc['base_offset']}",
            f"lastOffset: {doc['last_offset']}",
            f"count: {_text_value(doc['record_count'])}",
        ]
        if doc["magic"] == 2:
            parts += [
                f"baseSequence: {doc['base_sequence']}",
                f"lastSequence: {doc['last_sequence']}",
                f"producerId: {doc['producer_id']}",
                f"producerEpoch: {doc['producer_epoch']}",
                f"partitionLeaderEpoch: {doc['partition_leader_epoch']}",
                f"isTransactional: {_text_value(doc['is_transactional'])}",
                f"isControl: {_text_value(doc['is_control'])}",
            ]
        parts += [
            f"position: {doc['position']}",
            f"{doc['timestamp_type']}: {doc['max_timestamp']}",
            f"firstTimestamp: {doc['first_timestamp']}",
            f"size: {doc['size_bytes']}",
            f"magic: {doc['magic']}",
            f"compresscodec: {_text_value(doc['compression'])}",
            f"crc: {doc['crc']}",
            f"isvalid: {_text_value(doc['crc_valid'])}",
        ]
        _line(" ".join(parts))
        for record in doc.get("records", ()):
            _line(_record_line(record, doc["timestamp_type"]))

    def entry(self, doc: dict[str, Any]) -> None:
        self._entries += 1
        if "position" in doc:
            _line(f"offset: {doc['offset']} position: {doc['position']}")
        else:
            _line(f"timestamp: {doc['timestamp']} offset: {doc['offset']}")

    def problem(self, problem: Problem) -> None:
        assert self._path is not None
        self.problem_count += 1
        self._problems.append((self._path, problem))
        _line(f"PROBLEM {_where(problem)}{problem.message}")

    def end(self, summary: dict[str, Any]) -> None:
        zeros = summary.get("zero_bytes", 0)
        if "valid_bytes" in summary:
            after = f", then {zeros} bytes of zeros (preallocated)" if zeros else ""
            _line(f"Log ends at position {summary['valid_bytes']}{after}")
        elif "sanity_check" in summary:
            _line(f"{self._path} {summary['sanity_check']} sanity check.")
        else:
            if self._entries != summary.get("entry_count", self._entries):
                _line(f"{summary['entry_count']} entries checked, not printed")
            elif not self._entries:
                _line("No entries")
            if zeros:
                _line(f"{zeros} bytes of zeros (preallocated) after the last entry")

    def error(self, path: Path, kind: str | None, message: str) -> None:
        print(f"wirekafka dump-log: {path}: {message}", file=sys.stderr)

    def finish(self) -> None:
        if not self._problems:
            return
        files = len({path for path, _ in self._problems})
        _line(f"Found {self.problem_count} problem(s) in {files} file(s):")
        for path, problem in self._problems:
            _line(f"  {path}: {_where(problem)}{problem.message}")


def _line(text: str) -> None:
    sys.stdout.write(text + "\n")


def _where(problem: Problem) -> str:
    if problem.position is not None:
        return f"position {problem.position}: "
    if problem.entry is not None:
        return f"entry {problem.entry}: "
    return ""


def _text_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _record_line(record: dict[str, Any], timestamp_type: str) -> str:
    parts = [
        f"| offset: {record['offset']}",
        f"{timestamp_type}: {record['timestamp']}",
        f"keySize: {record['key_size']}",
        f"valueSize: {record['value_size']}",
    ]
    if record["sequence"] is not None:
        parts.append(f"sequence: {record['sequence']}")
    parts.append("headerKeys: [" + ",".join(h["key"] for h in record["headers"]) + "]")
    if "control" in record:
        control = record["control"]
        if control is None:
            parts.append("controlType: unreadable")
        elif control["coordinator_epoch"] is not None:
            parts.append(f"endTxnMarker: {control['type']}")
            parts.append(f"coordinatorEpoch: {control['coordinator_epoch']}")
        else:
            parts.append(f"controlType: {control['type']}")
    if "key" in record:
        parts.append(f"key: {_text_data(record['key'], record['key_encoding'])}")
        parts.append(f"payload: {_text_data(record['value'], record['value_encoding'])}")
        if record["headers"]:
            shown = (
                f"{h['key']}={_text_data(h['value'], h['value_encoding'])}"
                for h in record["headers"]
            )
            parts.append("headers: [" + ",".join(shown) + "]")
    return " ".join(parts)


_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord("\\"): "\\\\"})


def _text_data(text: str | None, encoding: str | None) -> str:
    if text is None:
        return "null"
    if encoding == "base64":
        return "base64:" + text
    return text.translate(_ESCAPES)
