"""The htmx dashboard: views, the view models they render, the connection chart, wording.

Imports selectors, services, domain and security; never the gateway, the offline helpers or providers
(STYLE.md, enforced by import-linter).
"""
