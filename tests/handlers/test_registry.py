"""Every API the protocol table advertises has a handler: the server looks
handlers up without a fallback."""

from wirekafka.handlers.registry import HANDLERS
from wirekafka.protocol.api_table import advertised_versions


def test_every_advertised_api_has_a_handler() -> None:
    advertised = {key for key, _, _ in advertised_versions()}
    assert set(HANDLERS) == advertised
