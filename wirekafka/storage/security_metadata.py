"""What the embedded default keeps about security: users' SCRAM credentials and
the ACLs.

``security-metadata.json`` in the first log dir, readable by the broker's user
alone (mode 0600), rewritten atomically on every change. A credential is kept
as Kafka keeps it in ZooKeeper (``salt=...,stored_key=...,server_key=...,
iterations=N``): salted and hashed, never a password. With ZooKeeper the
credentials live at ``/config/users/<name>`` instead.

The ACLs are under ``acls``, one object a binding (:mod:`wirekafka.security.acl_json`:
``resourceType``, ``name``, ``patternType``, ``principal``, ``permissionType``,
``host``, ``operation``); with ZooKeeper they live in Kafka's ``/kafka-acl`` znodes.
Format version 2 added them; a version 1 file (credentials only) reads as one
without ACLs, and a version 2 file is refused by a broker that knows only 1
rather than losing its ACLs at its next write.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirekafka.security.acl import AclBinding, ResourcePattern
from wirekafka.security.acl_json import bindings_from_json, bindings_to_json
from wirekafka.security.acl_updates import AclChange, AclUpdate, apply_changes, by_pattern
from wirekafka.storage.cluster_metadata import MetadataSaveError
from wirekafka.storage.files import write_atomically
from wirekafka.worker_threads import blocking

SECURITY_METADATA_FILE = "security-metadata.json"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: SCRAM credentials only
FILE_MODE = 0o600


class SecurityMetadataError(ValueError):
    """The file cannot be read."""


class SecurityMetadata:
    """Users' SCRAM credentials on disk (user -> mechanism -> Kafka's credential
    text) and the ACL bindings (by resource pattern)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._users: dict[str, dict[str, str]] = {}
        self._acls: dict[ResourcePattern, frozenset[AclBinding]] = {}
        self._write_lock = threading.Lock()  # changes come from worker threads, one at a time
        self._load()

    def _load(self) -> None:
        try:
            document: Any = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise SecurityMetadataError(f"{self.path}: {exc}") from exc
        if not isinstance(document, dict) or document.get("version") not in READABLE_VERSIONS:
            raise SecurityMetadataError(
                f"{self.path}: not a version {' or '.join(map(str, READABLE_VERSIONS))} document"
            )
        try:
            self._users = {
                str(user): {str(m): str(text) for m, text in mechanisms.items()}
                for user, mechanisms in document["scram_credentials"].items()
            }
        except (KeyError, TypeError, AttributeError) as exc:
            raise SecurityMetadataError(f"{self.path}: malformed: {exc!r}") from exc
        try:
            self._acls = by_pattern(bindings_from_json(document.get("acls", [])))
        except ValueError as exc:
            raise SecurityMetadataError(f"{self.path}: malformed ACLs: {exc}") from exc

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
            self._write(users, self._acls)
            self._users = users

    def acl_bindings(self) -> list[AclBinding]:
        """Every ACL binding held, sorted."""
        return sorted(binding for held in self._acls.values() for binding in held)

    @blocking
    def update_acls(
        self, changes: Mapping[ResourcePattern, AclChange]
    ) -> dict[ResourcePattern, AclUpdate]:
        """Apply each pattern's change to the bindings held for it, in one write;
        MetadataSaveError (and nothing changed) if the file cannot be written."""
        with self._write_lock:
            updates = apply_changes(self._acls, changes)
            acls = dict(self._acls)
            for pattern, update in updates.items():
                if update.after:
                    acls[pattern] = update.after
                else:
                    acls.pop(pattern, None)
            if any(update.changed for update in updates.values()):
                self._write(self._users, acls)
            self._acls = acls
            return updates

    @blocking
    def _write(
        self,
        users: dict[str, dict[str, str]],
        acls: Mapping[ResourcePattern, frozenset[AclBinding]],
    ) -> None:
        document = {
            "version": FORMAT_VERSION,
            "scram_credentials": users,
            "acls": bindings_to_json(b for held in acls.values() for b in held),
        }
        try:
            write_atomically(self.path, json.dumps(document, indent=1).encode() + b"\n", FILE_MODE)
        except OSError as exc:
            raise MetadataSaveError(f"writing {self.path} failed: {exc}") from exc
