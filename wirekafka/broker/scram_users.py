"""Users' SCRAM credentials as the broker holds them: looked up by SASL logins, listed by
DescribeUserScramCredentials, changed by AlterUserScramCredentials.

They are kept in the embedded default's security metadata file
(:class:`~wirekafka.storage.security_metadata.SecurityMetadata`) or, with ZooKeeper,
at Kafka's ``/config/users/<name>`` (:class:`~wirekafka.zk.scram_credentials.ZkScramCredentials`,
whose cache follows changes other brokers make).
"""

from __future__ import annotations

from collections.abc import Mapping

from wirekafka.security.scram_credentials import ScramCredential, parse_credential
from wirekafka.storage.security_metadata import SecurityMetadata
from wirekafka.worker_threads import METADATA, run_blocking
from wirekafka.zk.scram_credentials import ZkScramCredentials


class ScramUsers:
    """user -> mechanism -> credential, read from the store's in-memory copy and kept
    parsed; every method but :meth:`change` and :meth:`run` answers at once."""

    def __init__(self, store: SecurityMetadata | ZkScramCredentials) -> None:
        self.store = store
        # (user, mechanism) -> the text last parsed and its credential
        self._parsed: dict[tuple[str, str], tuple[str, ScramCredential]] = {}

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        """The user's credential for ``mechanism`` (``SCRAM-SHA-256``); None if it has
        none, or if the stored text cannot be read as Kafka's (another writer's)."""
        text = self.store.scram_credentials().get(user, {}).get(mechanism)
        if text is None:
            return None
        key = (user, mechanism)
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == text:
            return cached[1]
        try:
            credential = parse_credential(text)
        except ValueError:
            return None
        self._parsed[key] = (text, credential)
        return credential

    def credentials(self) -> Mapping[str, Mapping[str, str]]:
        """user -> mechanism -> Kafka's credential text (users without any are absent)."""
        return self.store.scram_credentials()

    async def change(self, changes: Mapping[tuple[str, str], str | None]) -> None:
        """Store ``(user, mechanism) -> credential text`` (None: delete), all or nothing;
        MetadataSaveError and nothing changed if they cannot be written."""
        await run_blocking(METADATA, self.store.set_scram_credentials, changes)
        for key in changes:
            self._parsed.pop(key, None)

    async def run(self) -> None:
        """Keep the credentials fresh while others can change them (ZooKeeper), until
        cancelled; returns at once for the embedded file, which only this broker writes."""
        if isinstance(self.store, ZkScramCredentials):
            await self.store.run()
