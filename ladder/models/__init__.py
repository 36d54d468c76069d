"""The ladder's tables, one module per concern. Invariants live in Meta.constraints (raw writes obey them)
and clean() (readable messages in the admin and the services). Django finds every model here."""
# ruff: noqa: F401, I001  (imports for Django and callers, and a separate block, below, of non-models)

from ladder.models.alerts import AlertChannel, AlertDelivery, AlertEpisode, AlertRule
from ladder.models.catalog import BillingCatalogEntry, CatalogChange, ModelCatalogEntry
from ladder.models.configuration import LadderConfiguration, StateVersion
from ladder.models.connections import Connection
from ladder.models.escalations import EscalationEvent, EscalationState, EscalationTally
from ladder.models.gateway_tokens import CredentialAccess, GatewayToken
from ladder.models.readings import FailureEvent, Heartbeat, QuotaReading, QuotaWindow
from ladder.models.usage import RungSpend, UsageEvent

# Not models: names that modules outside this change (selectors, services.tokens, services.alert_senders,
# gateway.views, dashboard.views, dashboard.view_models) still import from here. Their homes are
# named below; the block goes when those imports point there.
from ladder.domain.alerts import ALERT_DELIVERY_STATUSES, alert_email_addresses
from ladder.domain.billing import catalog_key_label
from ladder.domain.types import CONNECTION_ID_PATTERN
from ladder.models.gateway_tokens import connection_ids_errors
