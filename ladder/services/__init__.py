"""Writes. One module per concern; this package re-exports the functions other layers call."""

from ladder.services.state import bump_state_version, configuration_update, connection_set_credential

__all__ = ["bump_state_version", "configuration_update", "connection_set_credential"]
