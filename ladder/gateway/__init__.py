"""The gateway's JSON API: views, auth and error decorators, inputs, snapshot cache, schema.

Imports selectors, services, domain and security; never the dashboard, the offline helpers or providers
(STYLE.md, enforced by import-linter).
"""
