"""What the embedded default keeps about security: users' SCRAM credentials.

``security-metadata.json`` in the first log dir, readable by the broker's user
alone (mode 0600), rewritten atomically on every change. A credential is kept
as Kafka keeps it in ZooKeeper (``salt=...,stored_key=...,server_key=...,
iterations=N``): salted and hashed, never a password. With ZooKeeper the
credentials live at ``/config/users/<name>`` instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirekafka.storage.cluster_metadata import MetadataSaveError
from wirekafka.storage.files import write_atomically
from wirekafka.worker_threads import blocking

SECURITY_METADATA_FILE = "security-metadata.json"
FORMAT_VERSION = 1
FILE_MODE = 0o600


class SecurityMetadataError(ValueError):
    """The file cannot be read."""


class SecurityMetadata:
    """Users' SCRAM credentials on disk: user -> mechanism -> Kafka's credential text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._users: dict[str, dict[str, str]] = {}
        self._write_lock = threading.Lock()  # changes come from worker threads, one at a time
        self._load()

    def _load(self) -> None:
        try:
            document: Any = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise SecurityMetadataError(f"{self.path}: {exc}") from exc
        if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
            raise SecurityMetadataError(f"{self.path}: not a version {FORMAT_VERSION} document")
        try:
            self._users = {
                str(user): {str(m): str(text) for m, text in mechanisms.items()}
                for user, mechanisms in document["scram_credentials"].items()
            }
        except (KeyError, TypeError, AttributeError) as exc:
            raise SecurityMetadataError(f"{self.path}: malformed: {exc!r}") from exc

    def scram_credentials(self) -> Mapping[str, Mapping[str, str]]:
        """user -> mechanism -> credential text (replaced whole by a change, never altered)."""
        return self._users

    @blocking
    def set_scram_credentials(self, changes: Mapping[tuple[str, str], str | None]) -> None:
        """Apply ``(user, mechanism) -> credential text`` (None: delete) all at once;
        MetadataSaveError (and nothing changed) if the file cannot be written."""
        with self._write_lock:
            users = {user: dict(mechanisms) for user, mechanisms in self._users.items()}
            for (user, mechanism), text in changes.items():
                if text is None:
                    users.get(user, {}).pop(mechanism, None)
                    if not users.get(user, True):
                        del users[user]
                else:
                    users.setdefault(user, {})[mechanism] = text
            document = {"version": FORMAT_VERSION, "scram_credentials": users}
            try:
                write_atomically(
                    self.path, json.dumps(document, indent=1).encode() + b"\n", FILE_MODE
                )
            except OSError as exc:
                raise MetadataSaveError(f"writing {self.path} failed: {exc}") from exc
            self._users = users
