"""The htmx dashboard: views and the view models they render.

Imports selectors, services, domain and security; never the gateway, the offline helpers or providers
(STYLE.md, enforced by import-linter).
"""
