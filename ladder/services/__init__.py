"""Writes. One module per concern, imported from where it lives; ``bump_state_version`` is named
here too, for the admin and the management commands that call ``services.bump_state_version()``."""

from ladder.services.state import bump_state_version

__all__ = ["bump_state_version"]
