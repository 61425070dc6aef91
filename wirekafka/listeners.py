"""``listeners`` and ``advertised.listeners``: ``NAME://host:port`` lists."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wirekafka.storage.config import ConfigError

_LISTENER = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>\d+)$"
)


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # upper case; its security protocol: listener.security.protocol.map
    host: str  # empty: every interface
    port: int  # 0: any free port

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_listeners(key: str, text: str) -> tuple[Listener, ...]:
    listeners = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        match = _LISTENER.match(part)
        if match is None:
            raise ConfigError(f"{key}: {part!r} is not of the form NAME://host:port")
        name = match["name"].upper()
        port = int(match["port"])
        if port > 65535:
            raise ConfigError(f"{key}: {part!r}: port {port} is out of range")
        listeners.append(Listener(name, match["host"].strip("[]"), port))
    if not listeners:
        raise ConfigError(f"{key}={text!r}: names no listener")
    if len({listener.name for listener in listeners}) != len(listeners):
        raise ConfigError(f"{key}={text!r}: each listener name may appear once")
    return tuple(listeners)


_HTTP_LISTENER = re.compile(r"^http://(?P<host>\[[^\]]*\]|[^:/\[\]]+):(?P<port>\d+)/?$")


def parse_http_listener(key: str, text: str) -> Listener | None:
    """``http://host:port`` (port 0: any free port); empty: None, nothing served."""
    text = text.strip()
    if not text:
        return None
    match = _HTTP_LISTENER.match(text)
    if match is None:
        raise ConfigError(f"{key}={text!r}: expected http://host:port, or nothing")
    port = int(match["port"])
    if port > 65535:
        raise ConfigError(f"{key}={text!r}: port {port} is out of range")
    return Listener("http", match["host"].strip("[]"), port)
