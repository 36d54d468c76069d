"""The ladder's tables, one module per concern. Invariants live in Meta.constraints (raw writes obey them)
and clean() (readable messages in the admin and the services). Django finds every model here."""
# ruff: noqa: F401  (imported for Django, and for the callers' `from ladder.models import Connection`)

from ladder.models.alerts import AlertChannel, AlertDelivery, AlertEpisode, AlertRule
from ladder.models.catalog import BillingCatalogEntry, CatalogChange, ModelCatalogEntry
from ladder.models.configuration import LadderConfiguration, StateVersion
from ladder.models.connections import Connection
from ladder.models.escalations import EscalationEvent, EscalationState, EscalationTally
from ladder.models.gateway_tokens import CredentialAccess, GatewayToken
from ladder.models.readings import FailureEvent, Heartbeat, QuotaReading, QuotaWindow
from ladder.models.usage import RungSpend, UsageEvent
