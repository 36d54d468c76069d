"""The htmx dashboard: views, the view model of each page they render (pages/), the connection chart,
wording.

Imports selectors, services, domain and security; never the gateway, the offline helpers or providers
(STYLE.md, enforced by import-linter).
"""
