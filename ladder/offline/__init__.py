"""The state file (STATE.md) and the helpers of the offline commands (resolver, importer).

Never imported by the gateway or the dashboard (STYLE.md, enforced by import-linter).
"""
