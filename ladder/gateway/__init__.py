"""The gateway's JSON API. Views by concern: resolve (models, resolution, escalation log), reports
(usage, observations, failures), connections (and their credential), health (/healthz, /readyz),
schema (OpenAPI, unknown paths); with answers, auth and error decorators, inputs, snapshot cache.

Bodies are the Structs of ladder.contract.api. Imports selectors, services, domain, contract and
security; never models (no ORM query here), the dashboard, the offline helpers or providers
(STYLE.md, enforced by import-linter).
"""
