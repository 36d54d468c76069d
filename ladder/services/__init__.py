"""Writes. One module per concern; this package re-exports the functions other layers call."""

from ladder.services.failures import failure_record
from ladder.services.observations import observation_record
from ladder.services.readings import reading_record, readings_purge
from ladder.services.state import (
    bump_live_version,
    bump_state_version,
    configuration_update,
    connection_reserve_set,
    connection_set_credential,
)
from ladder.services.tokens import gateway_token_create, gateway_token_revoke
from ladder.services.usage import usage_record

__all__ = [
    "bump_live_version",
    "bump_state_version",
    "configuration_update",
    "connection_reserve_set",
    "connection_set_credential",
    "failure_record",
    "gateway_token_create",
    "gateway_token_revoke",
    "observation_record",
    "reading_record",
    "readings_purge",
    "usage_record",
]
