"""The routing law (DESIGN.md L1–L14): pure functions over frozen dataclasses.

No Django, no I/O, no clock: `now` is always an argument.
"""
# ruff: noqa: F401  (the law's public names, for the callers' `from ladder.domain import resolve`)

from ladder.domain.autoid import AutoId, AutoIdError, advertised_auto_ids, compose_auto_id, parse_auto_id
from ladder.domain.billing import classify_billing, normalise_auth_type
from ladder.domain.budgets import period_bounds, rung_budgets
from ladder.domain.config import build_config, config_errors
from ladder.domain.cooldown import (
    clamp_cooldown_to_reset,
    quota_backoff_s,
    quota_cooldown_until,
    transient_backoff_s,
    transient_cooldown_until,
)
from ladder.domain.render import resolution_to_dict
from ladder.domain.resolve import catalog_candidates, resolve
from ladder.domain.tiers import economic_tier, rung_for
from ladder.domain.types import (
    Candidate,
    CatalogEntry,
    Connection,
    Empty,
    Exclusion,
    LadderConfig,
    ModelEntry,
    PoolEntry,
    Reading,
    Reason,
    Resolution,
    Rung,
    Snapshot,
    Window,
)
from ladder.domain.windows import applicable_windows, is_fresh, is_usable, next_latch, scope_matches
