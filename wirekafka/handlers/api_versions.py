"""ApiVersions: the served ranges, straight from the protocol's API table."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.api_table import advertised_versions
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from wirekafka.protocol.rpc import Request


def api_versions_response(error: ErrorCode = ErrorCode.NONE) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=error,
        api_keys=[
            ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised_versions()
        ],
        throttle_time_ms=0,
    )


async def handle_api_versions(ctx: BrokerContext, request: Request) -> ApiVersionsResponse:
    return api_versions_response()
