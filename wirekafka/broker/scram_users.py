"""Users' SCRAM credentials as the broker holds them: looked up by SASL logins, changed by
AlterUserScramCredentials, kept in the embedded default's security metadata file."""

from __future__ import annotations

from wirekafka.security.scram_credentials import ScramCredential, parse_credential
from wirekafka.storage.security_metadata import SecurityMetadata
from wirekafka.worker_threads import METADATA, run_blocking


class ScramUsers:
    """user -> mechanism -> credential, read from the store and cached parsed."""

    def __init__(self, store: SecurityMetadata) -> None:
        self.store = store
        self._parsed: dict[tuple[str, str], ScramCredential | None] = {}
        self._texts = store.scram_credentials()

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        """The user's credential for ``mechanism`` (``SCRAM-SHA-256``); None if it has none."""
        key = (user, mechanism)
        if key not in self._parsed:
            text = self._texts.get(user, {}).get(mechanism)
            self._parsed[key] = parse_credential(text) if text is not None else None
        return self._parsed[key]

    def credentials(self) -> dict[str, dict[str, str]]:
        """user -> mechanism -> Kafka's credential text."""
        return {user: dict(mechanisms) for user, mechanisms in self._texts.items()}

    async def change(self, changes: dict[tuple[str, str], str | None]) -> None:
        """Store ``(user, mechanism) -> credential text`` (None: delete); MetadataSaveError
        and nothing changed if they cannot be written."""
        await run_blocking(METADATA, self.store.set_scram_credentials, changes)
        self._texts = self.store.scram_credentials()
        self._parsed.clear()
