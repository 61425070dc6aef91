"""A clean stop in ZooKeeper mode moves this broker's leaderships away first:
Kafka's controlled shutdown, the broker's side.

Before the listeners close, the broker stops following partitions anew
(:meth:`~wirekafka.broker.replication.ReplicaManager.begin_shutdown`) and sends
ControlledShutdown to the controller that ``/controller`` names (itself, when
it is the controller). The controller moves each leadership to another live ISR
member and takes the broker out of the ISRs; it answers with the partitions it
could not move. An error, no controller, or partitions remaining is tried again
after ``controlled.shutdown.retry.backoff.ms``, ``controlled.shutdown.max.retries``
attempts in all (Kafka's count), except that the retries end at once when none
of the partitions in question has another replica registered any more (the
last broker of a cluster stopping): nobody could take them. In question are the
remaining partitions after an answer, every partition this broker leads or
follows after a failure. Then the broker waits, at most
:data:`LEADERSHIP_WAIT_S`, until it leads no partition whose ISR has another
live member (its cache has caught up with the controller's writes, even those
of an answer that never arrived), so that what clients send it next is refused
with NOT_LEADER_OR_FOLLOWER and retried at the new leaders. Then the normal
shutdown runs, whatever happened here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import trio

from wirekafka.broker.cluster import ClusterView
from wirekafka.broker.replication import ReplicaManager
from wirekafka.config import BrokerConfig
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
)
from wirekafka.server.inter_broker_connector import InterBrokerConnector
from wirekafka.worker_threads import METADATA, run_blocking
from wirekafka.zk.cluster import ZkCluster
from wirekafka.zk.session import ZooKeeperError

log = logging.getLogger("wirekafka.server")

CLIENT_ID = "wirekafka-controlled-shutdown"
VERSION = API_TABLE[ApiKey.CONTROLLED_SHUTDOWN].max_version
CONNECT_TIMEOUT_S = 5.0
CONTROLLER_SOCKET_TIMEOUT_S = 30.0  # Kafka's controller.socket.timeout.ms
LEADERSHIP_WAIT_S = 5.0
POLL_S = 0.1


@dataclass(slots=True)
class Attempt:
    """What one ControlledShutdown request came to."""

    error: str | None = None  # why it failed without an answer, or the answer's error
    remaining: list[tuple[str, int]] = field(default_factory=list)
    answered: bool = False  # the controller answered NONE (it may have moved some)

    @property
    def succeeded(self) -> bool:
        return self.answered and not self.remaining


async def controlled_shutdown(
    config: BrokerConfig,
    zookeeper: ZkCluster,
    replicas: ReplicaManager,
    cluster: ClusterView,
    connector: InterBrokerConnector,
) -> bool:
    """Move this broker's leaderships away (see the module's documentation); True
    when the controller moved every one it could be asked to."""
    broker_id = config.broker_id
    await replicas.begin_shutdown()
    attempts = config.controlled_shutdown_max_retries
    backoff_s = config.controlled_shutdown_retry_backoff_ms / 1000
    attempt = Attempt()
    if attempts == 0:
        log.warning("controlled shutdown: no attempt (controlled.shutdown.max.retries=0)")
    for number in range(1, attempts + 1):
        attempt = await _ask_controller(zookeeper, broker_id, connector)
        if attempt.succeeded:
            break
        reason = attempt.error or f"partitions remaining: {_names(attempt.remaining)}"
        if number == attempts:
            log.warning("controlled shutdown attempt %d of %d failed: %s", number, attempts, reason)
            break
        log.info(
            "controlled shutdown attempt %d of %d failed: %s; trying again in %d ms",
            number, attempts, reason, config.controlled_shutdown_retry_backoff_ms,
        )  # fmt: skip
        in_question = attempt.remaining if attempt.answered else [*replicas.led, *replicas.followed]
        if not await _back_off(backoff_s, in_question, cluster, broker_id):
            log.warning(
                "controlled shutdown: no other replica of %s is registered any more; "
                "not trying again",
                _names(in_question),
            )
            break
    if attempt.succeeded:
        log.info("controlled shutdown succeeded: the controller moved every leadership away")
    else:
        log.warning(
            "controlled shutdown did not succeed; proceeding with the shutdown "
            "(the partitions still led here move when this broker's registration goes)"
        )
    await _wait_for_leaderships_to_move(replicas, cluster)
    return attempt.succeeded


async def _ask_controller(
    zookeeper: ZkCluster, broker_id: int, connector: InterBrokerConnector
) -> Attempt:
    try:
        target = await run_blocking(METADATA, zookeeper.shutdown_target)
    except ZooKeeperError as exc:
        return Attempt(error=str(exc))
    if target is None:
        return Attempt(error="no controller (or ZooKeeper is not connected)")
    where = f"controller {target.controller_id} at {target.host}:{target.port}"
    log.info("controlled shutdown: asking %s", where)
    request = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=target.broker_epoch)
    try:
        connection = await connector.connect(
            target.host, target.port, target.controller_id, CLIENT_ID, CONNECT_TIMEOUT_S
        )
        async with connection:
            response = await connection.call(
                ApiKey.CONTROLLED_SHUTDOWN, VERSION, request, CONTROLLER_SOCKET_TIMEOUT_S
            )
    except (OSError, ConnectionError, trio.BrokenResourceError, trio.TooSlowError,
            ProtocolError) as exc:  # fmt: skip
        return Attempt(error=f"{where}: {exc!r}")
    assert isinstance(response, ControlledShutdownResponse)
    if response.error_code != ErrorCode.NONE:
        return Attempt(error=f"{where} answered {_error_name(response.error_code)}")
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    return Attempt(remaining=remaining, answered=True)


async def _back_off(
    backoff_s: float, partitions: list[tuple[str, int]], cluster: ClusterView, broker_id: int
) -> bool:
    """Wait ``backoff_s`` before the next attempt; False as soon as none of
    ``partitions`` has another registered replica: a retry could change nothing."""
    deadline = trio.current_time() + backoff_s
    while True:
        if not _could_move(partitions, cluster, broker_id):
            return False
        left = deadline - trio.current_time()
        if left <= 0:
            return True
        await trio.sleep(min(POLL_S, left))


def _could_move(partitions: list[tuple[str, int]], cluster: ClusterView, broker_id: int) -> bool:
    live = {b.node_id for b in cluster.brokers()}
    return any(
        r != broker_id and r in live
        for topic, partition in partitions
        for r in cluster.replicas(topic, partition)
    )


async def _wait_for_leaderships_to_move(replicas: ReplicaManager, cluster: ClusterView) -> None:
    """Until this broker leads nothing another live ISR member could lead, as its
    cache of the cluster says, or :data:`LEADERSHIP_WAIT_S`."""
    with trio.move_on_after(LEADERSHIP_WAIT_S):
        while True:
            await replicas.reconcile()
            live = {b.node_id for b in cluster.brokers()}
            if not replicas.movable_leaderships(live):
                return
            await trio.sleep(POLL_S)
    live = {b.node_id for b in cluster.brokers()}
    log.warning(
        "controlled shutdown: still leading %s after %.0f s",
        _names(replicas.movable_leaderships(live)), LEADERSHIP_WAIT_S,
    )  # fmt: skip


def _names(partitions: list[tuple[str, int]]) -> str:
    return ", ".join(f"{topic}-{partition}" for topic, partition in partitions) or "none"


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
