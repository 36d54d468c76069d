"""Gateway tokens, as authentication reads them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from ladder.selectors.sql import GATEWAY_TOKEN_FIELDS, aware, json_list, sql_rows

TOKEN_CEILING_QUANTUM = Decimal("0.000001")


@dataclass(frozen=True, slots=True)
class GatewayTokenGrant:
    """A live gateway token as a request holds it: who it is, its scopes, its connections (empty:
    every one), its spend ceiling; never its value."""

    id: int
    name: str
    token_hash: str
    scope_resolve: bool
    scope_report: bool
    connection_ids: tuple[str, ...]
    spend_ceiling_usd: Decimal | None
    scope_credentials: bool
    last_used_at: datetime | None

    def allows_connection(self, connection_id: str | None) -> bool:
        return not self.connection_ids or connection_id in self.connection_ids


def gateway_token_by_hash(*, token_hash: str) -> GatewayTokenGrant | None:
    """The live (unrevoked) token with this digest: one hand-written query (make bench-api)."""
    rows = sql_rows("token", [token_hash])
    if not rows:
        return None
    values = dict(zip(GATEWAY_TOKEN_FIELDS, rows[0], strict=True))
    values["last_used_at"] = aware(values["last_used_at"])  # SQLite's cursor gives it naive
    # A raw cursor skips the fields' converters: the JSON list comes as text, the ceiling as a number.
    values["connection_ids"] = json_list(values["connection_ids"])
    ceiling = values["spend_ceiling_usd"]
    if ceiling is not None:
        values["spend_ceiling_usd"] = Decimal(str(ceiling)).quantize(TOKEN_CEILING_QUANTUM)
    return GatewayTokenGrant(**values)
