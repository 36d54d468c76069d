"""CSP, login throttle, log redaction, credential crypto and the admin site.

Django, the standard library and cryptography only: never models, services, the gateway or the
dashboard (STYLE.md, enforced by import-linter). Settings name these modules by path (middleware,
logging filter, admin app), so this package imports nothing at load time.
"""
