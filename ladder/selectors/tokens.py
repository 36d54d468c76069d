"""Gateway tokens, as authentication reads them."""

from __future__ import annotations

import json
import logging
from decimal import Decimal

from django.db import connection as db_connection

from ladder import models as m
from ladder.selectors.sql import GATEWAY_TOKEN_FIELDS, aware, sql_rows

logger = logging.getLogger(__name__)


TOKEN_CEILING_QUANTUM = Decimal("0.000001")


def gateway_token_by_hash(*, token_hash: str) -> m.GatewayToken | None:
    """The live (unrevoked) token with this digest: only the fields authentication reads are loaded."""
    rows = sql_rows("token", [token_hash])
    if not rows:
        return None
    db = db_connection.alias
    values = dict(zip(GATEWAY_TOKEN_FIELDS, rows[0], strict=True))
    values["last_used_at"] = aware(values["last_used_at"])  # SQLite's cursor gives it naive
    # A raw cursor skips the fields' converters: the JSON list comes as text, the ceiling as a number.
    ids = values["connection_ids"]
    values["connection_ids"] = json.loads(ids) if isinstance(ids, str | bytes) else (ids or [])
    ceiling = values["spend_ceiling_usd"]
    if ceiling is not None:
        values["spend_ceiling_usd"] = Decimal(str(ceiling)).quantize(TOKEN_CEILING_QUANTUM)
    return m.GatewayToken.from_db(db, list(GATEWAY_TOKEN_FIELDS), list(values.values()))
