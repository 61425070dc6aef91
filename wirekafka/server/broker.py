"""The broker process: storage, listeners, connections, background work, shutdown.

Connections are admitted within ``max.connections`` and the per-address
limits (:mod:`wirekafka.server.acceptor`), and the requests they are
receiving or waiting to have handled share ``queued.max.request.bytes``
(:mod:`wirekafka.server.memory_pool`).

Shutdown (SIGINT/SIGTERM in the command line) first, with ZooKeeper and
``controlled.shutdown.enable``, asks the controller to move this broker's
leaderships away (:mod:`wirekafka.server.controlled_shutdown`) while it still
serves; then it stops accepting, lets each connection finish the request it is
handling, flushes every log, writes the checkpoints and the clean-shutdown
marker.

Every task the broker runs belongs to the nursery of :meth:`Broker.serve`:
the connections, maintenance, compaction, the group coordinator's timers
and, with ZooKeeper, the cluster cache's refresh, the ACL change notifications
and the registration after a new session. What they do that blocks goes to
worker threads through :mod:`wirekafka.worker_threads`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import ssl
import time
from collections.abc import Callable, Mapping

import trio

from wirekafka.broker.cluster import BrokerEndpoint
from wirekafka.broker.context import (
    BrokerContext,
    broker_fd_budget,
    open_broker_context,
)
from wirekafka.broker.metric_figures import loop_figures
from wirekafka.config import BrokerConfig
from wirekafka.listeners import Listener
from wirekafka.security.ssl_principal import PrincipalMapper
from wirekafka.server.acceptor import Acceptor
from wirekafka.server.connection import Idle, ReadWait, serve_connection
from wirekafka.server.connection_quotas import ConnectionQuotas, resolve_overrides
from wirekafka.server.controlled_shutdown import controlled_shutdown
from wirekafka.server.inter_broker_connector import InterBrokerConnector
from wirekafka.server.memory_pool import MemoryPool
from wirekafka.server.metrics_http import MetricsServer
from wirekafka.server.replica_fetcher import ReplicaFetchers
from wirekafka.server.tls import server_context
from wirekafka.storage.log import StorageError
from wirekafka.storage.meta_properties import new_cluster_id, read_meta_properties
from wirekafka.worker_threads import LOG_DIRS, METADATA, METRICS, blocking, run_blocking
from wirekafka.zk.cluster import ZkCluster
from wirekafka.zk.registry import BrokerRegistry, join_zookeeper, leave_zookeeper
from wirekafka.zk.znodes import EndPoint

log = logging.getLogger("wirekafka.server")

SHUTDOWN_GRACE_SECONDS = 10.0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Broker:
    def __init__(self, config: BrokerConfig, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.stopping = False
        self._idle: set[Idle] = set()
        self._stop = trio.Event()
        self.context: BrokerContext
        self.zk_cluster: ZkCluster | None = None
        self.listen_urls: list[str] = []
        self.metrics_url: str | None = None  # http://host:port/metrics, with metrics.listener
        self.fd_budget = broker_fd_budget(config)  # FdBudgetError: the limit is too low
        self.memory_pool = MemoryPool(config.queued_max_request_bytes)
        self.tls_contexts: dict[str, ssl.SSLContext] = {}  # by listener name
        # connects to the other brokers (with ZooKeeper)
        self.inter_broker: InterBrokerConnector | None = None
        # TLS listeners' ssl.principal.mapping.rules (checked when the config was read)
        self.principal_mappers: Mapping[str, PrincipalMapper] = {
            name: PrincipalMapper(security.tls.principal_mapping_rules)
            for name, security in config.listener_security.items()
            if security.tls is not None
        }
        self.acceptor = Acceptor(
            ConnectionQuotas(self.fd_budget.max_connections, self.fd_budget.max_connections_per_ip)
        )

    # the ConnectionHost side

    def add_idle(self, waiting: Idle) -> None:
        self._idle.add(waiting)
        if self.stopping:
            waiting.cancel()

    def remove_idle(self, waiting: Idle) -> None:
        self._idle.discard(waiting)

    # lifecycle

    def request_stop(self) -> None:
        self._stop.set()

    async def _open_listeners(self) -> list[tuple[Listener, trio.SocketListener]]:
        opened = []
        for listener in self.config.listeners:
            sockets = await trio.open_tcp_listeners(listener.port, host=listener.host or None)
            for sock in sockets:
                opened.append((listener, sock))
        return opened

    def _endpoints(
        self, opened: list[tuple[Listener, trio.SocketListener]]
    ) -> dict[str, BrokerEndpoint]:
        """This broker as clients reach it on each advertised listener (ports resolved),
        the inter-broker listener first."""
        bound = {listener.name: sock.socket.getsockname()[1] for listener, sock in opened}
        endpoints = {}
        for advertised in self.config.advertised_listeners:
            port = advertised.port or bound[advertised.name]
            host = advertised.host or "localhost"
            if host in ("0.0.0.0", "::"):
                host = "localhost"
            endpoints[advertised.name] = BrokerEndpoint(self.config.broker_id, host, port)
        first = self.config.inter_broker_listener_name
        if first in endpoints:
            endpoints = {first: endpoints.pop(first), **endpoints}
        return endpoints

    async def serve(
        self, *, task_status: trio.TaskStatus[BrokerEndpoint] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.acceptor.quotas.overrides = await run_blocking(
            METADATA, resolve_overrides, self.config.max_connections_per_ip_overrides
        )
        await self._load_tls_contexts()
        opened = await self._open_listeners()
        endpoints = self._endpoints(opened)
        endpoint = next(iter(endpoints.values()))
        registry: BrokerRegistry | None = None
        metrics_sockets: list[trio.SocketListener] = []
        try:
            metrics_sockets = await self._open_metrics_listener()
            config = self.config
            if config.zookeeper_connect:
                self.inter_broker = await InterBrokerConnector.load(config)
                joined, cluster_id = await run_blocking(METADATA, self._join_zookeeper, endpoints)
                registry = joined
                config = dataclasses.replace(config, cluster_id=cluster_id)
                self.zk_cluster = ZkCluster(
                    joined.session,
                    config.broker_id,
                    trio.lowlevel.current_trio_token(),
                    unclean_leader_election_enable=config.log.unclean_leader_election_enable,
                    auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
                    inter_broker_listener=config.inter_broker_listener_name,
                )
                await run_blocking(METADATA, self.zk_cluster.refresh)
                # a new session has none of the old one's watches: read everything again
                joined.session.on_new_session(self.zk_cluster.refresh)
            self.context = await run_blocking(
                LOG_DIRS,
                open_broker_context,
                config,
                self.clock,
                endpoints,
                self.zk_cluster,
                self.fd_budget,
            )
            if registry is not None:
                await run_blocking(METADATA, registry.register)
        except BaseException:
            for _, sock in opened:
                await sock.aclose()
            for sock in metrics_sockets:
                await sock.aclose()
            if registry is not None:
                with trio.CancelScope(shield=True):
                    await run_blocking(METADATA, self._leave_zookeeper, registry)
            raise
        logs = self.context.logs
        try:
            self.listen_urls = [
                Listener(listener.name, *sock.socket.getsockname()[:2]).url()
                for listener, sock in opened
            ]
            quotas = self.acceptor.quotas
            log.info(
                "at most %d connections, %d from one address%s; requests being received or "
                "handled take at most %d bytes (queued.max.request.bytes)",
                quotas.max_connections,
                quotas.max_connections_per_ip,
                f" ({len(quotas.overrides)} addresses overridden)" if quotas.overrides else "",
                self.memory_pool.capacity_bytes,
            )
            async with trio.open_nursery() as nursery:
                accept_scope = trio.CancelScope()
                nursery.start_soon(self._accept, opened, nursery, accept_scope)
                nursery.start_soon(self._maintain)
                nursery.start_soon(self.context.groups.run_timers)
                nursery.start_soon(self._compact)
                nursery.start_soon(self._close_idle_connections)
                if metrics_sockets:
                    metrics = MetricsServer(self._scrape, self._serving)
                    nursery.start_soon(metrics.run, metrics_sockets)
                if registry is not None and self.zk_cluster is not None:
                    nursery.start_soon(self.zk_cluster.run)
                    if self.context.scram_users is not None:
                        nursery.start_soon(self.context.scram_users.run)
                    nursery.start_soon(registry.session.renew_registrations)
                authorizer, acl_changes = self.context.authorizer, self.context.acl_changes
                if authorizer is not None and acl_changes is not None:
                    nursery.start_soon(acl_changes.follow, authorizer)
                if (replicas := self.context.replicas) is not None:
                    nursery.start_soon(replicas.run)
                    assert self.inter_broker is not None, "replicas are ZooKeeper's"
                    nursery.start_soon(
                        ReplicaFetchers(
                            replicas,
                            self.context.cluster,
                            self.inter_broker,
                            max_wait_ms=config.replica_fetch_wait_max_ms,
                            min_bytes=config.replica_fetch_min_bytes,
                            max_bytes=config.replica_fetch_max_bytes,
                        ).run
                    )
                task_status.started(endpoint)
                await self._stop.wait()
                log.info("shutting down")
                await self._controlled_shutdown(config)
                accept_scope.cancel()
                self.stopping = True
                for waiting in list(self._idle):
                    waiting.cancel()
                self.context.appends.wake_all()  # long polls answer now with what they have
                with trio.move_on_after(SHUTDOWN_GRACE_SECONDS):
                    await self.acceptor.no_connections.wait()
                if logs.cleaner is not None:  # a compaction pass under way ends now
                    logs.cleaner.interrupt()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if registry is not None:
                    await run_blocking(METADATA, self._leave_zookeeper, registry)
                clean = await run_blocking(LOG_DIRS, logs.shutdown)
        if clean:
            log.info("stopped cleanly")
        else:
            log.warning("stopped; not every log closed cleanly, so the next start recovers them")

    async def _open_metrics_listener(self) -> list[trio.SocketListener]:
        """The sockets of ``metrics.listener``, if it is set; sets :attr:`metrics_url`."""
        listener = self.config.metrics_listener
        if listener is None:
            return []
        sockets = await trio.open_tcp_listeners(listener.port, host=listener.host or None)
        host, port = sockets[0].socket.getsockname()[:2]
        self.metrics_url = Listener("http", host, port).url() + "/metrics"
        return sockets

    def _serving(self) -> bool:
        return not self._stop.is_set()

    async def _scrape(self) -> bytes:
        """The text of ``/metrics``: the loop's figures copied here, the rest read
        and rendered in a worker thread."""
        # prometheus_client is imported only by a broker that serves metrics
        from wirekafka.server.metrics_exposition import render_metrics

        figures = loop_figures(self.context, self.acceptor.quotas.total)
        return await run_blocking(METRICS, render_metrics, figures, self.context.logs)

    async def _controlled_shutdown(self, config: BrokerConfig) -> None:
        """With ZooKeeper: move the leaderships away while still serving, unless
        ``controlled.shutdown.enable`` is false."""
        replicas = self.context.replicas
        if self.zk_cluster is None or replicas is None or self.inter_broker is None:
            return
        if not config.controlled_shutdown_enable:
            log.info("controlled shutdown disabled (controlled.shutdown.enable=false)")
            return
        try:
            await controlled_shutdown(
                config, self.zk_cluster, replicas, self.context.cluster, self.inter_broker
            )
        except Exception:  # a bug: the shutdown goes on, as after a failed attempt
            log.exception("controlled shutdown failed; proceeding with the shutdown")

    @blocking
    def _leave_zookeeper(self, registry: BrokerRegistry) -> None:
        if self.zk_cluster is not None:
            self.zk_cluster.stop()
        leave_zookeeper(registry)

    @blocking
    def _join_zookeeper(self, endpoints: dict[str, BrokerEndpoint]) -> tuple[BrokerRegistry, str]:
        config = self.config
        assert config.zookeeper_connect is not None
        local = read_meta_properties(config.log_dirs[0])
        return join_zookeeper(
            config.zookeeper_connect,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
            broker_id=config.broker_id,
            endpoints=tuple(
                EndPoint(name, config.listener_security[name].security_protocol, e.host, e.port)
                for name, e in endpoints.items()
            ),
            proposed_cluster_id=config.cluster_id
            or (local.cluster_id if local is not None else new_cluster_id()),
        )

    async def _accept(
        self,
        opened: list[tuple[Listener, trio.SocketListener]],
        nursery: trio.Nursery,
        scope: trio.CancelScope,
    ) -> None:
        with scope:
            async with trio.open_nursery() as accepting:
                for listener, sock in opened:
                    serve = functools.partial(self._serve_connection, listener.name)
                    accepting.start_soon(self.acceptor.accept_from, sock, nursery, serve)
        for _, sock in opened:
            await sock.aclose()

    async def _serve_connection(self, listener_name: str, stream: trio.SocketStream) -> None:
        await serve_connection(
            self,
            stream,
            self.config.listener_security[listener_name],
            self.tls_contexts.get(listener_name),
        )

    async def _load_tls_contexts(self) -> None:
        """Each TLS listener's SSL context, its PEM stores read in a worker thread."""
        for name, security in self.config.listener_security.items():
            if security.tls is not None:
                self.tls_contexts[name] = await run_blocking(
                    METADATA, server_context, security.tls, name
                )

    async def _maintain(self) -> None:
        """Retention, timed flushes, fsync of rolled segments, delayed deletions
        and the offset checkpoints, periodically; expiry of idle producers every
        ``producer.id.expiration.check.interval.ms``, as Kafka's."""
        config = self.config
        period = (
            min(config.log_flush_scheduler_interval_ms, config.log_retention_check_interval_ms)
            / 1000
        )
        logs = self.context.logs
        checkpoint_every = config.log_flush_offset_checkpoint_interval_ms / 1000
        next_checkpoint = trio.current_time() + checkpoint_every
        offsets_every = config.offsets_retention_check_interval_ms / 1000
        next_offsets_expiry = trio.current_time() + offsets_every
        producers_every = config.producer_id_expiration_check_interval_ms / 1000
        next_producers_expiry = trio.current_time() + producers_every
        cluster_seen: int | None = None  # the ZooKeeper cache's generation last gone through
        while True:
            await trio.sleep(period)
            expire_producers = trio.current_time() >= next_producers_expiry
            await run_blocking(
                LOG_DIRS,
                functools.partial(logs.run_maintenance, expire_producers=expire_producers),
            )
            if expire_producers:
                next_producers_expiry = trio.current_time() + producers_every
            if self.zk_cluster is not None and self.zk_cluster.generation != cluster_seen:
                # topics deleted, or their configs changed, through other brokers: both walk
                # every log, so only after the cache changed
                cluster_seen = self.zk_cluster.generation
                await run_blocking(LOG_DIRS, self.context.topics.drop_logs_of_deleted_topics)
                self.context.topics.apply_log_configs()
            if trio.current_time() >= next_offsets_expiry:
                await self.context.groups.expire_offsets()
                next_offsets_expiry = trio.current_time() + offsets_every
            if trio.current_time() >= next_checkpoint:
                try:
                    await run_blocking(LOG_DIRS, logs.write_checkpoints)
                except OSError as exc:  # tried again next time; recovery covers the gap
                    log.error("writing the offset checkpoints failed: %s", exc)
                next_checkpoint = trio.current_time() + checkpoint_every

    async def _close_idle_connections(self) -> None:
        """End the connections whose reader has waited ``connections.max.idle.ms`` for a
        request (Kafka's idle limit), checking the waiting readers a few times per limit."""
        limit_ms = self.config.connections_max_idle_ms
        if limit_ms < 0:
            return
        limit_s = limit_ms / 1000
        while True:
            await trio.sleep(min(1.0, limit_s / 4))
            now = trio.current_time()
            for waiting in list(self._idle):
                if isinstance(waiting, ReadWait) and now - waiting.since >= limit_s:
                    waiting.expire()

    async def _compact(self) -> None:
        """Compact the logs of compacted topics (``__consumer_offsets``) in a worker
        thread, every ``log.cleaner.backoff.ms``; appends carry on meanwhile.

        A pass that fails is logged with its partition and tried again next
        time; whatever it raised, the broker and the other partitions go on."""
        logs = self.context.logs
        while True:
            await trio.sleep(self.config.log_cleaner_backoff_ms / 1000)
            for partition_log in logs.logs_to_compact():
                try:
                    await run_blocking(LOG_DIRS, logs.clean, partition_log)
                except (StorageError, OSError) as exc:  # the next pass tries again
                    log.error("compaction of %r failed: %s", partition_log, exc)
                except Exception:  # a bug, or data nothing expected: not fatal either
                    log.exception("compaction of %r failed", partition_log)
