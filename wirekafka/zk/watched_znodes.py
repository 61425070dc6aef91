"""Which znodes a cache read with a watch that has not fired since.

A cache refreshed by rounds of ZooKeeper reads (:class:`~wirekafka.zk.cluster.ZkCluster`)
need not read such a znode again: it cannot have changed unnoticed, since its
change fires the watch, which drops it from here and asks for the next round.
A znode is marked *before* its read, so a change between the read and the mark
cannot be missed: at worst a znode is read once more than needed.

kazoo drops every watch when its connection is lost, and calls each one with an
event without a path: then nothing is kept, and the next round reads every znode.
A round whose reads the cache does not take (it was dropped) has what it marked
forgotten, so that the next round reads those znodes again.
"""

from __future__ import annotations

import threading

from kazoo.protocol.states import WatchedEvent


class WatchedZnodes:
    def __init__(self) -> None:
        self._paths: set[str] = set()
        self._marked: set[str] = set()  # since the round began
        self._lock = threading.Lock()  # kazoo's thread drops, the reading thread marks

    def begin_round(self) -> None:
        """A round of reads begins: what it marks can be forgotten with :meth:`drop_round`."""
        with self._lock:
            self._marked = set()

    def watching(self, *paths: str) -> None:
        """About to read ``paths`` with a watch (or, missing, to watch their creation)."""
        with self._lock:
            self._paths.update(paths)
            self._marked.update(paths)

    def drop_round(self) -> None:
        """The round's reads were not taken: the znodes it marked are read again. (A
        read made meanwhile by another caller of :meth:`watching` may be forgotten
        with them: it is read once more than needed.)"""
        with self._lock:
            self._paths -= self._marked
            self._marked = set()

    def fired(self, event: WatchedEvent) -> None:
        """A watch fired (kazoo's thread): its znode is no longer known to be as read."""
        with self._lock:
            if event.path is None:  # the connection was lost, and every watch with it
                self._paths.clear()
            else:
                self._paths.discard(event.path)

    def kept(self) -> frozenset[str]:
        """The znodes whose watch has not fired since they were read, now."""
        with self._lock:
            return frozenset(self._paths)

    def forget(self) -> None:
        """Keep nothing (a round failed, or a full read comes): every znode is read again."""
        with self._lock:
            self._paths.clear()
