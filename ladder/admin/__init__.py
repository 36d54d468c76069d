"""The operator's admin, one module per area. Every save of what a snapshot holds bumps the state version;
a credential or a secret is write-only and never shown. Importing the areas registers their admins."""

from ladder.admin import alerts, catalog, configuration, connections, gateway_tokens, history  # noqa: F401
