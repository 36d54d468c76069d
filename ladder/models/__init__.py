"""The ladder's tables, one module per concern. Invariants live in Meta.constraints (raw writes obey them)
and clean() (readable messages in the admin and the services). Django finds every model here."""

from ladder.models.alerts import AlertChannel, AlertDelivery, AlertEpisode, AlertRule
from ladder.models.catalog import BillingCatalogEntry, CatalogChange, ModelCatalogEntry
from ladder.models.configuration import LadderConfiguration, StateVersion
from ladder.models.connections import Connection
from ladder.models.escalations import EscalationEvent, EscalationState, EscalationTally
from ladder.models.gateway_tokens import CredentialAccess, GatewayToken
from ladder.models.readings import FailureEvent, Heartbeat, QuotaReading, QuotaWindow
from ladder.models.usage import RungSpend, UsageEvent

__all__ = [
    "AlertChannel",
    "AlertDelivery",
    "AlertEpisode",
    "AlertRule",
    "BillingCatalogEntry",
    "CatalogChange",
    "Connection",
    "CredentialAccess",
    "EscalationEvent",
    "EscalationState",
    "EscalationTally",
    "FailureEvent",
    "GatewayToken",
    "Heartbeat",
    "LadderConfiguration",
    "ModelCatalogEntry",
    "QuotaReading",
    "QuotaWindow",
    "RungSpend",
    "StateVersion",
    "UsageEvent",
]

# Not models: names that modules outside this change (selectors, services.tokens, services.alert_senders,
# gateway.views, dashboard.views, dashboard.view_models) still import from here. Their homes are
# named below; the block goes when those imports point there.
from ladder.domain.alerts import ALERT_DELIVERY_STATUSES, alert_email_addresses  # noqa: E402
from ladder.domain.billing import catalog_key_label  # noqa: E402
from ladder.domain.types import CONNECTION_ID_PATTERN  # noqa: E402
from ladder.models.gateway_tokens import connection_ids_errors  # noqa: E402

__all__ += [
    "ALERT_DELIVERY_STATUSES",
    "CONNECTION_ID_PATTERN",
    "alert_email_addresses",
    "catalog_key_label",
    "connection_ids_errors",
]
