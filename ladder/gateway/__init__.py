"""The gateway's JSON API: views, auth and error decorators, inputs, snapshot cache, schema.

Bodies are the Structs of ladder.contract.api. Imports selectors, services, domain, contract and
security; never the dashboard, the offline helpers or providers (STYLE.md, enforced by import-linter).
"""
