"""ApiVersions (key 18): which versions of which APIs the broker serves."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class ApiVersionsRequest:
    client_software_name: str = wire.string("3+")
    client_software_version: str = wire.string("3+")


@wire.message
class ApiVersion:
    api_key: int = wire.int16("0+")
    min_version: int = wire.int16("0+")
    max_version: int = wire.int16("0+")


@wire.message
class SupportedFeatureKey:
    name: str = wire.string("3+")
    min_version: int = wire.int16("3+")
    max_version: int = wire.int16("3+")


@wire.message
class FinalizedFeatureKey:
    name: str = wire.string("3+")
    max_version_level: int = wire.int16("3+")
    min_version_level: int = wire.int16("3+")


@wire.message
class ApiVersionsResponse:
    error_code: int = wire.int16("0+")
    api_keys: list[ApiVersion] = wire.array(ApiVersion, "0+")
    throttle_time_ms: int = wire.int32("1+")
    supported_features: list[SupportedFeatureKey] = wire.array(
        SupportedFeatureKey, "3+", tag=0, tagged="3+"
    )
    finalized_features_epoch: int = wire.int64("3+", tag=1, tagged="3+", default=-1)
    finalized_features: list[FinalizedFeatureKey] = wire.array(
        FinalizedFeatureKey, "3+", tag=2, tagged="3+"
    )
    zk_migration_ready: bool = wire.boolean("3+", tag=3, tagged="3+")
