"""The helpers of the offline commands (resolver, importer); the state file itself is ladder.contract.state.

Never imported by the gateway or the dashboard (STYLE.md, enforced by import-linter).
"""
